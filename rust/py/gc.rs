//! The cyclic garbage collector while a call makes millions of Python objects.
//!
//! CPython counts every allocation of a container (a tuple, a hit), tracked by the collector or
//! not, and collects when the count passes a threshold: making millions of hits runs thousands
//! of collections, now and then a full one, which walks every container of the process (the
//! caller's lists of millions of keys too) — up to half a second in which the call can neither
//! make progress nor handle Ctrl-C. The hits of most calls are not tracked (their keys are str
//! or int, which cannot be part of a cycle), so those collections find nothing of ours to free.
//! [`Paused`] pauses automatic collection while a large page of hits is made, with the GIL held
//! throughout (so no other thread runs Python in that time), and restores it after.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

/// Pages of at least this many hits are made with automatic collection paused.
pub const PAUSE_FROM: usize = 1 << 16;

/// Automatic collection paused until this is dropped (a no-op when it was already off).
pub struct Paused<'py> {
    /// `gc.enable`, when collection was on and is to be turned on again.
    enable: Option<Bound<'py, PyAny>>,
}

impl<'py> Paused<'py> {
    /// Pauses automatic collection when `n` objects are to be made and it is on.
    pub fn for_objects(py: Python<'py>, n: usize) -> PyResult<Self> {
        if n < PAUSE_FROM {
            return Ok(Paused { enable: None });
        }
        static GC: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
        let gc = GC
            .get_or_try_init(py, || py.import("gc").map(Bound::unbind))?
            .bind(py);
        if !gc.call_method0("isenabled")?.is_truthy()? {
            return Ok(Paused { enable: None });
        }
        gc.call_method0("disable")?;
        Ok(Paused {
            enable: Some(gc.getattr("enable")?),
        })
    }
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        if let Some(enable) = self.enable.take() {
            // `gc.enable()` cannot fail; were it to, collection would stay off, as `gc` allows.
            let _ = enable.call0();
        }
    }
}

/// Takes `tuple` (a new tuple that only the caller holds, such as a copy of a list) out of the
/// collector's sight: it cannot be part of a cycle, since nothing else refers to it, and
/// collections need not walk its items (millions, for a long list).
pub fn untrack_own(tuple: &Bound<'_, PyTuple>) {
    // SAFETY: a live tuple (a GC type), the GIL held; untracking an untracked object is
    // allowed, and the caller owns the only reference, so no cycle can pass through it.
    unsafe { pyo3::ffi::PyObject_GC_UnTrack(tuple.as_ptr().cast()) };
}
