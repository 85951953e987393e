//! The result types: C-level tuple subclasses with named fields, made with the stable C API
//! (`PyType_FromSpecWithBases`). A type's first fields are its tuple (`Hit` unpacks as
//! `key, score`, compares and hashes as that tuple); the others are stored after them and are
//! attributes only (`Hit.contributions`). Every field is a read-only attribute. Cheap to create
//! and free (a pyclass costs several times more per object), immutable.
//!
//! What is called on them from Python (the checked constructor `Hit(key, score, ...)`,
//! `__reduce__`, `__repr__`, `to_dict()`) and their docstrings are `rankfusion/_results.py`'s,
//! which makes its instances with [`_result`]; the core makes its own with [`Spec::make`] and
//! [`Spec::make_array`].

use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

use super::args::{as_tuple, integer, real};
use super::layout::tuple_items;

/// A field: its name and its getter's docstring.
struct Field {
    name: &'static CStr,
    doc: &'static CStr,
}

const fn field(name: &'static CStr, doc: &'static CStr) -> Field {
    Field { name, doc }
}

/// A struct type: its name, fields and how many of them are its tuple.
pub struct Spec {
    name: &'static CStr,
    fields: &'static [Field],
    visible: usize,
    ty: PyOnceLock<Py<PyType>>,
    /// The type, for the slots (which run without a `Python` token).
    type_ptr: AtomicPtr<ffi::PyTypeObject>,
    /// Freed instances kept for reuse, as CPython keeps tuples and floats: allocating and
    /// freeing a GC object costs more than all the rest of making a hit.
    free: FreeList,
}

/// A free list, only ever touched with the GIL held: by [`Spec::make`] (which holds a `Python`
/// token) and by `tp_dealloc` (which CPython calls with the GIL held). The GIL is the lock, so a
/// plain cell suffices where a `Mutex` would cost a lock and an unlock per object. The module is
/// built for the stable ABI (abi3), which a free-threaded CPython does not load.
struct FreeList(UnsafeCell<Vec<usize>>);

// SAFETY: every access is made with the GIL held (see `FreeList`), which serialises them.
unsafe impl Sync for FreeList {}

impl FreeList {
    const fn new() -> Self {
        FreeList(UnsafeCell::new(Vec::new()))
    }

    /// # Safety
    /// The GIL must be held, and no other borrow of the list live (none outlives these calls).
    unsafe fn pop(&self) -> Option<usize> {
        (*self.0.get()).pop()
    }

    /// Keeps `obj` unless the list is full; whether it was kept.
    ///
    /// # Safety
    /// As [`FreeList::pop`].
    unsafe fn push(&self, obj: usize) -> bool {
        let list = &mut *self.0.get();
        if list.len() < FREE_MAX {
            list.push(obj);
            true
        } else {
            false
        }
    }
}

/// The most freed instances kept per type.
const FREE_MAX: usize = 2048;

const fn spec(name: &'static CStr, fields: &'static [Field], visible: usize) -> Spec {
    Spec {
        name,
        fields,
        visible,
        ty: PyOnceLock::new(),
        type_ptr: AtomicPtr::new(std::ptr::null_mut()),
        free: FreeList::new(),
    }
}

pub static CONTRIBUTION: Spec = spec(
    c"Contribution",
    &[
        field(c"list_index", c"The list (0-based)."),
        field(
            c"rank",
            c"The 1-based rank in that list, 0 when the key is not in it.",
        ),
        field(c"weight", c"The list's weight."),
        field(
            c"contribution",
            c"The term the method adds (RRF: weight / (k + rank)).",
        ),
        field(
            c"score",
            c"The list's own raw score for this item, when `scores=` was passed, else None.",
        ),
        field(
            c"normalized",
            c"The value the normalisation gave it (score-based methods), else None.",
        ),
    ],
    5,
);

