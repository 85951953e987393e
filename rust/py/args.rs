//! Python values -> Rust values, with the reference's types and messages (`_reference.py`): a
//! value of the wrong type is our `TypeError` naming the argument (`super::errors`), a number
//! that does not fit our `ValueError`. What the values must be is the core's to check.

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use pyo3::{ffi, intern, Borrowed};

use super::errors::Bad;
use super::layout::{float_value, tuple_items};
use crate::error::{check_pair, Error};
use crate::fusion::params::{self, Duplicates, Integer, TieBreak};
use crate::fusion::{Method, Norm};
use crate::trec::{Order, ReadDuplicates};

/// A keyword argument that tells "not given" (use the default) from an explicit `None`.
pub enum Arg<'py> {
    Missing,
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Arg<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Self::Error> {
        Ok(Arg::Given(obj.to_owned()))
    }
}

impl<'py> Arg<'py> {
    /// The argument converted by `f`, or `default` when it was not given.
    pub fn or<T>(
        self,
        default: T,
        f: impl FnOnce(&Bound<'py, PyAny>) -> PyResult<T>,
    ) -> PyResult<T> {
        match self {
            Arg::Missing => Ok(default),
            Arg::Given(v) => f(&v),
        }
    }
}

/// `type(value).__name__`, for messages.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// `type(value).__name__ + " " + repr(value)`, for messages.
pub fn describe(value: &Bound<'_, PyAny>) -> String {
    format!("{} {}", type_name(value), repr(value))
}

/// The module `name` when it has been imported (`sys.modules[name]`), without importing it:
/// none of its objects exists before.
pub fn imported<'py>(py: Python<'py>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    static SYS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let sys = SYS.get_or_try_init(py, || py.import("sys").map(Bound::unbind))?;
    let modules = sys.bind(py).getattr(intern!(py, "modules"))?;
    modules.cast_into::<PyDict>()?.get_item(name)
}

/// `collections.abc.Mapping`.
pub fn mapping_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static MAPPING: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    MAPPING.import(py, "collections.abc", "Mapping")
}

pub fn repr(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unrepresentable>".into())
}

/// The items of an exact tuple, read in place (under the stable ABI, pyo3 reads each one through
/// a call of `PyTuple_GetItem`).
#[inline]
pub fn items<'a, 'py>(tuple: &'a Bound<'py, PyTuple>) -> &'a [Bound<'py, PyAny>] {
    // SAFETY: the module's types were made at import, so the offset of a tuple's items is known
    // (`layout::tuple_items`); a tuple's `len()` items start there and never change, and a
    // `Bound<PyAny>` has the layout of an object pointer.
    unsafe { std::slice::from_raw_parts(tuple_items(tuple.as_ptr()).cast(), tuple.len()) }
}

/// An exact tuple of two items (a candidate `(id, score)`), made by [`pair_of`].
pub struct Pair<'a, 'py>(&'a [Bound<'py, PyAny>]);

impl<'a, 'py> Pair<'a, 'py> {
    #[inline]
    pub fn id(&self) -> &'a Bound<'py, PyAny> {
        &self.0[0]
    }

    #[inline]
    pub fn score(&self) -> &'a Bound<'py, PyAny> {
        &self.0[1]
    }
}

/// `value` as a [`Pair`] when it is an exact tuple of two items.
#[inline]
pub fn pair_of<'a, 'py>(value: &'a Bound<'py, PyAny>) -> Option<Pair<'a, 'py>> {
    let items = items(value.cast_exact::<PyTuple>().ok()?);
    (items.len() == 2).then_some(Pair(items))
}

