//! Ctrl-C during long work: the hook of the core's [`Cancel`], which runs Python's signal
//! handlers from inside the computation.
//!
//! Python runs a signal's handler (SIGINT's raises `KeyboardInterrupt`) only when its main thread
//! checks for signals, which the core's loops never do by themselves. A call that can run long
//! makes a [`Signals`] with the GIL held, then its `Cancel` ([`Signals::cancel`]): on the calling
//! thread, every few milliseconds, the hook attaches to the interpreter (for a moment, when the
//! work runs with the GIL released) and calls `PyErr_CheckSignals`, and nothing else. An
//! exception from a handler is kept and stops the computation; the binding raises it once the
//! work has returned ([`Signals::raise`]), so nothing is half-returned. Only Python's main thread
//! handles signals: on any other thread the `Cancel` never polls (no attaching at all).
//!
//! An interrupted call that had made millions of Python objects (the hits of a huge `rrf`)
//! hands them to [`free_later`] rather than freeing them before it raises (which takes up to
//! a second, with the GIL held).

use std::cell::Cell;
use std::sync::Mutex;

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use super::args::imported;
use crate::cancel::{Cancel, Hook, Outside};

pub struct Signals {
    /// The exception a signal handler raised (usually `KeyboardInterrupt`).
    caught: Mutex<Option<PyErr>>,
    /// Whether signals are checked: the call runs on Python's main thread.
    check: bool,
}

impl Signals {
    /// For a call made on the current thread: signals are checked when it is Python's main
    /// thread. (A pending signal's handler may run here, before any work: its exception is the
    /// error.)
    pub fn new(py: Python<'_>) -> PyResult<Self> {
        Ok(Signals {
            caught: Mutex::new(None),
            check: on_main_thread(py)?,
        })
    }

    /// Signals never checked (a call too short to need it).
    #[inline]
    pub fn none() -> Self {
        Signals {
            caught: Mutex::new(None),
            check: false,
        }
    }

    /// The `Cancel` of the work: polling [`Signals`]'s hook on the current thread, or never
    /// stopping by itself when signals are not checked.
    #[inline]
    pub fn cancel(&self) -> Cancel<'_> {
        if self.check {
            Cancel::new(self)
        } else {
            Cancel::none()
        }
    }

    /// `Err` with the exception a signal handler raised during the work, if one did (then
    /// whatever the work returned is dropped).
    #[inline]
    pub fn raise(&self) -> PyResult<()> {
        if !self.check {
            return Ok(()); // no hook ran
        }
        match self.caught.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Hook for Signals {
    /// Runs the pending signals' handlers; true (stop) when one raised, its exception kept.
    fn stop(&self) -> bool {
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                let mut caught = self.caught.lock().unwrap_or_else(|e| e.into_inner());
                caught.get_or_insert(e);
                true
            }
        })
    }
}

thread_local! {
    /// Whether this thread is known to be Python's main thread. A thread that is main stays
    /// main; one that is not may become main in a child forked from it, so only `true` is kept.
    static MAIN: Cell<bool> = const { Cell::new(false) };
}

/// Whether the current thread is Python's main thread (where signal handlers run): asked of
/// `threading` until the answer is yes, then remembered.
///
/// Without `threading` imported and no thread started by `_thread` running, the caller is taken
/// for the main thread without importing `threading` (a few milliseconds, more than a short
/// call): the only other threads are ones made outside Python, where checking for signals
/// polls for nothing (`PyErr_CheckSignals` runs no handler off the main thread).
fn on_main_thread(py: Python<'_>) -> PyResult<bool> {
    if MAIN.with(Cell::get) {
        return Ok(true);
    }
    if imported(py, "threading")?.is_none()
        && py
            .import("_thread")?
            .call_method0("_count")?
            .extract::<usize>()?
            == 0
    {
        return Ok(true);
    }
    let threading = py.import("threading")?;
    let main = threading.call_method0("main_thread")?.getattr("ident")?;
    let current = threading.call_method0("get_ident")?;
    let is_main = main.eq(current)?;
    MAIN.with(|m| m.set(is_main));
    Ok(is_main)
}

/// Work run with the GIL released, then the exception a signal handler raised meanwhile (see
/// [`Signals::raise`]) is the error, the work's result dropped.
pub struct Detached<'a, 'py>(pub Python<'py>, pub &'a Signals);

impl Outside<PyErr> for Detached<'_, '_> {
    fn run<T: Send>(&self, work: impl FnOnce() -> T + Send) -> PyResult<T> {
        let out = self.0.detach(work);
        self.1.raise()?;
        Ok(out)
    }
}