pub static HIT: Spec = spec(
    c"Hit",
    &[
        field(c"key", c"The key, as first met in the lists."),
        field(c"score", c"The fused score."),
        field(
            c"contributions",
            c"The key's `Contribution`s by list then rank, with trace=True.",
        ),
        field(
            c"factor",
            c"What the method multiplied the sum of the contributions by (mnz's |present|, ...).",
        ),
        field(
            c"divisor",
            c"What the method divided it by (anz's |present|, a mean's weight sum, ...).",
        ),
        field(
            c"boost",
            c"What the boost added (`boost_weight * (v - min) / (max - min)`).",
        ),
    ],
    2,
);

pub static REVALIDATED: Spec = spec(
    c"Revalidated",
    &[
        field(c"id", c"The candidate's id."),
        field(c"record", c"The live record the lookup returned."),
        field(c"score", c"The candidate's score, as given."),
    ],
    3,
);

pub static BATCH_RESULT: Spec = spec(
    c"BatchResult",
    &[
        field(c"ids", c"(Q, W) int64, padded with the pad value."),
        field(c"scores", c"(Q, W) float64, padded with NaN."),
        field(
            c"counts",
            c"(Q,) int64: the number of real hits of each row.",
        ),
        field(
            c"ranks",
            c"(Q, W, L) int32 with trace=True: the hit's best rank in list l, 0 where absent.",
        ),
        field(
            c"contributions",
            c"(Q, W, L) float64 with trace=True: the hit's contribution from list l, 0.0 where absent.",
        ),
        field(
            c"normalized",
            c"(Q, W, L) float64 with fuse_batch's trace: the hit's normalised value in list l.",
        ),
    ],
    3,
);

pub static REVALIDATED_BATCH: Spec = spec(
    c"RevalidatedBatch",
    &[
        field(c"ids", c"(Q, W) int64, padded with the pad value."),
        field(c"scores", c"(Q, W) float64, padded with NaN."),
        field(
            c"counts",
            c"(Q,) int64: the live candidates kept in each row.",
        ),
    ],
    3,
);

pub static SPECS: [&Spec; 5] = [
    &CONTRIBUTION,
    &HIT,
    &REVALIDATED,
    &BATCH_RESULT,
    &REVALIDATED_BATCH,
];