/// `value` as a pair: an exact 2-tuple read in place, else any iterable of two items but a
/// str/bytes (a candidate of `revalidate`, an item of `boost.items()`); anything else is
/// `not_a_pair(got, wrong_type)`, `got` its type and repr or its number of items.
pub fn two_items<'py>(
    value: &Bound<'py, PyAny>,
    not_a_pair: impl Fn(&str, bool) -> Error,
) -> Result<(Bound<'py, PyAny>, Bound<'py, PyAny>), Bad> {
    if let Some(pair) = pair_of(value) {
        return Ok((pair.id().to_owned(), pair.score().to_owned()));
    }
    let items = items_of(value, |_| not_a_pair(&describe(value), true).into())?;
    check_pair(items.len(), not_a_pair)?;
    Ok((items.get_item(0)?, items.get_item(1)?))
}

/// [`as_tuple`] for a value read only by this call: a tuple made here (a copy of a list, say)
/// is taken out of the cyclic collector's sight (`gc::untrack_own`), so that the collections
/// that run while the call makes objects do not walk its items. The caller's own tuple is
/// returned as it is. Its name is made only for an error (`name()`: `lists[3]`).
pub fn private_tuple<'py>(
    value: &Bound<'py, PyAny>,
    name: impl Fn() -> String,
) -> Result<Bound<'py, PyTuple>, Bad> {
    let tuple = items_of(value, |string| not_iterable(value, &name(), string))?;
    if !tuple.is(value) {
        super::gc::untrack_own(&tuple);
    }
    Ok(tuple)
}

/// Any iterable but str/bytes/bytearray, as a tuple (the input is never modified, and a tuple
/// cannot change under us while the core works). Errors from the iteration itself propagate.
pub fn as_tuple<'py>(value: &Bound<'py, PyAny>, name: &str) -> Result<Bound<'py, PyTuple>, Bad> {
    items_of(value, |string| not_iterable(value, name, string))
}

/// The error of a value named `name` that is a string, or not iterable.
#[cold]
fn not_iterable(value: &Bound<'_, PyAny>, name: &str, string: bool) -> Bad {
    let what = if string {
        "a non-string iterable"
    } else {
        "iterable"
    };
    Error::named(
        name,
        true,
        format!("{name} must be {what}, got {}", describe(value)),
    )
    .into()
}

/// [`as_tuple`] with the error `refused(is_a_string)` for a str/bytes/bytearray or a value that
/// is not iterable.
pub fn items_of<'py>(
    value: &Bound<'py, PyAny>,
    refused: impl Fn(bool) -> Bad,
) -> Result<Bound<'py, PyTuple>, Bad> {
    if let Ok(t) = value.cast_exact::<PyTuple>() {
        return Ok(t.clone());
    }
    if let Ok(l) = value.cast_exact::<PyList>() {
        return Ok(l.to_tuple());
    }
    if value.is_instance_of::<PyString>()
        || value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>()
    {
        return Err(refused(true));
    }
    let iterator = value.try_iter().map_err(|e| {
        if e.is_instance_of::<PyTypeError>(value.py()) {
            refused(false)
        } else {
            Bad::Raised(e)
        }
    })?;
    let items = PyList::empty(value.py());
    for item in iterator {
        items.append(item?)?;
    }
    Ok(items.to_tuple())
}

fn real_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static REAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    REAL.import(py, "numbers", "Real")
}

/// The value of an exact float, or of an exact int that a float holds (`float(x)`, no
/// overflow), read without running any Python code; None for any other item (which
/// [`real`] converts, naming it in its errors).
#[inline]
pub fn plain_real(x: &Bound<'_, PyAny>) -> Option<f64> {
    if let Ok(f) = x.cast_exact::<PyFloat>() {
        return Some(float_value(f));
    }
    if !x.is_exact_instance_of::<PyInt>() {
        return None;
    }
    // SAFETY: an exact int, the GIL held: `int.__float__`'s conversion, -1.0 with an exception
    // set when it overflows.
    unless_failed(x.py(), unsafe { ffi::PyLong_AsDouble(x.as_ptr()) })
}

/// `v`, a C conversion's result, unless it is -1.0 with an exception set: its failure (then
/// None, the exception cleared).
fn unless_failed(py: Python<'_>, v: f64) -> Option<f64> {
    if v == -1.0 && PyErr::take(py).is_some() {
        return None;
    }
    Some(v)
}

