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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        assert_eq!(
            span(0, 8192, 8192),
            PageSpan {
                first_lpn: 0,
                pages: 1
            }
        );
        assert_eq!(
            span(4096, 8192, 8192),
            PageSpan {
                first_lpn: 0,
                pages: 2
            }
        );
        assert_eq!(
            span(8192, 1, 8192),
            PageSpan {
                first_lpn: 1,
                pages: 1
            }
        );
        assert_eq!(
            span(8191, 2, 8192),
            PageSpan {
                first_lpn: 0,
                pages: 2
            }
        );
        assert_eq!(
            span(3 * 8192, 64 * 1024, 8192),
            PageSpan {
                first_lpn: 3,
                pages: 8
            }
        );
    }
}