impl Spec {
    /// The type (made on first use).
    pub fn ty<'py>(&'static self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        Ok(self.ty_object(py)?.bind(py).clone())
    }

    fn ty_object(&'static self, py: Python<'_>) -> PyResult<&'static Py<PyType>> {
        self.ty.get_or_try_init(py, || self.make_type(py))
    }

    fn make_type(&'static self, py: Python<'_>) -> PyResult<Py<PyType>> {
        let n = self.fields.len();
        // One getter per field, its index in the closure pointer: a field left NULL (a hidden
        // field the core did not set) reads as None.
        let mut getset: Vec<ffi::PyGetSetDef> = self
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| ffi::PyGetSetDef {
                name: f.name.as_ptr(),
                get: Some(get_field),
                set: None,
                doc: f.doc.as_ptr(),
                closure: i as *mut std::ffi::c_void,
            })
            .collect();
        getset.push(ffi::PyGetSetDef {
            name: std::ptr::null(),
            get: None,
            set: None,
            doc: std::ptr::null(),
            closure: std::ptr::null_mut(),
        });
        let (dealloc, traverse): (ffi::destructor, ffi::traverseproc) = match n {
            3 => (dealloc::<3>, traverse::<3>),
            6 => (dealloc::<6>, traverse::<6>),
            _ => return Err(PyValueError::new_err("a record type of an unplanned size")),
        };
        let slot = |slot, pfunc: *mut std::ffi::c_void| ffi::PyType_Slot { slot, pfunc };
        // The type keeps pointers into its spec: they live as long as the process.
        let slots: &'static mut [ffi::PyType_Slot] = vec![
            slot(ffi::Py_tp_new, not_ready as *mut _),
            slot(ffi::Py_tp_getset, getset.leak().as_mut_ptr().cast()),
            slot(ffi::Py_tp_dealloc, dealloc as *mut _),
            slot(ffi::Py_tp_traverse, traverse as *mut _),
            slot(ffi::Py_tp_hash, hash as *mut _),
            // Defining tp_hash stops tp_richcompare from being inherited: tuple's, explicitly.
            slot(ffi::Py_tp_richcompare, tuple_richcompare()),
            slot(0, std::ptr::null_mut()),
        ]
        .leak();
        let qualified = format!(
            "rankfusion._core.{}\0",
            self.name.to_str().unwrap_or_default()
        );
        let spec = Box::leak(Box::new(ffi::PyType_Spec {
            name: qualified.leak().as_ptr().cast(),
            basicsize: 0,
            itemsize: 0,
            flags: (ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_HAVE_GC) as _,
            slots: slots.as_mut_ptr(),
        }));
        // SAFETY: a valid spec ('static) and a tuple of one base; a new type or NULL with an
        // exception set.
        let ty = unsafe {
            let bases = PyTuple::new(py, [py.get_type::<PyTuple>()])?;
            Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpecWithBases(spec, bases.as_ptr()))?
                .cast_into::<PyType>()?
        };
        self.type_ptr.store(ty.as_ptr().cast(), Ordering::Release);
        Ok(ty.unbind())
    }

    /// A new instance from its fields (trusted: the core's own results); missing trailing
    /// fields are None. Tracked by the cyclic collector (see [`Spec::make_array`] for records
    /// that need not be).
    pub fn make<'py>(
        &'static self,
        py: Python<'py>,
        values: impl IntoIterator<Item = Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = self.fields.len();
        // SAFETY: a record of this type has `n` fields, stored as `n` tuple items from
        // `tuple_items`. A freed instance taken back from the free list is a dead object of
        // this very type (reference count 0, items released, untracked, holding its reference to
        // the type: the type, and so the items' offset, were made before it), revived here; a new
        // one is allocated with room for the fields (zeroed, GC-tracked). Every field is set to
        // a new reference, and the tuple length is that of the visible fields.
        unsafe {
            let (obj, reused) = self.instance(py)?;
            let items = tuple_items(obj);
            let mut set = 0;
            for (i, v) in values.into_iter().take(n).enumerate() {
                *items.add(i) = v.into_ptr();
                set = i + 1;
            }
            Ok(self.finish(py, obj, set, reused, true))
        }
    }

    /// A freed instance taken back from the free list (revived: reference count 1, its
    /// fields to set; `true`), or a new one (`false`).
    ///
    /// # Safety
    /// The GIL is held (`py`); every field of the instance must then be set (see
    /// [`Spec::finish`]).
    #[inline(always)]
    unsafe fn instance(&'static self, py: Python<'_>) -> PyResult<(*mut ffi::PyObject, bool)> {
        match self.free.pop() {
            Some(p) => {
                let obj = p as *mut ffi::PyObject;
                // SAFETY: a dead instance of this type, revived here (see `make`).
                unsafe { ffi::Py_INCREF(obj) };
                Ok((obj, true)) // tracked in `finish`, unless its fields are atomic
            }
            None => Ok((self.alloc(py)?, false)),
        }
    }

    /// Completes an instance from [`Spec::instance`] whose first `set` fields are set: the
    /// other visible ones None, the tuple length that of the visible fields, tracked by the
    /// collector or not.
    ///
    /// # Safety
    /// `obj` comes from `instance` (`reused` as it said), its first `set` fields set; the GIL
    /// is held.
    #[inline(always)]
    unsafe fn finish<'py>(
        &self,
        py: Python<'py>,
        obj: *mut ffi::PyObject,
        set: usize,
        reused: bool,
        tracked: bool,
    ) -> Bound<'py, PyAny> {
        // SAFETY: as the caller promises: a record of this type, its items writable.
        unsafe {
            let items = tuple_items(obj);
            // Visible fields are tuple items and never NULL; hidden ones not given stay NULL
            // (read as None), which spares a reference count on each.
            for i in set..self.visible {
                *items.add(i) = py.None().into_ptr();
            }
            (*obj.cast::<ffi::PyVarObject>()).ob_size = self.visible as ffi::Py_ssize_t;
            // A new object is tracked already; a reused one is tracked once its fields are
            // set. (Untracking twice, again in `dealloc`, is allowed.)
            match (reused, tracked) {
                (true, true) => ffi::PyObject_GC_Track(obj.cast()),
                (false, false) => ffi::PyObject_GC_UnTrack(obj.cast()),
                _ => {}
            }
            Bound::from_owned_ptr(py, obj)
        }
    }

    /// [`Spec::make`] of `M` fields (at most the type's) given as an array: the fields are
    /// written in place, with no iterator to step through; tracked by the cyclic collector or
    /// not. A record whose fields are all atomic (see [`is_atomic`]) cannot be part of a
    /// reference cycle, so it need not be tracked, as CPython does not track such tuples:
    /// collections never traverse it (a page of millions of hits would otherwise make
    /// collections of seconds, in which signals wait too).
    #[inline(always)]
    pub fn make_array<'py, const M: usize>(
        &'static self,
        py: Python<'py>,
        values: [Bound<'py, PyAny>; M],
        tracked: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        debug_assert!(M <= self.fields.len() && M >= self.visible.min(M));
        // The references are handed to the record (or released when no instance can be made).
        let values = std::mem::ManuallyDrop::new(values);
        // SAFETY: as in `make`; each of `values` is stored once, its reference owned by
        // the record from then on.
        unsafe {
            let (obj, reused) = match self.instance(py) {
                Ok(made) => made,
                Err(e) => {
                    drop(std::mem::ManuallyDrop::into_inner(values));
                    return Err(e);
                }
            };
            let items = tuple_items(obj);
            for (i, v) in values.iter().enumerate() {
                if i < self.fields.len() {
                    *items.add(i) = v.as_ptr();
                } else {
                    ffi::Py_DECREF(v.as_ptr()); // (never: M is at most the fields')
                }
            }
            Ok(self.finish(py, obj, M.min(self.fields.len()), reused, tracked))
        }
    }

    /// A new instance, its fields NULL (the type made on first use).
    #[cold]
    #[inline(never)]
    fn alloc(&'static self, py: Python<'_>) -> PyResult<*mut ffi::PyObject> {
        let ty = self.ty_object(py)?;
        // SAFETY: `ty` is a record type of `fields.len()` items; a new object or NULL with an
        // exception set.
        let obj = unsafe {
            ffi::PyType_GenericAlloc(ty.as_ptr().cast(), self.fields.len() as ffi::Py_ssize_t)
        };
        if obj.is_null() {
            Err(PyErr::fetch(py))
        } else {
            Ok(obj)
        }
    }
}

