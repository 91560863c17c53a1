//! The crash test's mixed workload: seeded random object commands over a set of objects —
//! CREATE, WRITE (page-aligned or not, one byte to eight pages), READ, SET/GET_ATTRIBUTE,
//! TRUNCATE, FLUSH and REMOVE (a removed object's slot is taken by a new id). Unlike DMMbench's
//! one file, many objects with small, partial and overlapping updates reach every mechanism
//! that writes flash: chunk GC of data, index and onodes, MLGC eviction, diff-cache eviction,
//! tail-buffer flushes and the onode write buffer, so a power cut can land in each (issue 30).
//!
//! Not from the thesis: a test workload of nandlab's. Command mix (per command on a live
//! object): 45 % WRITE, 20 % READ, 10 % SET_ATTRIBUTE, 10 % GET_ATTRIBUTE, 5 % TRUNCATE, 4 %
//! FLUSH, 6 % REMOVE; offsets uniform in the first 64 pages of an object.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::command::{OsdCommand, OsdOp};

/// `n` commands over `objects` object slots, sizes in units of `page` bytes, from `seed`
/// (object ids are `slot × 1,000,000 + generation`).
pub fn random_ops(seed: u64, n: usize, objects: u64, page: u64) -> Vec<OsdOp> {
    let objects = objects.max(1);
    let page = page.max(1);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut live = vec![false; objects as usize];
    let mut next_id = vec![0u64; objects as usize];
    let mut out = Vec::with_capacity(n);
    let id = |slot: u64, gen: u64| slot * 1_000_000 + gen;
    while out.len() < n {
        let slot = rng.gen_range(0..objects);
        let oid = id(slot, next_id[slot as usize]);
        if !live[slot as usize] {
            out.push(OsdOp::Create { oid });
            live[slot as usize] = true;
            continue;
        }
        let r = rng.gen_range(0..100);
        let off = rng.gen_range(0..64 * page);
        let len = if rng.gen_bool(0.5) {
            page * rng.gen_range(1..8)
        } else {
            rng.gen_range(1..3 * page)
        };
        out.push(match r {
            0..=44 => OsdOp::Write {
                oid,
                offset_bytes: if rng.gen_bool(0.5) {
                    off - off % page
                } else {
                    off
                },
                len_bytes: len,
            },
            45..=64 => OsdOp::Read {
                oid,
                offset_bytes: off,
                len_bytes: len,
            },
            65..=74 => OsdOp::SetAttr { oid },
            75..=84 => OsdOp::GetAttr { oid },
            85..=89 => OsdOp::Truncate {
                oid,
                size_bytes: rng.gen_range(0..32 * page),
            },
            90..=93 => OsdOp::Flush { oid },
            _ => {
                live[slot as usize] = false;
                next_id[slot as usize] += 1;
                OsdOp::Remove { oid }
            }
        });
    }
    out
}

/// [`random_ops`] as closed-loop commands (arrival 0, nothing preconditioned).
pub fn commands(seed: u64, n: usize, objects: u64, page: u64) -> Vec<OsdCommand> {
    random_ops(seed, n, objects, page)
        .into_iter()
        .map(|op| OsdCommand {
            arrival_ns: 0,
            op,
            precondition: false,
        })
        .collect()
}
