//! The crate's file-level import graph has no cycle (issue 31).
//!
//! Every `.rs` file under `src/` is read as text (comments, strings and character literals
//! skipped) and every `use` item in it, at any depth, becomes an edge to the file it names:
//! `crate::…`, `super::…`, `self::…` and a child module's name, resolved to the longest module
//! path that has a file (so `use super::Foo` in `a/b.rs` is an edge to `a/mod.rs`, wherever
//! `Foo` is defined). Inline modules shift `super::` (a test module's `use super::*` names its
//! own file). A parent `mod.rs` declaring and re-exporting its own submodules is no edge: a
//! cycle is a file importing from another that imports back from it, or a longer loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`["trace", "parse"]`) → file (`trace/parse/mod.rs`) of every file under `dir`.
fn module_files(root: &Path, dir: &Path, out: &mut BTreeMap<Vec<String>, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            module_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            out.insert(parts, path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// Tokens of Rust source that matter here: identifiers, `::`, and single punctuation; comments,
/// strings and character literals are dropped (lifetimes are kept as identifiers).
fn tokens(src: &str) -> Vec<String> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' {
            if c.get(i + 1) == Some(&'\\') {
                // Escaped character literal: '\n', '\'', '\u{..}'.
                i += 3;
                while c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3; // 'x'
            } else {
                i += 1; // a lifetime's quote
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let s = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[s..i].iter().collect();
            let hashes = c[i..].iter().take_while(|&&h| h == '#').count();
            if (word == "r" || word == "br") && c.get(i + hashes) == Some(&'"') {
                // Raw string: r#"…"#.
                let mut j = i + hashes + 1;
                while !(c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#'))) {
                    j += 1;
                }
                i = j + 1 + hashes;
            } else {
                out.push(word);
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if !ch.is_whitespace() {
                out.push(ch.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The paths of a `use` tree (`a::{b, c::{d, e as f}}` → `a::b`, `a::c::d`, `a::c::e`).
fn use_paths(t: &[String], prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut i = 0;
    while i < t.len() {
        match t[i].as_str() {
            "::" => i += 1,
            "{" => {
                // Split the group at its top-level commas.
                let (mut depth, mut start) = (0, i + 1);
                for j in i + 1..t.len() {
                    match t[j].as_str() {
                        "{" => depth += 1,
                        "}" if depth == 0 => {
                            use_paths(&t[start..j], &path, out);
                            return;
                        }
                        "}" => depth -= 1,
                        "," if depth == 0 => {
                            use_paths(&t[start..j], &path, out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            "as" => break,
            "*" => break,
            s => {
                path.push(s.to_string());
                i += 1;
            }
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// File → the files it imports from (each with the first path that does).
fn import_graph(root: &Path) -> BTreeMap<PathBuf, BTreeMap<PathBuf, String>> {
    let mut files = BTreeMap::new();
    module_files(root, root, &mut files);
    let resolve = |segs: &[String]| -> Option<&PathBuf> {
        (0..=segs.len()).rev().find_map(|n| files.get(&segs[..n]))
    };
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let src = std::fs::read_to_string(root.join(file)).unwrap();
        let t = tokens(&src);
        let mut edges = BTreeMap::new();
        // Inline modules open at brace depth d: (name, d).
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < t.len() {
            match t[i].as_str() {
                "mod" if t.get(i + 2).map(String::as_str) == Some("{") => {
                    depth += 1;
                    inline.push((t[i + 1].clone(), depth));
                    i += 3;
                    continue;
                }
                "{" => depth += 1,
                "}" => {
                    if inline.last().is_some_and(|&(_, d)| d == depth) {
                        inline.pop();
                    }
                    depth -= 1;
                }
                "use" => {
                    let end = (i..t.len()).find(|&j| t[j] == ";").unwrap();
                    let mut paths = Vec::new();
                    use_paths(&t[i + 1..end], &[], &mut paths);
                    let here: Vec<String> = module
                        .iter()
                        .cloned()
                        .chain(inline.iter().map(|(n, _)| n.clone()))
                        .collect();
                    for p in paths {
                        let target: Vec<String> = match p[0].as_str() {
                            "crate" => p[1..].to_vec(),
                            "super" => {
                                let ups = p.iter().take_while(|s| *s == "super").count();
                                let mut base = here[..here.len().saturating_sub(ups)].to_vec();
                                base.extend_from_slice(&p[ups..]);
                                base
                            }
                            "self" => here.iter().chain(&p[1..]).cloned().collect(),
                            first => {
                                let mut child = here.clone();
                                child.push(first.to_string());
                                if !files.contains_key(&child) {
                                    continue; // an external crate or std
                                }
                                here.iter().chain(&p).cloned().collect()
                            }
                        };
                        let Some(to) = resolve(&target) else { continue };
                        let own_child = {
                            let m = files.iter().find(|(_, f)| *f == to).unwrap().0;
                            m.len() > module.len() && m[..module.len()] == module[..]
                        };
                        if to != file && !own_child {
                            edges.entry(to.clone()).or_insert_with(|| p.join("::"));
                        }
                    }
                    i = end;
                }
                _ => {}
            }
            i += 1;
        }
        graph.insert(file.clone(), edges);
    }
    graph
}

/// Every cycle of `graph` as one loop through a strongly connected component.
fn cycles(graph: &BTreeMap<PathBuf, BTreeMap<PathBuf, String>>) -> Vec<String> {
    let mut out = Vec::new();
    let mut reported: BTreeSet<PathBuf> = BTreeSet::new();
    for start in graph.keys() {
        if reported.contains(start) {
            continue;
        }
        // Depth-first search for a path from `start` back to itself.
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((node, path)) = stack.pop() {
            for next in graph[&node].keys() {
                if next == start {
                    let steps: Vec<String> = path
                        .windows(2)
                        .map(|w| format!("{} ({})", w[0].display(), graph[&w[0]][&w[1]]))
                        .chain(std::iter::once(format!(
                            "{} ({})",
                            node.display(),
                            graph[&node][next]
                        )))
                        .collect();
                    out.push(format!("{} -> back", steps.join(" -> ")));
                    reported.extend(path.iter().cloned());
                    stack.clear();
                    break;
                }
                if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    out
}

#[test]
fn the_crate_has_no_file_level_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = import_graph(&root);
    assert!(graph.len() > 100, "read only {} files", graph.len());
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "file-level import cycles:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_walker_finds_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "//! `use crate::b::X;` in a comment is no edge.\nmod c;\npub use c::Y;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/c.rs"),
        "use super::super::b::{self, X as Z};\nfn f() { let s = \"use crate::a;\"; }\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct X;\nfn g() { use crate::a::c::Y; }\n",
    )
    .unwrap();
    let graph = import_graph(src);
    // a/mod.rs → a/c.rs is its own child's re-export: no edge; the test module's `super::*`
    // names a/c.rs itself; the string holds no import.
    assert!(graph[Path::new("a/mod.rs")].is_empty(), "{graph:?}");
    let c: Vec<_> = graph[Path::new("a/c.rs")].keys().collect();
    assert_eq!(c, [Path::new("b.rs")]);
    let found = cycles(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("a/c.rs") && found[0].contains("b.rs"),
        "{found:?}"
    );
}
