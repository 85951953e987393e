//! Large buffers that fault in 2 MiB pages at a time.
//!
//! Fresh memory costs a page fault per 4 KiB page on first touch, and on a virtual machine a
//! fault costs microseconds: filling a 16 MiB buffer this way spends more time in the kernel
//! than in the loop that writes it. Linux can back a range with transparent huge pages when it
//! is asked to (`madvise(MADV_HUGEPAGE)`, honoured when THP is "always" or "madvise"), which is
//! what numpy does for its own large arrays. Elsewhere these are plain `Vec`s.

/// Buffers smaller than this are left alone (a huge page would mostly be waste).
const THRESHOLD: usize = 4 << 20;

/// An empty `Vec` with room for `capacity` items, marked for huge pages when it is large.
pub fn vec_with_capacity<T>(capacity: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(capacity);
    #[cfg(target_os = "linux")]
    advise_huge_pages(v.as_ptr() as usize, v.capacity() * std::mem::size_of::<T>());
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: usize, bytes: usize) {
    const HUGE: usize = 2 << 20;
    if bytes < THRESHOLD {
        return;
    }
    let aligned = start.next_multiple_of(HUGE);
    let end = (start + bytes) / HUGE * HUGE;
    if end > aligned {
        // SAFETY: the range lies inside an allocation the caller owns and has not touched;
        // madvise only gives the kernel a hint about it, and its failure is harmless.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                end - aligned,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    // Miri cannot call madvise (a foreign function), which this 8 MiB buffer is given to.
    #[cfg_attr(miri, ignore)]
    fn a_large_buffer_is_an_ordinary_vec() {
        let mut v: Vec<u64> = super::vec_with_capacity(1 << 20);
        assert!(v.capacity() >= 1 << 20 && v.is_empty());
        v.extend(0..1 << 20);
        assert_eq!(v.iter().sum::<u64>(), (1u64 << 20) * ((1 << 20) - 1) / 2);
        let small: Vec<u8> = super::vec_with_capacity(10);
        assert!(small.capacity() >= 10);
    }
}