/// numpy's own integer and float scalar types (float64/32/16, int8..int64, uint8..uint64), once
/// numpy is imported (no instance of them exists before): None until then.
fn numpy_scalar_types(py: Python<'_>) -> Option<&[Py<PyType>]> {
    static TYPES: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();
    if let Some(types) = TYPES.get(py) {
        return Some(types);
    }
    let numpy = imported(py, "numpy").ok()??;
    let names = [
        "float64", "float32", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
        "uint32", "uint64",
    ];
    let types: PyResult<Vec<_>> = names
        .iter()
        .map(|name| Ok(numpy.getattr(*name)?.cast_into::<PyType>()?.unbind()))
        .collect();
    let types = types.ok()?; // (numpy still being imported: asked again next time)
    Some(TYPES.get_or_init(py, || types))
}

/// Whether `x` is an instance of one of numpy's own integer and float scalar types (not of a
/// subclass): real numbers whose `float(x)` is numpy's C conversion, and hashable.
pub fn is_numpy_scalar(x: &Bound<'_, PyAny>) -> bool {
    let ty = x.get_type();
    numpy_scalar_types(x.py()).is_some_and(|types| types.iter().any(|t| t.is(&ty)))
}

/// [`plain_real`], or the value of a numpy integer or float scalar ([`is_numpy_scalar`]) as
/// `float(x)` gives it (numpy's C conversion; no Python code of the caller's runs); None for
/// any other value.
#[inline]
fn known_real(x: &Bound<'_, PyAny>) -> Option<f64> {
    if let Some(v) = plain_real(x) {
        return Some(v);
    }
    if !is_numpy_scalar(x) {
        return None;
    }
    // SAFETY: a numpy scalar, the GIL held: its `__float__`, -1.0 with an exception set if it
    // fails.
    unless_failed(x.py(), unsafe { ffi::PyFloat_AsDouble(x.as_ptr()) })
}

/// A real number (int, float, numpy scalar, Fraction...; not bool) as a float64, like the
/// reference's `_real`: a conversion that overflows is a ValueError; NaN and infinities are
/// returned (the core's checks reject them where they must be finite).
pub fn real(value: &Bound<'_, PyAny>, name: &str) -> Result<f64, Bad> {
    real_named(value, || name.to_owned())
}

/// [`real`] of an item among many, its name made only when it is not a float, an int or a
/// numpy scalar (`name()`: `scores[0][3]`).
pub fn real_named(value: &Bound<'_, PyAny>, name: impl FnOnce() -> String) -> Result<f64, Bad> {
    if let Some(x) = known_real(value) {
        return Ok(x);
    }
    let name = &name();
    let py = value.py();
    if value.is_instance_of::<PyBool>() || !value.is_instance(real_type(py)?)? {
        return Err(Error::named(
            name,
            true,
            format!("{name} must be a real number, got {}", describe(value)),
        )
        .into());
    }
    let converted = if value.is_exact_instance_of::<PyInt>() {
        value.extract::<f64>()
    } else {
        py.get_type::<PyFloat>()
            .call1((value,))
            .and_then(|f| f.extract::<f64>())
    };
    converted.map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(py) {
            Error::named(
                name,
                false,
                format!("{name} must be finite, got {}", repr(value)),
            )
            .into()
        } else {
            Bad::Raised(e)
        }
    })
}

/// An integer (anything with `__index__`, not bool) as a Python int, like the reference's
/// `operator.index` after its type check.
pub fn index<'py>(value: &Bound<'py, PyAny>, name: &str) -> Result<Bound<'py, PyAny>, Bad> {
    // SAFETY: a valid object pointer, GIL held.
    let has_index = unsafe { ffi::PyIndex_Check(value.as_ptr()) } != 0;
    if value.is_instance_of::<PyBool>() || !has_index {
        return Err(Error::named(
            name,
            true,
            format!("{name} must be an int, got {}", describe(value)),
        )
        .into());
    }
    // SAFETY: as above; PyNumber_Index returns a new reference or NULL with an exception set.
    Ok(unsafe { Bound::from_owned_ptr_or_err(value.py(), ffi::PyNumber_Index(value.as_ptr())) }?)
}

