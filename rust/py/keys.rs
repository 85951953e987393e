//! Keys as a Python `dict` identifies them: exact ints hashed in Rust (with the GIL released),
//! any other hashable interned with Python's own hash and `==` (identity first).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyInt, PyTuple, PyType};
use pyo3::{ffi, Borrowed};

use super::args::repr;

/// The first `read[i]` items of every list as i64, when each is an exact `int` that fits in
/// i64; `None` as soon as another key is met.
pub fn exact_ints(lists: &[Bound<'_, PyTuple>], read: &[usize]) -> Option<Vec<Vec<i64>>> {
    let mut out = Vec::with_capacity(lists.len());
    for (list, &n) in lists.iter().zip(read) {
        let mut ints = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: i < n <= len.
            let item = unsafe { list.get_borrowed_item_unchecked(i) };
            if !item.is_exact_instance_of::<PyInt>() {
                return None;
            }
            // SAFETY: an exact int. Overflow is reported through `overflow` (no exception is
            // set) and sends us to the Python path; an exact int raises nothing else.
            let mut overflow = 0;
            let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(item.as_ptr(), &mut overflow) };
            if overflow != 0 {
                return None;
            }
            ints.push(v);
        }
        out.push(ints);
    }
    Some(out)
}

pub fn hashable_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static HASHABLE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    HASHABLE.import(py, "collections.abc", "Hashable")
}

/// Interns Python keys into dense ids (new ids in order of first sight), as a `dict` would
/// identify them. Exceptions raised by a key's `__hash__` or `__eq__` propagate unchanged; an
/// item whose type is not hashable at all is a TypeError naming its position.
pub struct PyInterner<'a, 'py> {
    lists: &'a [Bound<'py, PyTuple>],
    table: HashTable<u32>,
    hashes: Vec<isize>,
    objects: Vec<Borrowed<'a, 'py, PyAny>>,
    state: foldhash::fast::FixedState,
}

impl<'a, 'py> PyInterner<'a, 'py> {
    pub fn new(lists: &'a [Bound<'py, PyTuple>]) -> Self {
        let n: usize = lists.iter().map(|l| l.len()).sum();
        PyInterner {
            lists,
            table: HashTable::with_capacity(n),
            hashes: Vec::with_capacity(n),
            objects: Vec::with_capacity(n),
            state: foldhash::fast::FixedState::default(),
        }
    }

    /// The id of the item at (`list`, `position`): its key's, or the number of keys interned
    /// so far for a new key.
    pub fn intern(&mut self, list: usize, position: usize) -> PyResult<u32> {
        // SAFETY: the scan only asks for positions inside the list.
        let key = unsafe { self.lists[list].get_borrowed_item_unchecked(position) };
        let hash = match key.hash() {
            Ok(h) => h,
            Err(e) => {
                let py = key.py();
                if !key.is_instance(hashable_type(py)?)? {
                    return Err(PyTypeError::new_err(format!(
                        "lists[{list}][{position}] is not hashable: {}",
                        repr(&key)
                    )));
                }
                return Err(e);
            }
        };
        let mut error = None;
        let (hashes, objects) = (&self.hashes, &self.objects);
        let found = self.table.find(self.state.hash_one(hash), |&id| {
            let stored = objects[id as usize];
            if error.is_some() || hashes[id as usize] != hash {
                return false;
            }
            if stored.is(&*key) {
                return true;
            }
            // SAFETY: two valid objects, GIL held. -1 means an exception is set.
            match unsafe {
                ffi::PyObject_RichCompareBool(stored.as_ptr(), key.as_ptr(), ffi::Py_EQ)
            } {
                1 => true,
                0 => false,
                _ => {
                    error = Some(PyErr::fetch(key.py()));
                    false
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        if let Some(&id) = found {
            return Ok(id);
        }
        let id = self.objects.len() as u32;
        let (state, hashes) = (&self.state, &self.hashes);
        self.table.insert_unique(state.hash_one(hash), id, |&i| {
            state.hash_one(hashes[i as usize])
        });
        self.hashes.push(hash);
        self.objects.push(key);
        Ok(id)
    }
}
