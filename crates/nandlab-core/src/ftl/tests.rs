//! Unit and property tests of the FTL.

use super::*;
use crate::flash::CellType;
use proptest::prelude::*;

fn small(policy: VictimPolicy) -> Ftl {
    let geo = Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 1,
        blocks_per_plane: 12,
        pages_per_block: 8,
        page_size_bytes: 4096,
        cell: CellType::Mlc,
    };
    Ftl::new(geo, 120, 2, Allocation::Static, policy, 10.0)
}

/// Untimed write of `lpn` with GC, as preconditioning does it: while its plane needs GC, the
/// victim's valid pages are relocated (`relocate(f, plane)` allocates each one's new page)
/// and the victim erased; then the host page is programmed. Shared by [`write`] and
/// [`write_typed`].
fn write_with_gc(f: &mut Ftl, lpn: u32, mut relocate: impl FnMut(&mut Ftl, u32) -> u32) {
    let plane = f.plane_for_write(lpn);
    let mut buf = Vec::new();
    while f.needs_gc(plane) {
        let v = f.select_victim(plane, 0).expect("victim");
        buf.clear();
        f.valid_pages(v, &mut buf);
        for &src in &buf {
            let l = f.page_lpn(src);
            let dst = relocate(f, plane);
            f.program(dst, l, 0, 0, 0);
        }
        f.erase(v);
    }
    let ppn = f.allocate(plane, 0, true, 0).expect("host space");
    f.program(ppn, lpn, 0, 0, 0);
}

/// Untimed write with GC, as preconditioning does it.
fn write(f: &mut Ftl, lpn: u32, moves: &mut u64) {
    write_with_gc(f, lpn, |f, plane| {
        *moves += 1;
        f.allocate(plane, 1, false, 0).expect("gc space")
    });
}

fn small_super(policy: VictimPolicy, unit: u32) -> Ftl {
    let geo = Geometry {
        channels: 2,
        chips_per_channel: 1,
        dies_per_chip: 1,
        planes_per_die: 4,
        blocks_per_plane: 12,
        pages_per_block: 6,
        page_size_bytes: 4096,
        cell: CellType::Tlc,
    };
    let mut f = Ftl::new(geo, 300, 2, Allocation::Superpage, policy, 10.0);
    f.set_superpage_unit(unit);
    f
}

/// Untimed write with GC of whole superblocks.
fn write_super(f: &mut Ftl, lpn: u32, moves: &mut u64) {
    let plane = f.plane_for_write(lpn);
    let pool = f.pool(plane, 0);
    let mut buf = Vec::new();
    while f.needs_gc(pool) {
        let v = f.select_victim(pool, 0).expect("victim");
        buf.clear();
        f.victim_valid_pages(v, &mut buf);
        assert_eq!(buf.len() as u32, f.victim_valid(v));
        for &src in &buf {
            let (dst, _) = f
                .allocate_typed(plane, 0, 1, false, 0, None)
                .expect("gc space");
            f.relocate(src, dst, 0, 0, 0);
            *moves += 1;
        }
        assert_eq!(f.erase_victim(v), 4);
    }
    let (ppn, _) = f
        .allocate_typed(plane, 0, 0, true, 0, None)
        .expect("host space");
    f.program(ppn, lpn, 0, 0, 0);
}

#[test]
fn superpages_fill_every_plane_of_a_die_at_the_same_offset() {
    let mut f = small_super(VictimPolicy::Greedy, 3);
    assert_eq!(f.pools(), 2);
    assert_eq!(f.superpage_pages(), 12);
    let pool = 0;
    assert_eq!(f.superpage_room(pool, 0, true), 12);
    let bpp = 12;
    let mut got = Vec::new();
    for lpn in 0..12 {
        let (ppn, _) = f.allocate_typed(0, 0, 0, true, 0, None).unwrap();
        f.program(ppn, lpn, 0, 0, 0);
        got.push((
            f.plane_of_ppn(ppn),
            f.page_index(ppn),
            f.block_of(ppn) % bpp,
        ));
        if got.len() == 5 {
            assert_eq!(f.superpage_room(pool, 0, true), 7);
        }
    }
    // Plane by plane, a word line's three pages each, all in the superblock's blocks.
    let want: Vec<(u32, u32, u32)> = (0..4)
        .flat_map(|p| (0..3).map(move |i| (p, i, 0)))
        .collect();
    assert_eq!(got, want);
    assert_eq!(f.superpage_room(pool, 0, true), 12);
    // Padding completes a super-page with invalid pages.
    let (ppn, _) = f.allocate_typed(0, 0, 0, true, 0, None).unwrap();
    f.program(ppn, 12, 0, 0, 0);
    for _ in 0..11 {
        let (ppn, _) = f.allocate_pad(pool, 0, 0).unwrap();
        assert_eq!(f.page_state(ppn), PageState::Invalid);
    }
    assert_eq!(f.check_invariants(), Ok(()));
}

/// Any of the GC victim policies.
fn any_policy() -> impl Strategy<Value = VictimPolicy> {
    prop_oneof![
        Just(VictimPolicy::Greedy),
        Just(VictimPolicy::Fifo),
        Just(VictimPolicy::CostBenefit)
    ]
}

/// Write `lpns` into `f` with `write`, checking the invariants every 97 writes and at the end,
/// and that every distinct LPN is mapped.
fn check_random_writes(
    f: &mut Ftl,
    lpns: &[u32],
    write: fn(&mut Ftl, u32, &mut u64),
) -> Result<(), TestCaseError> {
    let mut moves = 0;
    for (i, &l) in lpns.iter().enumerate() {
        write(f, l, &mut moves);
        if i % 97 == 0 {
            prop_assert_eq!(f.check_invariants(), Ok(()));
        }
    }
    prop_assert_eq!(f.check_invariants(), Ok(()));
    let distinct: std::collections::HashSet<_> = lpns.iter().collect();
    prop_assert_eq!(f.mapped_pages(), distinct.len() as u64);
    Ok(())
}

