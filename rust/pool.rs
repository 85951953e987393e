//! The thread pools of the batched functions: created lazily, one per thread count, and forgotten
//! in a forked child (whose copy of a pool has no threads behind it: using it would hang).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::cancel::Cancel;
use crate::error::{Error, Problem};

struct Pools {
    /// The process that created the pools: a fork changes the pid, and the child starts afresh.
    pid: u32,
    by_size: HashMap<usize, Arc<ThreadPool>>,
}

static POOLS: Mutex<Option<Pools>> = Mutex::new(None);

/// How many threads a call may use: `threads` (an upper bound, at most the number of CPUs), or by
/// default `RAYON_NUM_THREADS` when set to a positive number, else the number of CPUs.
pub fn resolve_threads(threads: Option<usize>) -> usize {
    let cpus = cpus();
    match threads {
        Some(n) => n.clamp(1, cpus),
        None => std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(cpus),
    }
}

/// The number of CPUs, read once: `available_parallelism` reads cgroup files on every call.
fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn pool(n_threads: usize) -> Option<Arc<ThreadPool>> {
    let pid = std::process::id();
    // A poisoned lock only means a panic elsewhere while it was held; the map is still sound.
    let mut guard = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_some_and(|p| p.pid != pid) {
        // A forked child: the parent's pools have no threads here. Dropping them would try to
        // signal those threads, so they are leaked on purpose (once per fork).
        std::mem::forget(guard.take());
    }
    let pools = guard.get_or_insert_with(|| Pools {
        pid,
        by_size: HashMap::new(),
    });
    if let Some(p) = pools.by_size.get(&n_threads) {
        return Some(Arc::clone(p));
    }
    let built = ThreadPoolBuilder::new()
        .num_threads(n_threads)
        .thread_name(|i| format!("rankfusion-{i}"))
        .build()
        .ok()?;
    let built = Arc::new(built);
    pools.by_size.insert(n_threads, Arc::clone(&built));
    Some(built)
}

/// Runs `f(true)` on a pool of `n_threads` threads (rayon's parallel iterators inside it use that
/// pool), or `f(false)` on the calling thread when `n_threads <= 1` or no pool can be built: `f`
/// must then work sequentially, so that rayon's global pool is never used.
pub fn run<R: Send>(n_threads: usize, f: impl FnOnce(bool) -> R + Send) -> R {
    if n_threads > 1 {
        if let Some(p) = pool(n_threads) {
            return p.install(|| f(true));
        }
    }
    f(false)
}

/// `(0..n).map(work)` on `n_threads` threads: the calling thread and `n_threads - 1` threads of a
/// pool, each claiming the next index from a shared counter until none is left. Each thread
/// makes its own state with `init` once and passes it to every `work` it runs (a workspace,
/// reused from index to index). The results come back in index order.
///
/// Unlike [`run`], the calling thread works too: it starts on index 0 at once, while the pool's
/// threads wake up (a few to tens of microseconds on a virtual machine), and it is never put to
/// sleep and woken again at the end. For a call of a fraction of a millisecond that is most of
/// the cost of going parallel. `work` must not use rayon's parallel iterators (it may run on the
/// calling thread, outside any pool, where they would reach rayon's global pool).
///
/// Before each index the calling thread polls `cancel` and the pool's threads read its flag:
/// once it is set no thread starts another index, and the call is `Err(Problem::Interrupted)`
/// (the results of the indices done are dropped on another thread: see [`free_later`]).
pub fn map_indices<S, R: Send + 'static>(
    n_threads: usize,
    n: usize,
    cancel: &Cancel<'_>,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> R + Sync,
) -> Result<Vec<R>, Error> {
    let helpers = n_threads.min(n).saturating_sub(1);
    let Some(p) = (helpers > 0).then(|| pool(helpers)).flatten() else {
        let mut state = init();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            if let Err(e) = cancel.check() {
                free_later(out);
                return Err(e);
            }
            out.push(work(&mut state, i));
        }
        // (The last `work` may have stopped early, having read the flag.)
        if let Err(e) = cancel.check_stopped() {
            free_later(out);
            return Err(e);
        }
        return Ok(out);
    };
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(n));
    let claim_all = |caller: bool| {
        let mut mine = Vec::new();
        let mut state = None;
        loop {
            if if caller {
                cancel.poll()
            } else {
                cancel.stopped()
            } {
                break;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            let state = state.get_or_insert_with(&init);
            mine.push((i, work(state, i)));
        }
        // A poisoned lock only means a panic in another `work`, which the scope re-raises.
        done.lock().unwrap_or_else(|e| e.into_inner()).extend(mine);
    };
    p.in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| claim_all(false));
        }
        claim_all(true);
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = cancel.check_stopped() {
        free_later(done);
        return Err(e);
    }
    done.sort_unstable_by_key(|&(i, _)| i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}

