//! Unit tests of the parent module (kept in their own file so the module stays under
//! 1,000 lines).

use super::*;

/// Writes of one page at t = 0, 1, 2, … (`n` of them), then a trace error.
struct Failing {
    n: u64,
    i: u64,
}

impl RequestSource for Failing {
    fn next_request(&mut self) -> Result<Option<HostRequest>, TraceError> {
        if self.i == self.n {
            return Err(TraceError::Io {
                file: "t.csv".into(),
                msg: "line 4: boom".into(),
            });
        }
        self.i += 1;
        Ok(Some(HostRequest {
            arrival_ns: self.i - 1,
            op: Op::Write,
            offset_bytes: (self.i - 1) * 4096,
            len_bytes: 4096,
        }))
    }
}

#[test]
fn a_trace_error_comes_where_it_would_without_read_ahead() {
    // Reading ahead (prefetch) must not move the error: it comes once every request
    // before it is processed, after the emissions due before the last of them.
    let cc = CacheConfig {
        size_bytes: 4096 * 16,
        ..Default::default()
    };
    let mut cs = CacheSource::new(Failing { n: 3, i: 0 }, &cc, 16, 4096, 1.0);
    let a = cs.next_request().unwrap().unwrap();
    let b = cs.next_request().unwrap().unwrap();
    assert_eq!((a.arrival_ns, b.arrival_ns), (0, 1));
    let e = cs.next_request().unwrap_err().to_string();
    assert!(e.contains("boom"), "{e}");
    assert_eq!(cs.counters.requests, 3);
}

#[test]
fn block_map_matches_a_hash_map() {
    // Slots holding blocks, as the cache does: random blocks replace random slots' blocks
    // (the old block's entry goes stale); a lookup that checks the slot's block must agree
    // with std's map of the live blocks. Small key space: long probe runs, stale entries
    // reused, rebuilds.
    let mut m = BlockMap::new();
    let mut blocks: Vec<u64> = Vec::new();
    let mut live: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    let lookup =
        |m: &BlockMap, b: &[u64], k: u64| m.get(k).filter(|&s| b.get(s as usize) == Some(&k));
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rebuilds = 0;
    for step in 0..200_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Keys clustered (sequential blocks) and spread (large block numbers).
        let k = if x & 1 == 0 {
            x % 3000
        } else {
            (x >> 8) % 3000 * 1_000_003
        };
        assert_eq!(lookup(&m, &blocks, k), live.get(&k).copied(), "step {step}");
        if live.contains_key(&k) {
            continue;
        }
        let s = if blocks.len() < 1000 {
            blocks.push(k);
            blocks.len() - 1
        } else {
            let s = ((x >> 20) % 1000) as usize;
            live.remove(&blocks[s]);
            s
        };
        blocks[s] = k;
        live.insert(k, s as u32);
        if m.insert(k, s as u32) {
            m.rebuild(blocks.iter().copied());
            rebuilds += 1;
        }
        if step % 97 == 0 {
            for (&k, &v) in &live {
                assert_eq!(lookup(&m, &blocks, k), Some(v), "step {step} key {k}");
            }
        }
    }
    assert!(rebuilds > 10, "{rebuilds}");
    // 1,000 slots: the table stays at 4,096 entries (4 per slot, a power of two).
    assert_eq!(m.entries.len(), 4096);
}