proptest! {
    #[test]
    fn superpage_invariants_hold_under_random_writes(
        lpns in proptest::collection::vec(0u32..300, 1..3000),
        unit in prop_oneof![Just(1u32), Just(3u32)],
        policy in any_policy(),
    ) {
        check_random_writes(&mut small_super(policy, unit), &lpns, write_super)?;
    }

    #[test]
    fn invariants_hold_under_random_writes(
        lpns in proptest::collection::vec(0u32..120, 1..2000),
        policy in any_policy(),
    ) {
        check_random_writes(&mut small(policy), &lpns, write)?;
    }
}

/// GC relocation with page-type preferences drawn from `prefs` (None = page order).
fn write_typed(f: &mut Ftl, lpn: u32, prefs: &mut impl Iterator<Item = Option<PageType>>) {
    write_with_gc(f, lpn, |f, plane| {
        let want = prefs.next().flatten();
        let slot = (f.pool(plane, 0) * f.streams + 1) as usize;
        let b = f.open[slot];
        // Does the open block (if any) still have a free page of the wanted type?
        let has = |f: &Ftl, t: PageType| {
            b != NONE
                && (0..f.geo.pages_per_block).any(|i| {
                    f.layout.page_type[i as usize] == t
                        && f.page_state(b * f.geo.pages_per_block + i) == PageState::Free
                })
        };
        let had = want.map(|t| has(f, t));
        let (dst, _) = f
            .allocate_typed(plane, 0, 1, false, 0, want)
            .expect("gc space");
        if let (Some(t), Some(true)) = (want, had) {
            assert_eq!(f.page_type(dst), t, "preferred type not given");
        }
        dst
    });
}

proptest! {
    /// Page-type-aware allocation: a preferred type is given whenever the open block has a
    /// free page of it, and the invariants hold for blocks filled out of page order (TLC,
    /// both page orders).
    #[test]
    fn typed_allocation_keeps_invariants(
        lpns in proptest::collection::vec(0u32..96, 1..1500),
        prefs in proptest::collection::vec(0u8..5, 1..64),
        staggered in any::<bool>(),
    ) {
        let geo = Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 12,
            pages_per_block: 12,
            page_size_bytes: 4096,
            cell: CellType::Tlc,
        };
        let mut f = Ftl::new(geo, 96, 2, Allocation::Static, VictimPolicy::Greedy, 10.0);
        let order = if staggered { PageOrder::Staggered } else { PageOrder::Sequential };
        f.set_layout(BlockLayout::new(12, 3, order));
        let mut it = prefs
            .iter()
            .map(|&p| [None, Some(PageType::Lsb), Some(PageType::Csb), Some(PageType::Msb), None][p as usize])
            .cycle();
        for (i, &l) in lpns.iter().enumerate() {
            write_typed(&mut f, l, &mut it);
            if i % 53 == 0 {
                prop_assert_eq!(f.check_invariants(), Ok(()));
            }
        }
        prop_assert_eq!(f.check_invariants(), Ok(()));
    }
}

/// Without preferences, typed allocation fills a block in page order (as `allocate_in`).
#[test]
fn untyped_allocation_is_page_order_in_both_layouts() {
    for order in [PageOrder::Sequential, PageOrder::Staggered] {
        let geo = Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 12,
            page_size_bytes: 4096,
            cell: CellType::Tlc,
        };
        let mut f = Ftl::new(geo, 24, 1, Allocation::Static, VictimPolicy::Greedy, 10.0);
        f.set_layout(BlockLayout::new(12, 3, order));
        // One preference first switches the block to typed allocation; the rest follow
        // page order among the free pages.
        let (first, _) = f
            .allocate_typed(0, 0, 0, false, 0, Some(PageType::Msb))
            .unwrap();
        assert_eq!(f.page_type(first), PageType::Msb);
        let mut got = vec![first];
        for _ in 1..12 {
            got.push(f.allocate_typed(0, 0, 0, false, 0, None).unwrap().0);
        }
        let mut rest: Vec<u32> = (0..12).filter(|&p| p != first).collect();
        rest.sort();
        assert_eq!(&got[1..], &rest[..], "{order:?}");
    }
}

#[test]
fn greedy_picks_fewest_valid() {
    let mut f = small(VictimPolicy::Greedy);
    let mut m = 0;
    // Fill plane 0 (even LPNs) with 3 blocks' worth, then invalidate most of block 2.
    for l in (0..48).step_by(2) {
        write(&mut f, l, &mut m);
    }
    for l in (32..46).step_by(2) {
        write(&mut f, l, &mut m);
    }
    let v = f.select_victim(0, 0).unwrap();
    assert_eq!(f.block_valid(v), 1);
}

#[test]
fn host_cannot_take_reserve() {
    let mut f = small(VictimPolicy::Greedy);
    // Open host blocks until only the reserve remains in plane 0.
    let mut n = 0;
    while f.allocate(0, 0, true, 0).is_ok() {
        n += 1;
    }
    assert_eq!(f.free_blocks(0), HOST_RESERVE_BLOCKS);
    assert_eq!(n, (12 - HOST_RESERVE_BLOCKS) * 8);
    assert!(f.allocate(0, 1, false, 0).is_ok());
}
