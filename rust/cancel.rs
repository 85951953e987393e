//! Stopping a long computation early (Ctrl-C in the binding): one [`Cancel`] is shared by every
//! thread of a call.
//!
//! - The **calling thread** (the one that made the `Cancel`) calls [`Cancel::poll`] at its chunk
//!   boundaries. At most once per [`INTERVAL`] that runs the caller's hook (the binding's: it
//!   checks for a pending signal), and when the hook says stop, the flag is set.
//! - **Worker threads** read the flag ([`Cancel::stopped`], or `poll`, which only reads it on
//!   any thread but the caller's) at theirs, and stop at their next chunk.
//! - Work split around the caller's own (a Python callback between two pieces) runs each piece
//!   through an [`Outside`], which says whether the call goes on.
//!
//! A stopped computation returns [`Problem::Interrupted`]; what it had done is dropped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Problem};

/// What the calling thread runs to learn whether to stop: any `Fn() -> bool` (true: stop).
pub trait Hook: Sync {
    fn stop(&self) -> bool;
}

impl<F: Fn() -> bool + Sync> Hook for F {
    fn stop(&self) -> bool {
        self()
    }
}

/// The least time between two runs of the hook. The hook's own time counts too: the next run
/// is at least [`HOOK_SHARE`] times its last duration later, so a slow hook (one that waits for
/// a lock another thread holds) takes at most about 1/`HOOK_SHARE` of the calling thread.
pub const INTERVAL: Duration = Duration::from_millis(4);
const HOOK_SHARE: u32 = 20;

/// A request to stop, shared by the threads of one computation (see the module's doc).
pub struct Cancel<'a> {
    stopped: AtomicBool,
    poller: Option<Poller<'a>>,
}

struct Poller<'a> {
    hook: &'a dyn Hook,
    /// The calling thread (see [`this_thread`]).
    caller: usize,
    start: Instant,
    /// When the hook is next due, in nanoseconds after `start`.
    next: AtomicU64,
}

impl<'a> Cancel<'a> {
    /// A `Cancel` whose calling thread is the current one, polling `hook`.
    pub fn new(hook: &'a dyn Hook) -> Self {
        Cancel {
            stopped: AtomicBool::new(false),
            poller: Some(Poller {
                hook,
                caller: this_thread(),
                start: Instant::now(),
                next: AtomicU64::new(INTERVAL.as_nanos() as u64),
            }),
        }
    }

    /// A `Cancel` that never stops by itself (only [`Cancel::stop`] stops it).
    pub fn none() -> Self {
        Cancel {
            stopped: AtomicBool::new(false),
            poller: None,
        }
    }

    /// Whether the computation is to stop: the flag only (for worker threads, and for hot loops
    /// between two polls).
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Asks the computation to stop.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Whether the computation is to stop. On the calling thread this runs the hook when it is
    /// due; on any other thread it only reads the flag. Costs a clock read when a hook is set:
    /// call it between pieces of work of at least some microseconds.
    #[inline]
    pub fn poll(&self) -> bool {
        if self.stopped() {
            return true;
        }
        match &self.poller {
            None => false,
            Some(p) => self.poll_hook(p),
        }
    }

    #[cold]
    #[inline(never)]
    fn poll_hook(&self, p: &Poller<'_>) -> bool {
        if this_thread() != p.caller {
            return false;
        }
        let now = p.start.elapsed();
        if (now.as_nanos() as u64) < p.next.load(Ordering::Relaxed) {
            return false;
        }
        let stop = p.hook.stop();
        let after = p.start.elapsed();
        let wait = INTERVAL.max(after.saturating_sub(now).saturating_mul(HOOK_SHARE));
        let next = after.saturating_add(wait).as_nanos();
        p.next
            .store(u64::try_from(next).unwrap_or(u64::MAX), Ordering::Relaxed);
        if stop {
            self.stop();
        }
        stop
    }

    /// [`Cancel::poll`] as a result: `Err(Problem::Interrupted)` when the computation is to stop.
    #[inline]
    pub fn check(&self) -> Result<(), Error> {
        if self.poll() {
            Err(Problem::Interrupted.into())
        } else {
            Ok(())
        }
    }

    /// The flag as a result, for worker threads (see [`Cancel::stopped`]).
    #[inline]
    pub fn check_stopped(&self) -> Result<(), Error> {
        if self.stopped() {
            Err(Problem::Interrupted.into())
        } else {
            Ok(())
        }
    }
}

/// Runs the pieces of a call's work that touch none of the caller's objects, and says whether
/// the call goes on after each: the Python binding runs them with the GIL released, then raises
/// the exception a signal handler raised meanwhile (`Detached`, in `py/signals.rs`).
pub trait Outside<E> {
    fn run<T: Send>(&self, work: impl FnOnce() -> T + Send) -> std::result::Result<T, E>;
}

/// Work run on the calling thread, as it is.
pub struct Here;

impl<E> Outside<E> for Here {
    fn run<T: Send>(&self, work: impl FnOnce() -> T + Send) -> std::result::Result<T, E> {
        Ok(work())
    }
}

/// The current thread, as a number no other running thread has: the address of a thread-local
/// (cheaper to read than `thread::current().id()`).
fn this_thread() -> usize {
    thread_local! {
        static HERE: u8 = const { 0 };
    }
    HERE.with(|here| std::ptr::from_ref(here) as usize)
}

/// The work between two polls of the helpers below: about this many elements.
const PIECE: usize = 1 << 16;

/// Slices at most this long are sorted at once by [`sort_unstable_by_key`].
const SORT_PIECE: usize = 1 << 18;

