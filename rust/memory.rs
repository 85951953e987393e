//! Large buffers that fault in 2 MiB pages at a time.
//!
//! Fresh memory costs a page fault per 4 KiB page on first touch, and on a virtual machine a
//! fault costs microseconds: filling a 16 MiB buffer this way spends more time in the kernel
//! than in the loop that writes it. Linux can back a range with transparent huge pages when it
//! is asked to (`madvise(MADV_HUGEPAGE)`, honoured when THP is "always" or "madvise"), which is
//! what numpy does for its own large arrays. Elsewhere these are plain `Vec`s.
//!
//! Even in huge pages, fresh memory is zeroed by the kernel, and freeing a large block hands it
//! back to the system (glibc unmaps or trims it), so that every call of a batched function paid
//! again for the same tens of megabytes: on workload A of `benches/bench_methods.py` a fifth of
//! `rrf_batch`'s time. A [`Buffer`] is a `Vec` that, when dropped, is kept on a shelf for the
//! next call instead (at most [`keep_limit`] bytes in all, `RANKFUSION_KEEP_MB`, 256 MiB by
//! default, half of it for ids and half for scores; 0 keeps none), and
//! [`Buffer::with_capacity`] takes the smallest kept one that is large enough.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, OnceLock};

/// Buffers smaller than this are left alone (a huge page would mostly be waste).
const THRESHOLD: usize = 4 << 20;

/// Buffers smaller than this are not kept (the allocator reuses small blocks itself).
const KEEP_MIN: usize = 64 << 10;

/// The most bytes of [`Buffer`]s kept between calls, on all shelves together:
/// `RANKFUSION_KEEP_MB` megabytes when it is set to a whole number (0: none), else 256 MiB. Read
/// once. Each of the [`SHELVES`] holds at most its share.
fn keep_limit() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("RANKFUSION_KEEP_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or(256 << 20, |mb| mb.saturating_mul(1 << 20))
    })
}

/// The shelves of the library's buffers: ids (i64) and scores (f64).
const SHELVES: usize = 2;

/// The buffers of one item type kept for reuse, oldest first.
pub struct Shelf<T> {
    buffers: Vec<Vec<T>>,
    bytes: usize,
}

impl<T> Shelf<T> {
    const fn new() -> Self {
        Shelf {
            buffers: Vec::new(),
            bytes: 0,
        }
    }

    /// The smallest kept buffer with room for `capacity` items, emptied.
    fn take(&mut self, capacity: usize) -> Option<Vec<T>> {
        let (i, _) = self
            .buffers
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= capacity)
            .min_by_key(|(_, b)| b.capacity())?;
        let mut v = self.buffers.remove(i);
        self.bytes -= v.capacity() * std::mem::size_of::<T>();
        v.clear();
        Some(v)
    }

    /// Keeps `v` (of at most `limit` bytes), the oldest buffers making room: returns them, to be
    /// freed once the shelf is unlocked.
    fn put(&mut self, v: Vec<T>, limit: usize) -> Vec<Vec<T>> {
        let bytes = v.capacity() * std::mem::size_of::<T>();
        let mut evicted = Vec::new();
        while self.bytes + bytes > limit && !self.buffers.is_empty() {
            let old = self.buffers.remove(0);
            self.bytes -= old.capacity() * std::mem::size_of::<T>();
            evicted.push(old);
        }
        self.bytes += bytes;
        self.buffers.push(v);
        evicted
    }
}

/// An item type whose large buffers are kept between calls, on its own shelf.
pub trait Kept: Copy + Send + 'static {
    fn shelf() -> &'static Mutex<Shelf<Self>>;
}

impl Kept for i64 {
    fn shelf() -> &'static Mutex<Shelf<Self>> {
        static SHELF: Mutex<Shelf<i64>> = Mutex::new(Shelf::new());
        &SHELF
    }
}

impl Kept for f64 {
    fn shelf() -> &'static Mutex<Shelf<Self>> {
        static SHELF: Mutex<Shelf<f64>> = Mutex::new(Shelf::new());
        &SHELF
    }
}

/// A `Vec` whose memory, when it is dropped, is kept for the next [`Buffer::with_capacity`]
/// (see the module's documentation). The shelf is only ever `try_lock`ed: a buffer that finds it
/// busy (or poisoned, or locked forever in a forked child) is allocated, or freed, as usual.
#[derive(Default)]
pub struct Buffer<T: Kept>(Vec<T>);

