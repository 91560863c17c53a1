//! Unit tests of the parent module (kept in their own file so the module stays under
//! 1,000 lines).

use super::*;

#[test]
fn pool_evicts_least_recent_and_least_frequent() {
    let mut p = Pool::new(3);
    p.touch(1);
    p.touch(2);
    p.touch(3);
    p.touch(1); // 1: count 2
    p.touch(2); // 2: count 2
                // 3 has the lowest count: evicted.
    assert_eq!(p.touch(4), (Some(3), 1));
    // Now 4 (count 1, the oldest of count 1) is the smallest.
    assert_eq!(p.touch(5), (Some(4), 1));
    assert!(p.contains(1) && p.contains(2) && p.contains(5));
    assert_eq!(p.count(1), 2);
    assert!(p.remove(1) && !p.remove(1));
    assert_eq!(p.len(), 2);
}

#[test]
fn top_count_is_the_kth_highest() {
    let mut p = Pool::new(100);
    for lpn in 0..10u32 {
        for _ in 0..=lpn {
            p.touch(lpn);
        }
    }
    // counts 1..=10; top 20 % = 2 entries: counts 10 and 9.
    assert_eq!(p.top_count(0.2), 9);
    // No entry: one above the highest count.
    assert_eq!(p.top_count(0.0), 11);
    assert_eq!(Pool::new(4).top_count(0.2), 1);
    // All tied at count 1: nobody is in the top 20 %.
    let mut q = Pool::new(100);
    for lpn in 0..10u32 {
        q.touch(lpn);
    }
    assert_eq!(q.top_count(0.2), 2);
    // 2 entries at 5, 8 at 1: the two are exactly 20 %.
    q.touch(0);
    q.touch(0);
    q.touch(1);
    assert_eq!(q.top_count(0.2), 2);
}

/// The O(1) pool against a plain ordered-set model of its rule: evict the smallest
/// (count, last access), accesses numbered in order; top_count by brute force.
#[test]
fn pool_matches_an_ordered_set_model() {
    use rand::{Rng, SeedableRng};
    use std::collections::{BTreeSet, HashMap};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    for cap in [1usize, 3, 17, 64] {
        let mut p = Pool::new(cap);
        let mut entries: HashMap<u32, (u32, u64)> = HashMap::new();
        let mut order: BTreeSet<(u32, u64, u32)> = BTreeSet::new();
        for seq in 0..20_000u64 {
            let lpn = rng.gen_range(0..(cap as u32 * 3));
            if rng.gen_bool(0.1) {
                let want = entries
                    .remove(&lpn)
                    .map(|(c, t)| order.remove(&(c, t, lpn)));
                assert_eq!(p.remove(lpn), want.is_some());
                continue;
            }
            let want = if let Some(e) = entries.get_mut(&lpn) {
                order.remove(&(e.0, e.1, lpn));
                *e = (e.0 + 1, seq);
                order.insert((e.0, seq, lpn));
                (None, e.0)
            } else {
                let mut ev = None;
                if entries.len() >= cap {
                    let v = *order.iter().next().unwrap();
                    order.remove(&v);
                    entries.remove(&v.2);
                    ev = Some(v.2);
                }
                entries.insert(lpn, (1, seq));
                order.insert((1, seq, lpn));
                (ev, 1)
            };
            assert_eq!(p.touch(lpn), want, "cap {cap} step {seq}");
            if seq % 97 == 0 {
                let n = entries.len();
                let k = (n as f64 * 0.2).floor() as usize;
                // Whole groups of equal counts from the top while they fit in k; the
                // lowest count taken (one above the highest when none fits).
                let mut counts: Vec<u32> = entries.values().map(|e| e.0).collect();
                counts.sort_unstable_by(|a, b| b.cmp(a));
                let mut want_top = counts.first().map_or(1, |c| c + 1);
                let mut taken = 0;
                for (j, &c) in counts.iter().enumerate() {
                    if j > 0 && counts[j - 1] == c {
                        continue;
                    }
                    let same = counts.iter().filter(|&&x| x == c).count();
                    if taken + same > k {
                        break;
                    }
                    taken += same;
                    want_top = c;
                }
                assert_eq!(p.top_count(0.2), if n == 0 { 1 } else { want_top });
            }
        }
        assert_eq!(p.len(), entries.len());
    }
}

#[test]
fn reduced_cell_evicts_least_recently_accessed() {
    let mut c = ReducedCell::new(2);
    assert_eq!(c.insert(1), None);
    assert_eq!(c.insert(2), None);
    c.touch(1);
    assert_eq!(c.insert(3), Some(2));
    assert!(c.contains(1) && c.contains(3) && !c.contains(2));
    assert_eq!(ReducedCell::new(0).insert(9), None);
}

#[test]
fn overhead_rule_ge_and_gt() {
    let t = crate::config::load(
        include_str!("../../../../python/nandlab/configs/xia-diffecc.toml"),
        "x",
        &[],
    )
    .unwrap()
    .timing()
    .unwrap();
    let mut ge = FlexLevel::new(&toml::Table::new(), &t, 2).unwrap();
    ge.top_count = 5;
    // L_f 4 (count ≥ 5) × L_sensing 1 (1–2 levels) = 4 ≥ 4; L_f 3 × 1 = 3 < 4.
    assert!(ge.overhead_migrates(5, 1));
    assert!(!ge.overhead_migrates(4, 2));
    assert!(ge.overhead_migrates(1, 4)); // 3 × 2 = 6
    assert!(!ge.overhead_migrates(9, 0));
    let mut gt = FlexLevel::new(&"compare = \"gt\"".parse().unwrap(), &t, 2).unwrap();
    gt.top_count = 5;
    // Literal "exceeds": L_f no longer matters, only 4–6 levels migrate.
    assert!(!gt.overhead_migrates(5, 1));
    assert!(gt.overhead_migrates(1, 3));
    assert_eq!([0, 1, 2, 3, 6].map(l_sensing), [0, 1, 1, 2, 2]);
}