/// [`run`] for work that `cancel` may stop: on a pool, `f(true)` runs on one of its threads
/// while the calling thread polls `cancel` every [`crate::cancel::INTERVAL`] until `f` returns
/// (`f` reads the flag, [`Cancel::stopped`], at its chunk boundaries); otherwise `f(false)` runs
/// on the calling thread, which polls `cancel` itself.
pub fn run_cancellable<T: Send>(
    n_threads: usize,
    cancel: &Cancel<'_>,
    f: impl FnOnce(bool) -> Result<T, Error> + Send,
) -> Result<T, Error> {
    match (n_threads > 1).then(|| pool(n_threads)).flatten() {
        Some(p) => in_pool(&p, cancel, || f(true)),
        None => f(false),
    }
}

/// [`install`] for work that `cancel` may stop: `op` runs in the default pool while the calling
/// thread polls `cancel` (as [`run_cancellable`]); `op` reads the flag at its chunk boundaries.
pub fn install_cancellable<T: Send>(
    cancel: &Cancel<'_>,
    op: impl FnOnce() -> Result<T, Error> + Send,
) -> Result<T, Error> {
    match pool(resolve_threads(None)) {
        Some(p) => in_pool(&p, cancel, op),
        None => op(),
    }
}

/// `op` on a thread of `p`, the calling thread polling `cancel` until it is done.
fn in_pool<T: Send>(
    p: &ThreadPool,
    cancel: &Cancel<'_>,
    op: impl FnOnce() -> Result<T, Error> + Send,
) -> Result<T, Error> {
    let mut out = None;
    let slot = &mut out;
    let (done, finished) = mpsc::channel::<()>();
    p.in_place_scope(|scope| {
        scope.spawn(move |_| {
            *slot = Some(op());
            drop(done);
        });
        // Until the job has ended: its sender is dropped then, whether `op` returned or not.
        while let Err(mpsc::RecvTimeoutError::Timeout) =
            finished.recv_timeout(crate::cancel::INTERVAL)
        {
            cancel.poll();
        }
    });
    // No result only if `op` did not return, that is panicked: the scope has re-raised its
    // panic then, so this is never reached without one.
    out.unwrap_or_else(|| Err(Problem::Interrupted.into()))
}

/// Runs `op` in this process's pool of the default size (`resolve_threads(None)`): the parallel
/// iterators inside it use that pool, never rayon's global one (which would hang after a fork).
/// When no pool can be built, `op` runs on the calling thread.
pub fn install<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    match pool(resolve_threads(None)) {
        Some(p) => p.install(op),
        None => op(),
    }
}

/// Drops `value` on a thread of this process's pool (or here, when no pool can be built): the
/// large buffers of an interrupted computation are freed while the caller goes on (giving
/// back gigabytes of touched memory takes tens of milliseconds).
pub fn free_later<T: Send + 'static>(value: T) {
    match pool(resolve_threads(None)) {
        Some(p) => p.spawn(move || drop(value)),
        None => drop(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_bounded() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(resolve_threads(Some(1)), 1);
        assert_eq!(resolve_threads(Some(0)), 1);
        assert_eq!(resolve_threads(Some(10_000)), cpus);
    }

    #[test]
    fn map_indices_is_map_in_order() {
        for threads in [1, 2, 4] {
            for n in [0, 1, 2, 3, 100, 1000] {
                let got = map_indices(
                    threads,
                    n,
                    &Cancel::none(),
                    || 1,
                    |one: &mut usize, i| i * i * *one,
                );
                assert_eq!(got, Ok((0..n).map(|i| i * i).collect::<Vec<_>>()));
            }
        }
    }

    #[test]
    fn pools_run_with_their_size() {
        if resolve_threads(Some(2)) == 2 {
            assert_eq!(run(2, |_| rayon::current_num_threads()), 2);
        }
        assert!(!run(1, |parallel| parallel));
    }
}
