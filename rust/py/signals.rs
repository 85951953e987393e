//! Ctrl-C during long work: the hook of the core's [`Cancel`], which runs Python's signal
//! handlers from inside the computation.
//!
//! Python runs a signal's handler (SIGINT's raises `KeyboardInterrupt`) only when the main thread
//! checks for signals, which the core's loops never do by themselves. A call that can run long
//! makes a [`Signals`] and its `Cancel` ([`Signals::cancel`]): on the calling thread,
//! every few milliseconds, the hook attaches to the interpreter (for a moment, when the work runs
//! with the GIL released) and calls `PyErr_CheckSignals`. An exception from a handler is kept
//! and stops the computation; the binding raises it once the work has returned
//! ([`Signals::raise`]), so nothing is half-returned. Signals are only handled on Python's main
//! thread: on any other thread the hook returns at once after its first call.

use std::sync::{Mutex, OnceLock};

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use crate::cancel::{Cancel, Hook};

#[derive(Default)]
pub struct Signals {
    /// The exception a signal handler raised (usually `KeyboardInterrupt`).
    caught: Mutex<Option<PyErr>>,
    /// Whether the calling thread is Python's main thread (learnt on the first check).
    main: OnceLock<bool>,
}

impl Signals {
    pub fn new() -> Self {
        Self::default()
    }

    /// A `Cancel` whose calling thread is the current one, polling [`Signals::stop`].
    pub fn cancel(&self) -> Cancel<'_> {
        Cancel::new(self)
    }

    /// `Err` with the exception a signal handler raised during the work, if one did.
    pub fn raise(&self) -> PyResult<()> {
        match self.caught.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Hook for Signals {
    /// Runs the pending signals' handlers; true (stop) when one raised, its exception kept.
    fn stop(&self) -> bool {
        if self.main.get() == Some(&false) {
            return false;
        }
        Python::attach(|py| {
            let checked = match self.main.get() {
                Some(&main) => Ok(main),
                // (Python code runs here: a pending signal's handler may raise inside it.)
                None => is_main_thread(py).inspect(|&main| {
                    let _ = self.main.set(main);
                }),
            }
            .and_then(|main| if main { py.check_signals() } else { Ok(()) });
            match checked {
                Ok(()) => false,
                Err(e) => {
                    let mut caught = self.caught.lock().unwrap_or_else(|e| e.into_inner());
                    caught.get_or_insert(e);
                    true
                }
            }
        })
    }
}

/// Whether the current thread is Python's main thread (where signal handlers run). This runs
/// Python code (`threading.main_thread()`), where a pending signal's handler runs too: its
/// exception is the error.
fn is_main_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    let main = threading.call_method0("main_thread")?.getattr("ident")?;
    let current = threading.call_method0("get_ident")?;
    main.eq(current)
}

/// The exception for a computation stopped by its `Cancel` when no handler's exception was kept
/// (the core stopped for another reason): `KeyboardInterrupt`.
pub fn interrupted() -> PyErr {
    PyKeyboardInterrupt::new_err(())
}