/// Whether `item` is an exact str, int, float, bytes or bool, or None: an object that holds no
/// reference to another.
pub fn is_atomic(item: &Bound<'_, PyAny>) -> bool {
    let item = item.as_ptr();
    // SAFETY: a live object (a `Bound`), the GIL held; the type objects are static.
    let ty = unsafe { ffi::Py_TYPE(item) };
    ty == &raw mut ffi::PyUnicode_Type
        || ty == &raw mut ffi::PyLong_Type
        || ty == &raw mut ffi::PyFloat_Type
        || ty == &raw mut ffi::PyBytes_Type
        || ty == &raw mut ffi::PyBool_Type
        // SAFETY: as above.
        || item == unsafe { ffi::Py_None() }
}

/// The getter of field `closure` (its index): the field, or None where it is NULL.
///
/// # Safety
/// Called by Python with a record of this getter's type; `closure` is the field's index.
unsafe extern "C" fn get_field(
    obj: *mut ffi::PyObject,
    closure: *mut std::ffi::c_void,
) -> *mut ffi::PyObject {
    let item = *tuple_items(obj).add(closure as usize);
    let item = if item.is_null() { ffi::Py_None() } else { item };
    ffi::Py_INCREF(item);
    item
}

/// tp_dealloc: untracked, every field released (not only the visible ones), freed.
///
/// # Safety
/// Called by Python on a record of `N` fields whose last reference is gone.
unsafe extern "C" fn dealloc<const N: usize>(obj: *mut ffi::PyObject) {
    // SAFETY (of every operation below): `obj` is a live record of `N` fields, GC-tracked, made
    // by `Spec::make`; its fields are NULL or owned references.
    let ty = ffi::Py_TYPE(obj);
    ffi::PyObject_GC_UnTrack(obj.cast());
    let items = tuple_items(obj);
    for i in 0..N {
        let item = *items.add(i);
        if !item.is_null() {
            *items.add(i) = std::ptr::null_mut();
            ffi::Py_DECREF(item);
        }
    }
    // Kept for reuse (with its reference to the type) while its type's free list has room.
    let spec = SPECS
        .iter()
        .find(|s| s.type_ptr.load(Ordering::Acquire) == ty);
    // CPython calls tp_dealloc with the GIL held.
    if spec.is_some_and(|s| s.free.push(obj as usize)) {
        return;
    }
    // SAFETY: the Py_tp_free slot of a type is always set (inherited from object at worst) and
    // holds a `freefunc`.
    let free: ffi::freefunc = std::mem::transmute(ffi::PyType_GetSlot(ty, ffi::Py_tp_free));
    free(obj.cast());
    ffi::Py_DECREF(ty.cast());
}