/// An integer (anything with `__index__`, not bool) that is >= `minimum`, saturated to
/// `usize::MAX` when it is larger than any length ("no bound"): `params::count`.
pub fn integer(value: &Bound<'_, PyAny>, name: &str, minimum: i64) -> Result<usize, Bad> {
    Ok(params::count(name, integer_setting(value, name)?, minimum)?)
}

/// An integer setting (anything with `__index__`, not bool), for the core to check: its value
/// saturated to i64, and its digits when it did not fit.
pub fn integer_setting(value: &Bound<'_, PyAny>, name: &str) -> Result<Integer, Bad> {
    let n = index(value, name)?;
    Ok(match n.extract::<i64>() {
        Ok(value) => Integer::from(value),
        Err(_) => Integer {
            value: if n.lt(0)? { i64::MIN } else { i64::MAX },
            digits: Some(repr(&n)),
        },
    })
}

/// An integer (anything with `__index__`, not bool) that fits in int64: `params::int64`.
pub fn int64(value: &Bound<'_, PyAny>, name: &str) -> Result<i64, Bad> {
    Ok(params::int64(name, integer_setting(value, name)?)?)
}

/// True or False: a `bool`, or a numpy bool (`numpy.bool_`: an item of a bool array).
pub fn flag(value: &Bound<'_, PyAny>, name: &str) -> Result<bool, Bad> {
    if let Ok(b) = value.cast_exact::<PyBool>() {
        return Ok(b.is_true());
    }
    static NUMPY_BOOL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let py = value.py();
    // (The type is `numpy.bool` in numpy 2, `numpy.bool_` in numpy 1: numpy is imported only
    // for a value that may be one.)
    if value
        .get_type()
        .name()
        .is_ok_and(|n| n == "bool" || n == "bool_")
        && value.is_exact_instance(NUMPY_BOOL.import(py, "numpy", "bool_")?)
    {
        return Ok(value.is_truthy()?);
    }
    Err(Error::named(
        name,
        true,
        format!("{name} must be True or False, got {}", describe(value)),
    )
    .into())
}

/// A choice argument: one of `names` (a str); a non-str is a TypeError, another str a
/// ValueError (`params::not_one_of`).
pub fn choice<'n, T>(
    value: Borrowed<'_, '_, PyAny>,
    name: &str,
    names: impl IntoIterator<Item = &'n str>,
    from_name: impl Fn(&str) -> Option<T>,
) -> Result<T, Bad> {
    let value = value.to_owned();
    let Ok(s) = value.cast::<PyString>() else {
        return Err(params::not_one_of(name, names, &describe(&value), true).into());
    };
    match from_name(&s.to_cow()?) {
        Some(v) => Ok(v),
        None => Err(params::not_one_of(name, names, &repr(&value), false).into()),
    }
}

macro_rules! choice_argument {
    ($type:ty, $name:literal, $names:expr, $from_name:expr) => {
        impl<'a, 'py> FromPyObject<'a, 'py> for $type {
            type Error = Bad;

            fn extract(obj: Borrowed<'a, 'py, PyAny>) -> Result<Self, Bad> {
                choice(obj, $name, $names, $from_name)
            }
        }
    };
}

choice_argument!(
    Duplicates,
    "duplicates",
    Duplicates::NAMES,
    Duplicates::from_name
);
choice_argument!(TieBreak, "tie_break", TieBreak::NAMES, TieBreak::from_name);
choice_argument!(Method, "method", Method::names(), Method::from_name);
choice_argument!(Norm, "norm", Norm::names(), Norm::from_name);
choice_argument!(Order, "order", Order::NAMES, Order::from_name);
choice_argument!(
    ReadDuplicates,
    "duplicates",
    ReadDuplicates::NAMES,
    ReadDuplicates::from_name
);
