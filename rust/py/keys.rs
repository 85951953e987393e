//! Keys as a Python `dict` identifies them: exact ints hashed in Rust (with the GIL released),
//! any other hashable interned with Python's own hash and `==` (identity first).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyInt, PyTuple, PyType};
use pyo3::{ffi, Borrowed};

use super::args::{items, repr};
use super::errors::type_error;
use super::layout::str_hash;

/// Signals are checked every this many items read by [`exact_ints`] (and slots of a
/// [`PyInterner`] filled).
const SIGNALS_EVERY: usize = 1 << 16;

/// The first `read[i]` items of every list as i64, when each is an exact `int` that fits in
/// i64; `None` as soon as another key is met. Signals are checked as it goes (a signal
/// handler's exception is the error).
pub fn exact_ints(
    py: Python<'_>,
    lists: &[Bound<'_, PyTuple>],
    read: &[usize],
) -> PyResult<Option<Vec<Vec<i64>>>> {
    let mut out = Vec::with_capacity(lists.len());
    for (list, &n) in lists.iter().zip(read) {
        if items(list)
            .first()
            .is_some_and(|k| !k.is_exact_instance_of::<PyInt>())
        {
            return Ok(None); // (before anything is allocated: the common case of str keys)
        }
        let mut ints = Vec::with_capacity(n);
        for (i, item) in items(list).iter().take(n).enumerate() {
            if i % SIGNALS_EVERY == SIGNALS_EVERY - 1 {
                py.check_signals()?;
            }
            // An int beyond i64 sends us to the Python path.
            match item
                .is_exact_instance_of::<PyInt>()
                .then(|| as_i64(&item.as_borrowed()))
            {
                Some(Some(v)) => ints.push(v),
                _ => return Ok(None),
            }
        }
        out.push(ints);
    }
    Ok(Some(out))
}

/// An exact int's value, when it fits in i64.
#[inline]
pub fn as_i64(int: &Borrowed<'_, '_, PyAny>) -> Option<i64> {
    let mut overflow = 0;
    // SAFETY: an exact int, GIL held. Overflow is reported through `overflow` (no exception is
    // set); an exact int raises nothing else.
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(int.as_ptr(), &mut overflow) };
    (overflow == 0).then_some(v)
}

pub fn hashable_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static HASHABLE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    HASHABLE.import(py, "collections.abc", "Hashable")
}

/// Interns Python keys into dense ids (new ids in order of first sight), as a `dict` would
/// identify them: an open-addressing table of (hash, place of the key, id), probed linearly
/// from a mix of the key's Python hash, each candidate compared by identity, then `==`.
/// Exceptions raised by a key's `__hash__` or `__eq__` propagate unchanged; an item whose type
/// is not hashable at all is a TypeError naming its position.
///
/// The table is the thread's, kept from call to call up to `KEEP_SLOTS` slots: a slot is
/// empty unless it holds this interner's `mark`, so a table is never cleared.
pub struct PyInterner<'a, 'py> {
    lists: Vec<&'a [Bound<'py, PyAny>]>,
    slots: Vec<Slot>,
    mark: u32,
    /// log2 of the number of slots in use.
    bits: u32,
    n_keys: u32,
}

/// A key interned: its hash, where it was first seen (list, position), its id, and the mark
/// of the interner that filled the slot.
#[derive(Clone, Copy, Default)]
struct Slot {
    hash: isize,
    list: u32,
    position: u32,
    id: u32,
    mark: u32,
}

/// The largest table kept for the thread's next interner (1.5 MB).
const KEEP_SLOTS: usize = 1 << 16;

thread_local! {
    /// The thread's table and the last mark used on it.
    static TABLE: std::cell::Cell<(Vec<Slot>, u32)> = const { std::cell::Cell::new((Vec::new(), 0)) };
}