/// tp_traverse: every field, and the (heap) type.
///
/// # Safety
/// Called by Python's cyclic GC on a record of `N` fields.
unsafe extern "C" fn traverse<const N: usize>(
    obj: *mut ffi::PyObject,
    visit: ffi::visitproc,
    arg: *mut std::ffi::c_void,
) -> std::ffi::c_int {
    // SAFETY: `obj` is a record of `N` fields, each NULL or a live object, as `visit` needs.
    let items = tuple_items(obj);
    for i in 0..N {
        let item = *items.add(i);
        if !item.is_null() {
            let r = visit(item, arg);
            if r != 0 {
                return r;
            }
        }
    }
    visit(ffi::Py_TYPE(obj).cast(), arg)
}

/// tuple's tp_richcompare where the running Python lets a static type's slot be read (3.10+;
/// CPython 3.9's `PyType_GetSlot` refuses static types with a SystemError), else
/// [`richcompare_as_tuple`].
fn tuple_richcompare() -> *mut std::ffi::c_void {
    // SAFETY: reading a slot of a static type, GIL held (called while making a type); a NULL
    // result comes with an exception, cleared here.
    unsafe {
        let slot = ffi::PyType_GetSlot(&raw mut ffi::PyTuple_Type, ffi::Py_tp_richcompare);
        if slot.is_null() {
            ffi::PyErr_Clear();
            richcompare_as_tuple as *mut _
        } else {
            slot
        }
    }
}

/// tp_richcompare on CPython 3.9: the visible fields as a plain tuple, compared.
///
/// # Safety
/// Called by Python on a record, GIL held.
unsafe extern "C" fn richcompare_as_tuple(
    obj: *mut ffi::PyObject,
    other: *mut ffi::PyObject,
    op: std::ffi::c_int,
) -> *mut ffi::PyObject {
    let plain = ffi::PySequence_Tuple(obj);
    if plain.is_null() {
        return std::ptr::null_mut();
    }
    let result = ffi::PyObject_RichCompare(plain, other, op);
    ffi::Py_DECREF(plain);
    result
}

