//! Argument extraction with the reference's checks, messages and order (`_reference.py`).

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use pyo3::{ffi, Borrowed};

use crate::fusion::{self, Duplicates, Params, TieBreak};

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

/// `type(value).__name__ + " " + repr(value)`, for messages.
pub fn describe(value: &Bound<'_, PyAny>) -> String {
    let name = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    format!("{name} {}", repr(value))
}

pub fn repr(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unrepresentable>".into())
}

/// Any iterable but str/bytes/bytearray, as a tuple (the input is never modified, and a tuple
/// cannot change under us while the core works). Errors from the iteration itself propagate.
pub fn as_tuple<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyTuple>> {
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
        return Err(PyTypeError::new_err(format!(
            "{name} must be a non-string iterable, got {}",
            describe(value)
        )));
    }
    let iterator = value.try_iter().map_err(|e| {
        if e.is_instance_of::<PyTypeError>(value.py()) {
            PyTypeError::new_err(format!("{name} must be iterable, got {}", describe(value)))
        } else {
            e
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

/// A real number (int, float, numpy scalar, Fraction...; not bool) as a float64, like the
/// reference's `_real`: an overflowing conversion is a ValueError, and with `finite` so is
/// NaN or infinity.
pub fn real(value: &Bound<'_, PyAny>, name: &str, finite: bool) -> PyResult<f64> {
    let py = value.py();
    let x = if let Ok(f) = value.cast_exact::<PyFloat>() {
        f.value()
    } else {
        if value.is_instance_of::<PyBool>() || !value.is_instance(real_type(py)?)? {
            return Err(PyTypeError::new_err(format!(
                "{name} must be a real number, got {}",
                describe(value)
            )));
        }
        let converted = if value.is_exact_instance_of::<PyInt>() {
            value.extract::<f64>()
        } else {
            py.get_type::<PyFloat>()
                .call1((value,))
                .and_then(|f| f.extract::<f64>())
        };
        match converted {
            Ok(x) => x,
            Err(e) if e.is_instance_of::<PyOverflowError>(py) => {
                return Err(PyValueError::new_err(format!(
                    "{name} must be finite, got {}",
                    repr(value)
                )))
            }
            Err(e) => return Err(e),
        }
    };
    if finite && !x.is_finite() {
        return Err(PyValueError::new_err(format!(
            "{name} must be finite, got {}",
            repr(value)
        )));
    }
    Ok(x)
}

/// An integer (anything with `__index__`, not bool) as a Python int, like the reference's
/// `operator.index` after its type check.
pub fn index<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: a valid object pointer, GIL held.
    let has_index = unsafe { ffi::PyIndex_Check(value.as_ptr()) } != 0;
    if value.is_instance_of::<PyBool>() || !has_index {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, got {}",
            describe(value)
        )));
    }
    // SAFETY: as above; PyNumber_Index returns a new reference or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(value.py(), ffi::PyNumber_Index(value.as_ptr())) }
}

/// An integer (anything with `__index__`, not bool) that is >= `minimum`, saturated to
/// `usize::MAX` when it is larger than any length.
pub fn integer(value: &Bound<'_, PyAny>, name: &str, minimum: i64) -> PyResult<usize> {
    let n = index(value, name)?;
    match n.extract::<i64>() {
        Ok(v) if v >= minimum => Ok(usize::try_from(v).unwrap_or(usize::MAX)),
        Ok(_) => Err(below_minimum(name, minimum, &n)),
        Err(_) => {
            // Beyond i64: huge positive means "no bound"; huge negative is below the minimum.
            if n.lt(0)? {
                Err(below_minimum(name, minimum, &n))
            } else {
                Ok(usize::MAX)
            }
        }
    }
}

fn below_minimum(name: &str, minimum: i64, n: &Bound<'_, PyAny>) -> PyErr {
    PyValueError::new_err(format!("{name} must be >= {minimum}, got {}", repr(n)))
}

/// One of `choices` (a str); a non-str is a TypeError, another str a ValueError.
pub fn choice<'c>(value: &Bound<'_, PyAny>, name: &str, choices: &[&'c str]) -> PyResult<&'c str> {
    let listed = format!(
        "({})",
        choices
            .iter()
            .map(|c| format!("'{c}'"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let Ok(s) = value.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be one of {listed}, got {}",
            describe(value)
        )));
    };
    let text = s.to_cow()?;
    choices
        .iter()
        .find(|c| **c == text)
        .copied()
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{name} must be one of {listed}, got {}",
                repr(value)
            ))
        })
}

