//! Large tables without aborting: every table sized from the device or the trace is allocated
//! with [`zeroed`], which returns an error naming the table and its size when the allocator
//! refuses (an address-space limit, an exhausted machine) instead of aborting the process with
//! `memory allocation of N bytes failed`. [`check_budget`] refuses a model before any table is
//! allocated when the sum of its tables exceeds what this process may use.
//!
//! Zeroed tables come from the allocator's zeroed allocation (calloc), so the OS maps their
//! pages only when they are first written: a table of a large device costs memory in proportion
//! to the part the run writes.

/// A table could not be allocated.
#[derive(Debug, thiserror::Error)]
#[error("cannot allocate {} for {what} (the allocator refused: machine memory or an address-space limit)", crate::config::human_bytes(*bytes))]
pub struct AllocError {
    /// The table.
    pub what: &'static str,
    /// Bytes asked for.
    pub bytes: u64,
}

/// A vector of `n` zero values (calloc), or [`AllocError`] naming `what`.
pub fn zeroed<T: bytemuck::Zeroable>(n: usize, what: &'static str) -> Result<Vec<T>, AllocError> {
    bytemuck::allocation::try_zeroed_vec::<T>(n).map_err(|()| AllocError {
        what,
        bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })
}

/// A vector of `n` copies of `v`, or [`AllocError`] naming `what`.
pub fn filled<T: Clone>(n: usize, v: T, what: &'static str) -> Result<Vec<T>, AllocError> {
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| AllocError {
        what,
        bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    out.resize(n, v);
    Ok(out)
}

/// The memory this process may still use for a model, bytes: half of the machine's memory
/// (Linux `MemTotal`), and no more than what an address-space limit (`ulimit -v`,
/// RLIMIT_AS) leaves above the current virtual size. `None` where neither is known.
pub fn budget_bytes() -> Option<u64> {
    let total = read_kib("/proc/meminfo", "MemTotal:").map(|k| k * 1024 / 2);
    let limit = address_space_left();
    match (total, limit) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// RLIMIT_AS minus the current virtual size, from `/proc/self/limits` and `/proc/self/status`;
/// `None` when unlimited or unknown.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft = line.split_whitespace().nth(3)?;
    let limit: u64 = soft.parse().ok()?; // "unlimited" does not parse
    let vm = read_kib("/proc/self/status", "VmSize:").unwrap_or(0) * 1024;
    Some(limit.saturating_sub(vm))
}

fn read_kib(path: &str, key: &str) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `Err(message)` when `need_bytes` exceeds [`budget_bytes`]; the message gives both sizes.
pub fn check_budget(need_bytes: u64) -> Result<(), String> {
    match budget_bytes() {
        Some(b) if need_bytes > b => Err(format!(
            "its tables take {}, more than the {} this process may use (half of the machine's \
             memory, within any address-space limit)",
            crate::config::human_bytes(need_bytes),
            crate::config::human_bytes(b)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_table_is_an_error_not_an_abort() {
        let e = zeroed::<u64>(usize::MAX / 4, "a test table").unwrap_err();
        assert!(e.to_string().contains("a test table"), "{e}");
        let e = filled::<u32>(usize::MAX / 8, 7, "another").unwrap_err();
        assert_eq!(e.what, "another");
        assert_eq!(zeroed::<u32>(3, "x").unwrap(), vec![0, 0, 0]);
    }
}

/// An intrusive doubly linked recency list over slots `0..n` (head = most recently used),
/// allocated once: the DRAM data cache's clean entries ([`crate::engine`]'s `dram.rs`) and the
/// cached mapping table's entries ([`crate::ftl::cmt`]). No allocation per operation.
#[derive(Clone, Debug)]
pub struct LruList {
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
}

/// No slot (an end of the list).
const NIL: u32 = u32::MAX;

impl LruList {
    /// An empty list over `n` slots, or [`AllocError`] naming `what`.
    pub fn new(n: usize, what: &'static str) -> Result<LruList, AllocError> {
        Ok(LruList {
            prev: filled(n, NIL, what)?,
            next: filled(n, NIL, what)?,
            head: NIL,
            tail: NIL,
        })
    }

    /// The most recently used slot (`u32::MAX` when empty).
    #[inline]
    pub fn head(&self) -> u32 {
        self.head
    }

    /// The least recently used slot (`u32::MAX` when empty).
    #[inline]
    pub fn tail(&self) -> u32 {
        self.tail
    }

    /// Take slot `s` (in the list) out of it.
    pub fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[s as usize] = NIL;
        self.next[s as usize] = NIL;
    }

    /// Put slot `s` (not in the list) at its head.
    pub fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NIL;
        self.next[s as usize] = self.head;
        if self.head != NIL {
            self.prev[self.head as usize] = s;
        }
        self.head = s;
        if self.tail == NIL {
            self.tail = s;
        }
    }

    /// Move slot `s` (in the list) to its head.
    #[inline]
    pub fn move_to_front(&mut self, s: u32) {
        if self.head != s {
            self.unlink(s);
            self.push_front(s);
        }
    }
}

#[cfg(test)]
mod lru_tests {
    use super::LruList;

    /// Walk the list from its head, checking every back link on the way.
    fn order(l: &LruList) -> Vec<u32> {
        let mut out = Vec::new();
        let mut s = l.head();
        let mut prev = u32::MAX;
        while s != u32::MAX {
            assert_eq!(l.prev[s as usize], prev, "slot {s}'s back link");
            out.push(s);
            prev = s;
            s = l.next[s as usize];
        }
        assert_eq!(l.tail(), prev, "tail");
        out
    }

    #[test]
    fn lru_list_keeps_recency_order() {
        let mut l = LruList::new(4, "test").unwrap();
        assert_eq!(order(&l), Vec::<u32>::new());
        for s in 0..4 {
            l.push_front(s);
        }
        assert_eq!(order(&l), vec![3, 2, 1, 0]);
        l.move_to_front(0);
        assert_eq!(order(&l), vec![0, 3, 2, 1]);
        l.move_to_front(0);
        assert_eq!(order(&l), vec![0, 3, 2, 1]);
        l.unlink(2);
        assert_eq!(order(&l), vec![0, 3, 1]);
        l.unlink(1);
        l.unlink(0);
        assert_eq!(order(&l), vec![3]);
        l.unlink(3);
        assert_eq!(order(&l), Vec::<u32>::new());
        l.push_front(2);
        assert_eq!(order(&l), vec![2]);
    }
}
