//! A fusion's settings from Python keyword arguments: each converted to its Rust type, or kept
//! as the conversion's error (a wrong type, an unknown name) for the core's checker to report in
//! its turn (`crate::fusion::params`). Written once for `Fusion(**settings)` and every function
//! that takes the settings (`rrf`, `fuse`, the batch functions, the command's and tables' paths).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString};

use super::args::{as_tuple, flag, integer_setting, real};
use super::errors::core_of;
use crate::fusion::params::{Given, Settings, RRF_SETTINGS, SETTINGS};

/// The value converted by `convert`; our conversion error kept as [`Given::Bad`], any other
/// exception (raised by the caller's own object: an iterator, a `__float__`) raised at once.
/// `None` is "not given" when `none_missing`.
fn given<'py, T>(
    value: &Bound<'py, PyAny>,
    none_missing: bool,
    convert: impl FnOnce(&Bound<'py, PyAny>) -> PyResult<T>,
) -> PyResult<Given<T>> {
    if none_missing && value.is_none() {
        return Ok(Given::Missing);
    }
    match convert(value) {
        Ok(v) => Ok(Given::Value(v)),
        Err(e) => match core_of(value.py(), &e) {
            Some(error) => Ok(Given::Bad(error)),
            None => Err(e),
        },
    }
}

/// A sequence setting: the sequence, and each item `exact` (an item of the exact type: a float,
/// a bool) or converted by `convert(item, "name[i]")`.
fn items<'py, T>(
    value: &Bound<'py, PyAny>,
    name: &str,
    exact: impl Fn(&Bound<'py, PyAny>) -> Option<T>,
    convert: impl Fn(&Bound<'py, PyAny>, &str) -> PyResult<T>,
) -> PyResult<Given<Vec<Given<T>>>> {
    given(value, true, |v| {
        let tuple = as_tuple(v, name)?;
        let item = |(i, x): (usize, Bound<'py, PyAny>)| match exact(&x) {
            Some(v) => Ok(Given::Value(v)),
            None => given(&x, false, |x| convert(x, &format!("{name}[{i}]"))),
        };
        tuple.iter().enumerate().map(item).collect()
    })
}

/// The settings among keyword arguments `kwargs` of `function` (its name, for Python's message
/// on an unexpected keyword), which accepts only `allowed` of them.
pub fn settings_of(
    kwargs: Option<&Bound<'_, PyDict>>,
    allowed: &[&str],
    function: &str,
) -> PyResult<Settings> {
    let mut s = Settings::default();
    let Some(kwargs) = kwargs else {
        return Ok(s);
    };
    for (name, value) in kwargs.iter() {
        let name = name.cast_into::<PyString>()?;
        let name = name.to_cow()?;
        if !allowed.contains(&&*name) {
            return Err(PyTypeError::new_err(format!(
                "{function}() got an unexpected keyword argument '{name}'"
            )));
        }
        let v = &value;
        match &*name {
            "method" => s.method = given(v, false, |v| v.extract())?,
            "norm" => s.norm = given(v, true, |v| v.extract())?,
            "k" => s.k = given(v, false, |v| real(v, "k"))?,
            "weights" => {
                let float =
                    |x: &Bound<'_, PyAny>| x.cast_exact::<PyFloat>().ok().map(|f| f.value());
                s.weights = items(v, "weights", float, real)?
            }
            "window" => s.window = given(v, true, |v| integer_setting(v, "window"))?,
            "duplicates" => s.duplicates = given(v, false, |v| v.extract())?,
            "tie_break" => s.tie_break = given(v, false, |v| v.extract())?,
            "offset" => s.offset = given(v, false, |v| integer_setting(v, "offset"))?,
            "limit" => s.limit = given(v, true, |v| integer_setting(v, "limit"))?,
            "min_score" => s.min_score = given(v, true, |v| real(v, "min_score"))?,
            "normalize" => s.normalize = given(v, false, |v| flag(v, "normalize"))?,
            "lower_is_better" => {
                let bool =
                    |x: &Bound<'_, PyAny>| x.cast_exact::<PyBool>().ok().map(|b| b.is_true());
                s.lower_is_better = items(v, "lower_is_better", bool, flag)?
            }
            "phi" => s.phi = given(v, true, |v| real(v, "phi"))?,
            "gamma" => s.gamma = given(v, true, |v| real(v, "gamma"))?,
            "sigma" => s.sigma = given(v, true, |v| real(v, "sigma"))?,
            "boost_weight" => s.boost_weight = given(v, true, |v| real(v, "boost_weight"))?,
            "trace" => s.trace = given(v, false, |v| flag(v, "trace"))?,
            _ => {}
        }
    }
    Ok(s)
}

/// Every setting of a fusion.
pub const ALL: &[&str] = &SETTINGS;
/// The settings of the RRF functions.
pub const RRF: &[&str] = &RRF_SETTINGS;
