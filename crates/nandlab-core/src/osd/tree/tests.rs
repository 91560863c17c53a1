//! Unit tests of the extent B+ tree (moved verbatim from `tree.rs`, which had reached 1,001
//! lines): node invariants under inserts and removals, extents against a reference page map.

use super::*;

fn check(t: &Nodes, root: u32) {
    let mut all = Vec::new();
    t.all_nodes(root, &mut all);
    for &id in &all {
        let n = &t.nodes[id as usize];
        assert!(!n.free);
        assert!(n.keys.windows(2).all(|w| w[0] < w[1]));
        if n.level > 0 {
            for (k, &c) in n.keys.iter().zip(&n.vals) {
                let ch = &t.nodes[c as usize];
                assert_eq!(ch.parent, id);
                assert_eq!(ch.level + 1, n.level);
                assert!(ch.keys.first().is_none_or(|f| f >= k));
            }
        }
    }
}

#[test]
fn inserts_and_removes_keep_the_tree_sound() {
    let mut t = Nodes::new(4, 4);
    let mut root = t.alloc(0, 0);
    let mut ch = Change::default();
    let keys: Vec<u64> = (0..500).map(|i| (i * 7919) % 1000).collect();
    for &k in &keys {
        t.upsert(&mut root, k, k + 1, &mut ch);
    }
    check(&t, root);
    assert!(t.height(root) >= 4);
    for &k in &keys {
        assert_eq!(t.get(root, k), Some(k + 1));
    }
    for &k in keys.iter().take(450) {
        assert_eq!(t.remove(&mut root, k, &mut ch), Some(k + 1));
    }
    check(&t, root);
    for &k in keys.iter().skip(450) {
        assert_eq!(t.get(root, k), Some(k + 1));
    }
    let mut e = Vec::new();
    t.entries(root, &mut e);
    assert_eq!(e.len(), 50);
    assert!(ch.merges > 0 && ch.splits > 0);
}

/// Pages numbered within one address space: page `j` of an extent at `pa` is `pa + j`.
struct Flat;
impl Geo for Flat {
    fn addr(&self, ppn: u32) -> u32 {
        ppn
    }
    fn next(&self, a: u32, j: u64) -> Option<u32> {
        Some(a + j as u32)
    }
    fn ppn(&self, a: u32) -> Option<u32> {
        Some(a)
    }
}

fn pages_of(t: &Nodes, root: u32) -> Vec<(u64, u64)> {
    let mut e = Vec::new();
    t.entries(root, &mut e);
    let mut out = Vec::new();
    for (k, v) in e {
        let (pa, len) = leaf_parts(v);
        let n = ext_pages(len, t.page_bytes);
        for j in 0..n {
            out.push((
                k + j,
                leaf_val(pa + j as u32, ext_page_len(len, j, n, t.page_bytes)),
            ));
        }
    }
    out
}

#[test]
fn extents_merge_split_and_match_a_page_map() {
    let mut t = Nodes::new(6, 4);
    t.page_bytes = 100;
    let mut root = t.alloc(0, 0);
    let mut ch = Change::default();
    // Sequential pages at consecutive PAs: one extent.
    for k in 0..50u64 {
        assert_eq!(
            t.set_page(&mut root, k, leaf_val(1000 + k as u32, 100), &Flat, &mut ch),
            None
        );
    }
    let mut e = Vec::new();
    t.entries(root, &mut e);
    assert_eq!(e, vec![(0, leaf_val(1000, 5000))]);
    // A reference page map under random updates, removals and short pages.
    let mut want: std::collections::BTreeMap<u64, u64> = (0..50)
        .map(|k| (k, leaf_val(1000 + k as u32, 100)))
        .collect();
    let mut x = 12345u64;
    let mut next_pa = 5000u32;
    for step in 0..4000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = (x >> 33) % 300;
        if step % 7 == 3 {
            let got = t.remove_page(&mut root, k, &Flat, &mut ch);
            assert_eq!(got, want.remove(&k), "remove {k}");
        } else {
            // Runs of sequential PAs, sometimes broken.
            if (x >> 20).is_multiple_of(5) {
                next_pa += 7;
            }
            let len = if (x >> 40).is_multiple_of(9) { 37 } else { 100 };
            let v = leaf_val(next_pa, len);
            next_pa += 1;
            let got = t.set_page(&mut root, k, v, &Flat, &mut ch);
            assert_eq!(got, want.insert(k, v), "set {k}");
        }
        if step % 500 == 0 {
            check(&t, root);
            assert_eq!(
                pages_of(&t, root),
                want.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>()
            );
            for k in 0..300 {
                assert_eq!(t.get_page(root, k, &Flat), want.get(&k).copied());
            }
        }
    }
    check(&t, root);
    assert_eq!(
        pages_of(&t, root),
        want.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>()
    );
    // Sequential rewrites merge again.
    for k in 0..300u64 {
        t.set_page(
            &mut root,
            k,
            leaf_val(90_000 + k as u32, 100),
            &Flat,
            &mut ch,
        );
    }
    t.entries(root, &mut e);
    // Extents join within a leaf (never across a separator), and a page set never
    // merges leaves: one extent per leaf.
    let mut all = Vec::new();
    t.all_nodes(root, &mut all);
    let leaves = all
        .iter()
        .filter(|&&id| t.nodes[id as usize].level == 0)
        .count();
    assert_eq!(e.len(), leaves, "{} extents in {leaves} leaves", e.len());
    check(&t, root);
    assert_eq!(pages_of(&t, root).len(), 300);
}