/// Runs `work` [`Detached`], with a `Cancel` that polls Python's signals (see [`Signals`]).
pub fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Cancel<'_>) -> T + Send,
{
    let signals = Signals::new(py)?;
    let cancel = signals.cancel();
    Detached(py, &signals).run(|| work(&cancel))
}

/// The exception for a computation stopped by its `Cancel` when no handler's exception was kept
/// (the core stopped for another reason): `KeyboardInterrupt`.
pub fn interrupted() -> PyErr {
    PyKeyboardInterrupt::new_err(())
}

/// Objects to free, a slice at a time (see [`free_later`]).
#[pyclass(frozen, module = "rankfusion._core", name = "_Garbage")]
pub struct Garbage {
    pile: Mutex<Pile>,
}

struct Pile {
    items: Vec<Py<PyAny>>,
    /// How many items of the last object are left to release when it is a tuple that only
    /// this holds (`None`: not looked at yet).
    left: Option<usize>,
}

/// How many objects [`Garbage::free_some`] releases in one call (a fraction of a millisecond).
const FREE_SLICE: usize = 1 << 12;

#[pymethods]
impl Garbage {
    /// Releases a slice of the objects, last first; whether any are left. A large tuple that
    /// only this holds (a copy of a caller's list) is emptied a slice at a time.
    fn free_some(&self, py: Python<'_>) -> bool {
        let mut pile = self.pile.lock().unwrap_or_else(|e| e.into_inner());
        let Pile { items, left } = &mut *pile;
        let mut budget = FREE_SLICE;
        while budget > 0 {
            let Some(object) = items.last() else {
                break;
            };
            let n_left = left.get_or_insert_with(|| own_tuple_len(py, object));
            if *n_left == 0 {
                items.pop(); // released here: a hit, say, or an emptied tuple
                *left = None;
                budget -= 1;
                continue;
            }
            let n = (*n_left).min(budget);
            let mut refused = false;
            for i in (*n_left - n..*n_left).rev() {
                // SAFETY: `object` is a tuple that only we hold, untracked by the collector, so
                // no one else can see its items; NULL items are allowed in a tuple being
                // released (its deallocation skips them), and `PyTuple_SetItem` releases the
                // item it replaces. (It refuses a tuple held elsewhere: then the tuple is
                // released whole.)
                let set = unsafe {
                    pyo3::ffi::PyTuple_SetItem(object.as_ptr(), i as isize, std::ptr::null_mut())
                };
                if set != 0 {
                    drop(PyErr::take(py));
                    refused = true;
                    break;
                }
            }
            *n_left = if refused { 0 } else { *n_left - n };
            budget -= n;
        }
        !items.is_empty()
    }
}

/// The length of `object` when it is an exact tuple that only the caller holds, which is
/// then untracked by the cyclic collector (as CPython untracks tuples of atomic items), so that
/// nothing can reach it while it is emptied; else 0.
fn own_tuple_len(py: Python<'_>, object: &Py<PyAny>) -> usize {
    let object = object.bind(py);
    match object.cast_exact::<PyTuple>() {
        // SAFETY: a live object, the GIL held.
        Ok(tuple) if unsafe { pyo3::ffi::Py_REFCNT(object.as_ptr()) } == 1 => {
            // SAFETY: a live tuple (a GC type), the GIL held; untracking an untracked object
            // is allowed.
            unsafe { pyo3::ffi::PyObject_GC_UnTrack(object.as_ptr().cast()) };
            tuple.len()
        }
        _ => 0,
    }
}

/// Frees `items` on a Python daemon thread (`rankfusion._free`), a slice at a time, so that the caller can raise at
/// once. The thread starts freeing a tenth of a second later (once the interrupted call has
/// returned); between two slices the interpreter hands the GIL to the other threads, so the
/// main thread waits at most a switch interval (5 ms). Freed here, at once, when no thread can
/// be started. A tuple of `items` that no one else holds is emptied a slice at a time (the
/// caller must have dropped its other references, iterators included, before this call).
pub fn free_later(py: Python<'_>, items: Vec<Py<PyAny>>) {
    static START: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let start = START.get_or_try_init(py, || {
        PyResult::Ok(py.import("rankfusion._free")?.getattr("start")?.unbind())
    });
    let garbage = Garbage {
        pile: Mutex::new(Pile { items, left: None }),
    };
    match start {
        Ok(start) => {
            let started = Bound::new(py, garbage).and_then(|g| start.bind(py).call1((g,)));
            // Not started (the interpreter is shutting down, say): the objects were freed
            // with the arguments, or are freed with the exception, here.
            drop(started);
        }
        Err(_) => drop(garbage),
    }
}