impl<'a, 'py> PyInterner<'a, 'py> {
    /// An interner for the items of `lists`. A large table is filled in pieces, signals
    /// checked between them (a handler's exception is the error).
    pub fn new(py: Python<'py>, lists: &'a [Bound<'py, PyTuple>]) -> PyResult<Self> {
        let n: usize = lists.iter().map(|l| l.len()).sum();
        let lists = lists.iter().map(items).collect();
        // At most half full.
        let size = (2 * n).next_power_of_two().max(16);
        // (None once the thread's storage is torn down: a table of its own.)
        let (mut slots, mut mark) = TABLE.try_with(|t| t.take()).unwrap_or_default();
        mark = mark.wrapping_add(1);
        if mark == 0 {
            slots.clear(); // every mark used: the table starts again, empty
            mark = 1;
        }
        while slots.len() < size {
            if slots.len() >= SIGNALS_EVERY {
                py.check_signals()?;
            }
            slots.resize(size.min(slots.len() + SIGNALS_EVERY), Slot::default());
        }
        Ok(PyInterner {
            lists,
            slots,
            mark,
            bits: size.trailing_zeros(),
            n_keys: 0,
        })
    }

    /// The id of the item at (`list`, `position`): its key's, or the number of keys interned
    /// so far for a new key.
    #[inline(always)]
    pub fn intern(&mut self, list: usize, position: usize) -> PyResult<u32> {
        // SAFETY: the scan only asks for positions inside the list.
        let key = unsafe { self.lists.get_unchecked(list).get_unchecked(position) };
        let hash = match str_hash(key) {
            Some(hash) => hash,
            // SAFETY: a valid object, GIL held. -1 means an exception is set.
            None => match unsafe { ffi::PyObject_Hash(key.as_ptr()) } {
                -1 => return Err(unhashable(key, list, position)),
                hash => hash,
            },
        };
        // Fibonacci hashing: int keys hash to themselves, so their low bits alone would cluster.
        let mask = (1usize << self.bits) - 1;
        let mut i =
            ((hash as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize;
        loop {
            let slot = self.slots[i];
            if slot.mark != self.mark {
                let id = self.n_keys;
                self.slots[i] = Slot {
                    hash,
                    list: list as u32,
                    position: position as u32,
                    id,
                    mark: self.mark,
                };
                self.n_keys += 1;
                return Ok(id);
            }
            if slot.hash == hash {
                // SAFETY: a place the scan read before.
                let stored = unsafe {
                    self.lists
                        .get_unchecked(slot.list as usize)
                        .get_unchecked(slot.position as usize)
                };
                if stored.is(key) {
                    return Ok(slot.id);
                }
                // SAFETY: two valid objects, GIL held. -1 means an exception is set.
                match unsafe {
                    ffi::PyObject_RichCompareBool(stored.as_ptr(), key.as_ptr(), ffi::Py_EQ)
                } {
                    1 => return Ok(slot.id),
                    0 => {}
                    _ => return Err(PyErr::fetch(key.py())),
                }
            }
            i = (i + 1) & mask;
        }
    }
}

impl Drop for PyInterner<'_, '_> {
    /// The table back to the thread, unless it is too large to keep.
    fn drop(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        if slots.len() > KEEP_SLOTS {
            slots = Vec::new();
        }
        let _ = TABLE.try_with(|t| t.set((slots, self.mark))); // (dropped once torn down)
    }
}

/// The error of a key whose hash failed: a TypeError naming its place when its type is not
/// hashable at all, else the exception its `__hash__` raised.
#[cold]
#[inline(never)]
fn unhashable(key: &Bound<'_, PyAny>, list: usize, position: usize) -> PyErr {
    let py = key.py();
    let e = PyErr::fetch(py);
    match hashable_type(py).and_then(|h| key.is_instance(h)) {
        Ok(false) => type_error(
            &format!("lists[{list}][{position}]"),
            format!("lists[{list}][{position}] is not hashable: {}", repr(key)),
        ),
        Ok(true) => e,
        Err(other) => other,
    }
}