/// Exactly True or False.
pub fn flag(value: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    match value.cast_exact::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name} must be True or False, got {}",
            describe(value)
        ))),
    }
}

/// A keyword flag (`normalize=`, `trace=`): False when not given, else exactly True or False.
pub fn optional_flag(value: Arg<'_>, name: &str) -> PyResult<bool> {
    match value {
        Arg::Missing => Ok(false),
        Arg::Given(v) => flag(&v, name),
    }
}

/// An integer (anything with `__index__`, not bool) that fits in int64, like the reference's
/// `_int64`.
pub fn int64(value: &Bound<'_, PyAny>, name: &str) -> PyResult<i64> {
    let py = value.py();
    // SAFETY: a valid object pointer, GIL held.
    let has_index = unsafe { ffi::PyIndex_Check(value.as_ptr()) } != 0;
    if value.is_instance_of::<PyBool>() || !has_index {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, got {}",
            describe(value)
        )));
    }
    // SAFETY: as above; PyNumber_Index returns a new reference or NULL with an exception set.
    let n = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyNumber_Index(value.as_ptr()))? };
    n.extract::<i64>().map_err(|_| {
        if n.lt(0).unwrap_or(false) {
            PyValueError::new_err(format!("{name} must be >= {}, got {}", i64::MIN, repr(&n)))
        } else {
            PyValueError::new_err(format!("{name} must fit in int64, got {}", repr(&n)))
        }
    })
}

/// The keyword arguments rrf_batch and rrf_many share with rrf (k .. normalize), checked in the
/// reference's order. `n_lists`: the number of lists `weights` must match (rrf_batch), or None
/// when it is checked per query (rrf_many).
#[allow(clippy::too_many_arguments)]
pub fn shared_params(
    k: Arg<'_>,
    weights: Option<Bound<'_, PyAny>>,
    n_lists: Option<usize>,
    window: Option<Bound<'_, PyAny>>,
    duplicates: Arg<'_>,
    tie_break: Arg<'_>,
    offset: Arg<'_>,
    limit: Option<Bound<'_, PyAny>>,
    min_score: Option<Bound<'_, PyAny>>,
    normalize: Arg<'_>,
) -> PyResult<Params> {
    let k = match k {
        Arg::Missing => 60.0,
        Arg::Given(v) => {
            let k = real(&v, "k", true)?;
            if k < 0.0 {
                return Err(PyValueError::new_err(format!(
                    "k must be >= 0, got {}",
                    k.into_pyobject(v.py())?.repr()?
                )));
            }
            k
        }
    };
    let weights = match weights {
        None => None,
        Some(w) => {
            let w = as_tuple(&w, "weights")?;
            if let Some(n) = n_lists {
                fusion::check_weights_len(w.len(), n)?;
            }
            Some(
                w.iter()
                    .enumerate()
                    .map(|(i, x)| real(&x, &format!("weights[{i}]"), true))
                    .collect::<PyResult<Vec<f64>>>()?,
            )
        }
    };
    let window = window.map(|w| integer(&w, "window", 1)).transpose()?;
    let duplicates = match duplicates {
        Arg::Missing => Duplicates::First,
        Arg::Given(v) => Duplicates::parse(choice(&v, "duplicates", &["first", "sum", "error"])?)
            .unwrap_or(Duplicates::First),
    };
    let tie_break = match tie_break {
        Arg::Missing => TieBreak::BestRank,
        Arg::Given(v) => TieBreak::parse(choice(&v, "tie_break", &["best_rank", "key"])?)
            .unwrap_or(TieBreak::BestRank),
    };
    let offset = match offset {
        Arg::Missing => 0,
        Arg::Given(v) => integer(&v, "offset", 0)?,
    };
    let limit = limit.map(|l| integer(&l, "limit", 0)).transpose()?;
    let min_score = min_score.map(|m| real(&m, "min_score", true)).transpose()?;
    let normalize = optional_flag(normalize, "normalize")?;
    if normalize {
        // Checked here, in the reference's order, when the weights are known.
        match (&weights, n_lists) {
            (Some(w), _) => fusion::normalizer(w, k).map(drop)?,
            (None, Some(n)) => fusion::normalizer(&vec![1.0; n], k).map(drop)?,
            (None, None) => {}
        }
    }
    Ok(Params {
        k,
        weights,
        window,
        duplicates,
        tie_break,
        offset,
        limit,
        min_score,
        normalize,
    })
}
