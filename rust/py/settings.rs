//! A fusion's settings from Python keyword arguments: each converted to its Rust type, or kept
//! as the conversion's error (a wrong type, an unknown name) for the core's checker to report in
//! its turn (`crate::fusion::params`). Written once for `Fusion(**settings)` and every function
//! that takes the settings (`rrf`, `fuse`, the batch functions, the command's and tables' paths).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString};

use super::args::{as_tuple, flag, integer_setting, real};
use super::errors::Bad;
use crate::error::Problem;
use crate::fusion::params::{Fusion, Given, Settings, RRF_SETTINGS, SETTINGS};

/// Settings being converted, and the exceptions the caller's own objects raised meanwhile (an
/// iterator, a `__float__`), each kept for the checker to reach in its turn
/// ([`Problem::Raised`]).
struct Converting {
    raised: Vec<PyErr>,
}

impl Converting {
    /// The value converted by `convert`; our conversion error kept as [`Given::Bad`], any other
    /// exception kept too, as [`Problem::Raised`] about `argument`. `None` is "not given" when
    /// `none_missing`.
    fn given<'py, T>(
        &mut self,
        value: &Bound<'py, PyAny>,
        argument: &str,
        none_missing: bool,
        convert: impl FnOnce(&Bound<'py, PyAny>, &mut Self) -> Result<T, Bad>,
    ) -> Given<T> {
        if none_missing && value.is_none() {
            return Given::Missing;
        }
        match convert(value, self) {
            Ok(v) => Given::Value(v),
            Err(Bad::Ours(e)) => Given::Bad(e),
            Err(Bad::Raised(e)) => {
                self.raised.push(e);
                Given::Bad(
                    Problem::Raised {
                        argument: argument.to_owned(),
                        index: self.raised.len() - 1,
                    }
                    .into(),
                )
            }
        }
    }

    /// A sequence setting: the sequence, and each item `exact` (an item of the exact type: a
    /// float, a bool) or converted by `convert(item, "name[i]")`.
    fn items<'py, T>(
        &mut self,
        value: &Bound<'py, PyAny>,
        name: &str,
        exact: impl Fn(&Bound<'py, PyAny>) -> Option<T>,
        convert: impl Fn(&Bound<'py, PyAny>, &str) -> Result<T, Bad>,
    ) -> Given<Vec<Given<T>>> {
        self.given(value, name, true, |v, this| {
            let tuple = as_tuple(v, name)?;
            Ok(tuple
                .iter()
                .enumerate()
                .map(|(i, x)| match exact(&x) {
                    Some(v) => Given::Value(v),
                    None => {
                        let item = format!("{name}[{i}]");
                        this.given(&x, &item, false, |x, _| convert(x, &item))
                    }
                })
                .collect())
        })
    }

    /// A plain setting converted by `convert(value, name)`.
    fn one<'py, T>(
        &mut self,
        value: &Bound<'py, PyAny>,
        name: &str,
        none_missing: bool,
        convert: impl FnOnce(&Bound<'py, PyAny>, &str) -> Result<T, Bad>,
    ) -> Given<T> {
        self.given(value, name, none_missing, |v, _| convert(v, name))
    }
}

/// The checked fusion of keyword arguments `kwargs` of `function` (its name, for Python's
/// message on an unexpected keyword), which accepts only `allowed` of them: every setting
/// converted, then checked by the core's one checker, which reports the first mistake in its
/// order — an exception the caller's own object raised while its setting was converted
/// included, raised as it was.
pub fn fusion_of(
    kwargs: Option<&Bound<'_, PyDict>>,
    allowed: &[&str],
    function: &str,
) -> PyResult<Fusion> {
    let mut c = Converting { raised: Vec::new() };
    let float = |x: &Bound<'_, PyAny>| x.cast_exact::<PyFloat>().ok().map(|f| f.value());
    let bool = |x: &Bound<'_, PyAny>| x.cast_exact::<PyBool>().ok().map(|b| b.is_true());
    let mut s = Settings::default();
    if let Some(kwargs) = kwargs {
        for (name, value) in kwargs.iter() {
            let name = name.cast_into::<PyString>()?;
            let name = name.to_cow()?;
            if !allowed.contains(&&*name) {
                return Err(PyTypeError::new_err(format!(
                    "{function}() got an unexpected keyword argument '{name}'"
                )));
            }
            let (v, n) = (&value, &*name);
            match n {
                "method" => s.method = c.one(v, n, false, |v, _| v.extract()),
                "norm" => s.norm = c.one(v, n, true, |v, _| v.extract()),
                "k" => s.k = c.one(v, n, false, real),
                "weights" => s.weights = c.items(v, n, float, real),
                "window" => s.window = c.one(v, n, true, integer_setting),
                "duplicates" => s.duplicates = c.one(v, n, false, |v, _| v.extract()),
                "tie_break" => s.tie_break = c.one(v, n, false, |v, _| v.extract()),
                "offset" => s.offset = c.one(v, n, false, integer_setting),
                "limit" => s.limit = c.one(v, n, true, integer_setting),
                "min_score" => s.min_score = c.one(v, n, true, real),
                "normalize" => s.normalize = c.one(v, n, false, flag),
                "lower_is_better" => s.lower_is_better = c.items(v, n, bool, flag),
                "phi" => s.phi = c.one(v, n, true, real),
                "gamma" => s.gamma = c.one(v, n, true, real),
                "sigma" => s.sigma = c.one(v, n, true, real),
                "boost_weight" => s.boost_weight = c.one(v, n, true, real),
                "trace" => s.trace = c.one(v, n, false, flag),
                _ => {}
            }
        }
    }
    s.check().map_err(|e| match e.problem {
        Problem::Raised { index, .. } if index < c.raised.len() => c.raised.swap_remove(index),
        _ => e.into(),
    })
}

/// Every setting of a fusion.
pub const ALL: &[&str] = &SETTINGS;
/// The settings of the RRF functions.
pub const RRF: &[&str] = &RRF_SETTINGS;
