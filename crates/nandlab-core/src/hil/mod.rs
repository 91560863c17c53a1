//! Host interface layer: split a host request into page-sized sub-requests (an LPN range).
//!
//! A request covering any byte of a page covers the whole page: a partial-page write programs
//! the full page without reading the old data first (the controller's write buffer is assumed
//! to merge the rest), and a partial-page read senses the full page.

/// The LPN range `[first_lpn, first_lpn + pages)` a byte range covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageSpan {
    /// First logical page.
    pub first_lpn: u64,
    /// Pages covered (≥ 1 for a non-empty range).
    pub pages: u64,
}

/// Pages covered by `len_bytes` bytes at `offset_bytes` with `page_size_bytes` pages.
///
/// `len_bytes` must be > 0 (trace readers reject empty requests).
#[inline]
pub fn span(offset_bytes: u64, len_bytes: u64, page_size_bytes: u64) -> PageSpan {
    let first = offset_bytes / page_size_bytes;
    let last = (offset_bytes + len_bytes.max(1) - 1) / page_size_bytes;
    PageSpan {
        first_lpn: first,
        pages: last - first + 1,
    }
}

/// [`span`] for a page size fixed per run: a shift when it is a power of two.
#[derive(Clone, Copy, Debug)]
pub struct Pager {
    page_size_bytes: u64,
    shift: Option<u32>,
}

impl Pager {
    /// Pages of `page_size_bytes` (> 0).
    pub fn new(page_size_bytes: u64) -> Pager {
        Pager {
            page_size_bytes,
            shift: page_size_bytes
                .is_power_of_two()
                .then(|| page_size_bytes.trailing_zeros()),
        }
    }

    /// Same as [`span`]`(offset_bytes, len_bytes, page_size_bytes)`.
    #[inline]
    pub fn span(&self, offset_bytes: u64, len_bytes: u64) -> PageSpan {
        match self.shift {
            Some(s) => {
                let first = offset_bytes >> s;
                let last = (offset_bytes + len_bytes.max(1) - 1) >> s;
                PageSpan {
                    first_lpn: first,
                    pages: last - first + 1,
                }
            }
            None => span(offset_bytes, len_bytes, self.page_size_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pager_matches_span() {
        for ps in [4096u64, 8192, 3 * 4096, 512] {
            let p = Pager::new(ps);
            for (o, l) in [
                (0, 1),
                (8191, 2),
                (4096, 8192),
                (123_456_789, 65_536),
                (1, 1),
            ] {
                assert_eq!(p.span(o, l), span(o, l, ps));
            }
        }
    }

    #[test]
    fn spans() {
        // (offset, length, first LPN, pages) with 8 KiB pages.
        for (offset, len, first_lpn, pages) in [
            (0, 8192, 0, 1),
            (4096, 8192, 0, 2),
            (8192, 1, 1, 1),
            (8191, 2, 0, 2),
            (3 * 8192, 64 * 1024, 3, 8),
        ] {
            assert_eq!(span(offset, len, 8192), PageSpan { first_lpn, pages });
        }
    }
}