/// tp_hash: the hash of the visible fields as a plain tuple (what a tuple equal to it hashes
/// to).
///
/// # Safety
/// Called by Python on a record, GIL held.
unsafe extern "C" fn hash(obj: *mut ffi::PyObject) -> ffi::Py_hash_t {
    // SAFETY: `obj` is a live record (a tuple), GIL held; `plain` is a new reference or NULL with
    // an exception set, released once hashed.
    let plain = ffi::PySequence_Tuple(obj);
    if plain.is_null() {
        return -1;
    }
    let h = ffi::PyObject_Hash(plain);
    ffi::Py_DECREF(plain);
    h
}

/// tp_new until `rankfusion._results` gives the type its constructor (`__new__`): tuple's would
/// make an instance without room for the fields after the tuple's.
///
/// # Safety
/// Called by Python, GIL held.
unsafe extern "C" fn not_ready(
    _: *mut ffi::PyTypeObject,
    _: *mut ffi::PyObject,
    _: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    ffi::PyErr_SetString(
        ffi::PyExc_TypeError,
        c"the result types are made by rankfusion's constructors (import rankfusion)".as_ptr(),
    );
    std::ptr::null_mut()
}

/// The result of type `cls` (a result type) with these fields, as they are: the checked
/// constructor's last step (`Hit(...)`, rankfusion/_results.py). Fields left out are None.
#[pyfunction]
fn _result<'py>(
    cls: &Bound<'py, PyType>,
    fields: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let Some(spec) = SPECS
        .iter()
        .find(|s| s.type_ptr.load(Ordering::Acquire) == cls.as_ptr().cast())
    else {
        return Err(PyTypeError::new_err(format!(
            "{} is not a result type",
            cls.repr()?
        )));
    };
    let fields = fields.try_iter()?.collect::<PyResult<Vec<_>>>()?;
    if fields.len() > spec.fields.len() {
        return Err(PyTypeError::new_err(format!(
            "{} has {} fields, not {}",
            spec.name.to_str().unwrap_or_default(),
            spec.fields.len(),
            fields.len()
        )));
    }
    spec.make(py, fields)
}

/// A real field of a result (`Hit.score`) as a float: the binding's conversion of a real, for
/// the constructors of rankfusion/_results.py.
#[pyfunction]
fn _real(value: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    Ok(real(value, name)?)
}

/// A count field of a result (`Contribution.rank`): an int >= 0, kept as given.
#[pyfunction]
fn _count<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    integer(value, name, 0)?;
    Ok(value.clone())
}

/// A tuple field of a result (`Hit.contributions`): any iterable but a str, as a tuple.
#[pyfunction]
fn _tuple<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyTuple>> {
    Ok(as_tuple(value, name)?)
}

/// The shapes of a batch result's arrays, as `crate::batch::check_result_shapes` checks them
/// (`traced`: (name, shape) of each trace array given).
#[pyfunction]
fn _result_shapes(
    ids: Vec<usize>,
    scores: Vec<usize>,
    counts: Vec<usize>,
    traced: Vec<(String, Vec<usize>)>,
) -> PyResult<()> {
    let traced: Vec<(&str, &[usize])> = traced
        .iter()
        .map(|(name, shape)| (name.as_str(), shape.as_slice()))
        .collect();
    crate::batch::check_result_shapes(&ids, &scores, &counts, &traced)
        .map_err(PyValueError::new_err)
}

/// Adds every result type to the module, and the functions of their constructors.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for spec in SPECS {
        m.add(spec.name.to_str().unwrap_or_default(), spec.ty(m.py())?)?;
    }
    m.add_function(wrap_pyfunction!(_result, m)?)?;
    m.add_function(wrap_pyfunction!(_real, m)?)?;
    m.add_function(wrap_pyfunction!(_count, m)?)?;
    m.add_function(wrap_pyfunction!(_tuple, m)?)?;
    m.add_function(wrap_pyfunction!(_result_shapes, m)?)
}