impl<T: Kept> Buffer<T> {
    /// An empty buffer with room for `capacity` items: a kept one when one is large enough (the
    /// smallest such), else new (marked for huge pages when large, as [`vec_with_capacity`]).
    pub fn with_capacity(capacity: usize) -> Self {
        let bytes = capacity.saturating_mul(std::mem::size_of::<T>());
        if bytes >= KEEP_MIN {
            let kept = T::shelf()
                .try_lock()
                .ok()
                .and_then(|mut s| s.take(capacity));
            if let Some(v) = kept {
                return Buffer(v);
            }
        }
        Buffer(vec_with_capacity(capacity))
    }
}

impl<T: Kept> Deref for Buffer<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T: Kept> DerefMut for Buffer<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<T: Kept> Drop for Buffer<T> {
    /// Puts the memory on the shelf, the oldest buffers making room (freed after the shelf is
    /// unlocked); a buffer larger than the shelf's share of the limit, or small, is freed.
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        let bytes = v.capacity() * std::mem::size_of::<T>();
        let limit = keep_limit() / SHELVES;
        if bytes < KEEP_MIN || bytes > limit {
            return;
        }
        let Ok(mut shelf) = T::shelf().try_lock() else {
            return; // busy: `v` is freed
        };
        let evicted = shelf.put(v, limit);
        drop(shelf);
        drop(evicted); // freed with the shelf unlocked
    }
}

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
    use super::{Buffer, Kept, Shelf, KEEP_MIN};
    use std::sync::Mutex;

    /// An item type of this test alone (so no other test touches its shelf).
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Item(u64);

    impl Kept for Item {
        fn shelf() -> &'static Mutex<Shelf<Self>> {
            static SHELF: Mutex<Shelf<Item>> = Mutex::new(Shelf::new());
            &SHELF
        }
    }

    #[test]
    fn a_dropped_buffer_is_taken_again_empty_and_the_smallest_fitting_first() {
        let n = KEEP_MIN / 8 * 3;
        let mut big: Buffer<Item> = Buffer::with_capacity(2 * n);
        big.extend((0..2 * n as u64).map(Item));
        let mut small: Buffer<Item> = Buffer::with_capacity(n);
        small.push(Item(1));
        let (big_at, small_at) = (big.as_ptr(), small.as_ptr());
        drop(big);
        drop(small);
        assert_eq!(Item::shelf().lock().unwrap().bytes, 3 * n * 8);
        let again: Buffer<Item> = Buffer::with_capacity(n - 1);
        assert!(again.is_empty() && again.capacity() >= n - 1);
        assert_eq!(again.as_ptr(), small_at);
        let mut other: Buffer<Item> = Buffer::with_capacity(n);
        assert_eq!(other.as_ptr(), big_at);
        assert!(other.is_empty());
        other.push(Item(7));
        assert_eq!(other[..], [Item(7)]);
        assert_eq!(Item::shelf().lock().unwrap().bytes, 0);
        // A small buffer is never kept.
        drop(Buffer::<Item>::with_capacity(4));
        assert_eq!(Item::shelf().lock().unwrap().bytes, 0);
    }

    #[test]
    fn the_oldest_buffers_make_room_within_the_limit() {
        let mut shelf: Shelf<u64> = Shelf::new();
        let buffer = |n: usize| Vec::<u64>::with_capacity(n);
        for n in [100, 200, 300] {
            assert!(shelf.put(buffer(n), 8 * 600).is_empty());
        }
        assert_eq!(shelf.bytes, 8 * 600);
        // 250 more: the oldest two (100 and 200) go, 300 + 250 stay.
        let evicted = shelf.put(buffer(250), 8 * 600);
        let gone: Vec<usize> = evicted.iter().map(|v| v.capacity()).collect();
        assert!(gone.len() == 2 && gone[0] >= 100 && gone[0] < 200 && gone[1] >= 200);
        assert_eq!(
            shelf.bytes,
            shelf
                .buffers
                .iter()
                .map(|b| b.capacity() * 8)
                .sum::<usize>()
        );
        assert!(shelf.bytes <= 8 * 600);
        // The smallest that fits, emptied; none when none fits.
        let mut v = shelf.take(240).unwrap();
        assert!(v.capacity() >= 250 && v.capacity() < 300 && v.is_empty());
        v.push(1);
        assert!(shelf.take(10_000).is_none());
        assert_eq!(shelf.buffers.len(), 1);
    }

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
