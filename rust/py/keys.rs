//! Keys: the exact-int fast path (hashed in Rust, GIL released) and the Python path (any hashable,
//! with a Python dict's semantics: identity, then equal hash and `==`).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyInt, PyTuple, PyType};
use pyo3::{ffi, Borrowed};

use super::args::repr;

/// The read part of every list (lists of non-zero weight, first `window` items) mapped item by
/// item through `token`; lists that are not read are left empty. `None` as soon as `token`
/// declines an item.
pub fn read_tokens<'a, 'py>(
    lists: &'a [Bound<'py, PyTuple>],
    weights: &[f64],
    window: Option<usize>,
    mut token: impl FnMut(Borrowed<'a, 'py, PyAny>) -> Option<i64>,
) -> Option<Vec<Vec<i64>>> {
    let mut out = Vec::with_capacity(lists.len());
    for (list, &w) in lists.iter().zip(weights) {
        if w == 0.0 {
            out.push(Vec::new());
            continue;
        }
        let n = list.len().min(window.unwrap_or(usize::MAX));
        let mut tokens = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: i < len.
            tokens.push(token(unsafe { list.get_borrowed_item_unchecked(i) })?);
        }
        out.push(tokens);
    }
    Some(out)
}

/// The read part of every list as i64, when every item that will be read is an exact `int`
/// that fits in i64 (see `read_tokens`). `None` when another key type is met.
pub fn exact_ints(
    lists: &[Bound<'_, PyTuple>],
    weights: &[f64],
    window: Option<usize>,
) -> Option<Vec<Vec<i64>>> {
    read_tokens(lists, weights, window, |item| {
        if !item.is_exact_instance_of::<PyInt>() {
            return None;
        }
        // SAFETY: an exact int. Overflow is reported through `overflow` (no exception is set)
        // and sends us to the Python path; an exact int raises nothing else.
        let mut overflow = 0;
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(item.as_ptr(), &mut overflow) };
        (overflow == 0).then_some(v)
    })
}

pub fn hashable_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static HASHABLE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    HASHABLE.import(py, "collections.abc", "Hashable")
}

/// Dense ids (in order of first sight) for objects identified by their Python hash and an
/// equality test: the table behind both interners ([`PyInterner`] and rrf_many's str tokens).
pub struct HashIds<T> {
    table: HashTable<u32>,
    hashes: Vec<isize>,
    objects: Vec<T>,
    state: foldhash::fast::FixedState,
}

impl<T: Copy> HashIds<T> {
    pub fn with_capacity(n: usize) -> Self {
        HashIds {
            table: HashTable::with_capacity(n),
            hashes: Vec::with_capacity(n),
            objects: Vec::with_capacity(n),
            state: foldhash::fast::FixedState::default(),
        }
    }

    /// Forgets every object, keeping room for `n` (growing the table object by object would
    /// rehash it several times).
    pub fn clear(&mut self, n: usize) {
        self.table.clear();
        self.hashes.clear();
        self.objects.clear();
        let (state, hashes) = (&self.state, &self.hashes);
        self.table
            .reserve(n, |&i| state.hash_one(hashes[i as usize]));
        self.hashes.reserve(n);
        self.objects.reserve(n);
    }

    /// The id of a stored object of hash `hash` for which `eq` is true.
    #[inline]
    pub fn find(&self, hash: isize, mut eq: impl FnMut(T) -> bool) -> Option<u32> {
        let (hashes, objects) = (&self.hashes, &self.objects);
        self.table
            .find(self.state.hash_one(hash), |&id| {
                hashes[id as usize] == hash && eq(objects[id as usize])
            })
            .copied()
    }

    /// Stores `object` (not found by [`HashIds::find`]) under a new id.
    #[inline]
    pub fn insert(&mut self, hash: isize, object: T) -> u32 {
        let id = self.objects.len() as u32;
        let (state, hashes) = (&self.state, &self.hashes);
        self.table.insert_unique(state.hash_one(hash), id, |&i| {
            state.hash_one(hashes[i as usize])
        });
        self.hashes.push(hash);
        self.objects.push(object);
        id
    }
}

/// Interns Python keys into dense ids (new ids in order of first sight), as a `dict` would
/// identify them. Exceptions raised by a key's `__hash__` or `__eq__` propagate unchanged; an
/// item whose type is not hashable at all is a TypeError naming its position.
pub struct PyInterner<'a, 'py> {
    lists: &'a [Bound<'py, PyTuple>],
    ids: HashIds<Borrowed<'a, 'py, PyAny>>,
}

impl<'a, 'py> PyInterner<'a, 'py> {
    pub fn new(lists: &'a [Bound<'py, PyTuple>]) -> Self {
        let total: usize = lists.iter().map(|l| l.len()).sum();
        PyInterner {
            lists,
            ids: HashIds::with_capacity(total),
        }
    }

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
        let found = self.ids.find(hash, |stored| {
            if error.is_some() {
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
        Ok(match found {
            Some(id) => id,
            None => self.ids.insert(hash, key),
        })
    }
}