/// `v.resize(n, value)` that `cancel` can stop: filled [`PIECE`] elements at a time (a large
/// buffer takes long to fill, its pages faulted in as it goes), `cancel` polled before each
/// piece; at once, unpolled, when that is at most one piece. Once it stops:
/// `Err(Problem::Interrupted)`, `v` somewhere between its old and new length.
pub fn resize<T: Clone>(
    v: &mut Vec<T>,
    n: usize,
    value: T,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    if n <= v.len() + PIECE {
        v.resize(n, value);
        return Ok(());
    }
    v.reserve(n - v.len());
    while v.len() < n {
        cancel.check()?;
        let to = n.min(v.len() + PIECE);
        v.resize(to, value.clone());
    }
    Ok(())
}

/// `v.sort_unstable_by_key(key)` that `cancel` can stop. A slice longer than [`SORT_PIECE`] is
/// partitioned around the median of a sample of its keys, `cancel` polled every [`PIECE`]
/// elements of the pass, and each side sorted the same way; a slice at most that long is sorted
/// at once (`sort_unstable_by_key`, a few milliseconds). A split that leaves less than 1/16 on
/// a side (keys far from uniform, many equal keys) is redone around the exact median
/// (`select_nth_unstable_by_key`, linear, not polled), so the whole is O(n log n) whatever the
/// input. About the time of one `sort_unstable` on millions of elements; the very same on
/// shorter slices. Equal keys end in an unspecified order. Once `cancel` stops:
/// `Err(Problem::Interrupted)`, `v` left in some order.
pub fn sort_unstable_by_key<T, K: Ord>(
    v: &mut [T],
    key: &impl Fn(&T) -> K,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    cancel.check()?;
    let n = v.len();
    if n <= SORT_PIECE {
        v.sort_unstable_by_key(key);
        return Ok(());
    }
    // The median of 255 keys spread over the slice.
    let mut sample: Vec<K> = (0..255u128)
        .map(|i| key(&v[(i * (n as u128 - 1) / 254) as usize]))
        .collect();
    let (_, pivot, _) = sample.select_nth_unstable(127);
    // Lomuto's partition without a branch on the comparison: `v[..low]` holds the keys below
    // the pivot, `v[low..i]` the others.
    let mut low = 0;
    for start in (0..n).step_by(PIECE) {
        cancel.check()?;
        for i in start..n.min(start + PIECE) {
            let below = key(&v[i]) < *pivot;
            v.swap(i, low);
            low += below as usize;
        }
    }
    if low.min(n - low) < n / 16 {
        v.select_nth_unstable_by_key(n / 2, key);
        low = n / 2;
    }
    let (below, rest) = v.split_at_mut(low);
    sort_unstable_by_key(below, key, cancel)?;
    sort_unstable_by_key(rest, key, cancel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_runs_on_the_calling_thread_at_most_once_per_interval() {
        let runs = std::sync::Mutex::new(Vec::new());
        let hook = || {
            runs.lock().unwrap().push(Instant::now());
            false
        };
        let start = Instant::now();
        let cancel = Cancel::new(&hook);
        while runs.lock().unwrap().len() < 3 {
            assert!(!cancel.poll());
        }
        let times = runs.lock().unwrap().clone();
        assert!(times[0] - start >= INTERVAL);
        for pair in times.windows(2) {
            assert!(pair[1] - pair[0] >= INTERVAL);
        }
        // Another thread only reads the flag.
        std::thread::scope(|s| {
            s.spawn(|| {
                let start = Instant::now();
                while start.elapsed() < INTERVAL * 3 {
                    assert!(!cancel.poll());
                }
            });
        });
        assert_eq!(runs.lock().unwrap().len(), 3);
    }

    #[test]
    fn a_hook_that_says_stop_sets_the_flag_for_every_thread() {
        let hook = || true;
        let cancel = Cancel::new(&hook);
        std::thread::scope(|s| {
            s.spawn(|| assert!(!cancel.poll()));
        });
        while !cancel.poll() {}
        assert!(cancel.stopped());
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(cancel.poll());
                assert_eq!(
                    cancel.check_stopped().map_err(|e| e.problem),
                    Err(Problem::Interrupted)
                );
            });
        });
        assert_eq!(
            cancel.check().map_err(|e| e.problem),
            Err(Problem::Interrupted)
        );
    }

    #[test]
    fn long_sorts_are_sorted_in_pieces_and_stop_when_asked() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let data: Vec<u64> = (0..SORT_PIECE * 5 + 7)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 1000 // many equal keys
            })
            .collect();
        let mut expected = data.clone();
        expected.sort_unstable();
        for n in [0, 1, 100, SORT_PIECE, SORT_PIECE + 1, data.len()] {
            let mut v = data[..n].to_vec();
            sort_unstable_by_key(&mut v, &|&x| x, &Cancel::none()).unwrap();
            let mut want = data[..n].to_vec();
            want.sort_unstable();
            assert_eq!(v, want);
        }
        let mut v = data.clone();
        sort_unstable_by_key(&mut v, &|&x| std::cmp::Reverse(x), &Cancel::none()).unwrap();
        assert!(v.iter().rev().eq(expected.iter()));
        // A hook that says stop on its first run: the sort stops at the next piece.
        let hook = || true;
        let cancel = Cancel::new(&hook);
        std::thread::sleep(INTERVAL);
        let mut v = data.clone();
        let e = sort_unstable_by_key(&mut v, &|&x| x, &cancel).unwrap_err();
        assert_eq!(e.problem, Problem::Interrupted);
    }

    #[test]
    fn none_stops_only_when_asked() {
        let cancel = Cancel::none();
        assert!(!cancel.poll() && cancel.check().is_ok());
        cancel.stop();
        assert!(cancel.poll() && cancel.check().is_err());
    }
}
