//! The thread pool of the parallel loops, safe across `fork()`.
//!
//! rayon's global pool lives as long as the process: after a `fork()` (Python's `multiprocessing`
//! default on Linux) the child inherits the pool's bookkeeping but none of its threads, so the
//! first parallel loop in the child waits forever. [`install`] runs work in a pool owned by the
//! current process instead: created lazily, and created afresh when the process id has changed.
//! The lookup is lock-free, so a fork that happens while another thread holds it cannot leave
//! the child with a held lock.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use rayon::{ThreadPool, ThreadPoolBuilder};

struct Owned {
    pid: u32,
    pool: ThreadPool,
}

static POOL: AtomicPtr<Owned> = AtomicPtr::new(ptr::null_mut());

/// The pool of this process, if one can be built.
fn pool() -> Option<&'static ThreadPool> {
    let pid = std::process::id();
    loop {
        let current = POOL.load(Ordering::Acquire);
        // SAFETY: a non-null pointer in POOL comes from Box::into_raw and is never freed: a pool
        // replaced after a fork is leaked on purpose (its threads do not exist in this process,
        // so it can neither be used nor dropped).
        if let Some(owned) = unsafe { current.as_ref() } {
            if owned.pid == pid {
                return Some(&owned.pool);
            }
        }
        let pool = ThreadPoolBuilder::new().build().ok()?;
        let fresh = Box::into_raw(Box::new(Owned { pid, pool }));
        if POOL
            .compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Another thread installed a pool first: drop ours (its threads are alive here).
            // SAFETY: `fresh` was never shared.
            drop(unsafe { Box::from_raw(fresh) });
        }
    }
}

/// Runs `op` in this process's pool: the parallel iterators inside it use that pool. When no pool
/// can be built (threads cannot be spawned), `op` runs on the calling thread and its parallel
/// iterators fall back to rayon's global pool.
pub fn install<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(op),
        None => op(),
    }
}
