//! Python arguments -> Rust values, with the reference's types, messages and order
//! (`_reference.py`): conversions raise TypeError here; values are checked by the core's
//! one-per-argument checks (`crate::fusion::params`), called in signature order.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use pyo3::{ffi, Borrowed};

use crate::fusion::params::{self, Duplicates, Method, Norm, Params, TieBreak};
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

/// [`as_tuple`] for a value read only by this call: a tuple made here (a copy of a list, say)
/// is taken out of the cyclic collector's sight (`gc::untrack_own`), so that the collections
/// that run while the call makes objects do not walk its items. The caller's own tuple is
/// returned as it is.
pub fn private_tuple<'py>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyTuple>> {
    let tuple = as_tuple(value, name)?;
    if !tuple.is(value) {
        super::gc::untrack_own(&tuple);
    }
    Ok(tuple)
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
/// reference's `_real`: a conversion that overflows is a ValueError; NaN and infinities are
/// returned (the core's checks reject them where they must be finite).
pub fn real(value: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    if let Ok(f) = value.cast_exact::<PyFloat>() {
        return Ok(f.value());
    }
    let py = value.py();
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
    converted.map_err(|e| {
        if e.is_instance_of::<PyOverflowError>(py) {
            PyValueError::new_err(format!("{name} must be finite, got {}", repr(value)))
        } else {
            e
        }
    })
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
/// `usize::MAX` when it is larger than any length ("no bound").
pub fn integer(value: &Bound<'_, PyAny>, name: &str, minimum: i64) -> PyResult<usize> {
    let n = index(value, name)?;
    match n.extract::<i64>() {
        Ok(v) if v >= minimum => Ok(usize::try_from(v).unwrap_or(usize::MAX)),
        Ok(_) => Err(below_minimum(name, minimum, &n)),
        // Beyond i64: huge positive means "no bound"; huge negative is below the minimum.
        Err(_) if n.lt(0)? => Err(below_minimum(name, minimum, &n)),
        Err(_) => Ok(usize::MAX),
    }
}

fn below_minimum(name: &str, minimum: i64, n: &Bound<'_, PyAny>) -> PyErr {
    PyValueError::new_err(format!("{name} must be >= {minimum}, got {}", repr(n)))
}

/// An integer (anything with `__index__`, not bool) that fits in int64, like the reference's
/// `_int64`.
pub fn int64(value: &Bound<'_, PyAny>, name: &str) -> PyResult<i64> {
    let n = index(value, name)?;
    n.extract::<i64>().map_err(|_| {
        if n.lt(0).unwrap_or(false) {
            PyValueError::new_err(format!("{name} must be >= {}, got {}", i64::MIN, repr(&n)))
        } else {
            PyValueError::new_err(format!("{name} must fit in int64, got {}", repr(&n)))
        }
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

/// A choice argument: one of `names` (a str); a non-str is a TypeError, another str a
/// ValueError, worded as the reference words them.
fn choice<T>(
    value: Borrowed<'_, '_, PyAny>,
    name: &str,
    names: &[&str],
    from_name: impl Fn(&str) -> Option<T>,
) -> PyResult<T> {
    let listed = format!(
        "({})",
        names
            .iter()
            .map(|c| format!("'{c}'"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let value = value.to_owned();
    let Ok(s) = value.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be one of {listed}, got {}",
            describe(&value)
        )));
    };
    from_name(&s.to_cow()?).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{name} must be one of {listed}, got {}",
            repr(&value)
        ))
    })
}

macro_rules! choice_argument {
    ($type:ty, $name:literal, $names:expr, $from_name:expr) => {
        impl<'a, 'py> FromPyObject<'a, 'py> for $type {
            type Error = PyErr;

            fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
                choice(obj, $name, &$names, $from_name)
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
choice_argument!(Method, "method", Method::NAMES, Method::from_name);
choice_argument!(Norm, "norm", Norm::NAMES, Norm::from_name);
choice_argument!(Order, "order", Order::NAMES, Order::from_name);
choice_argument!(
    ReadDuplicates,
    "duplicates",
    ReadDuplicates::NAMES,
    ReadDuplicates::from_name
);

/// The keyword arguments every fusion shares (method, norm, k .. normalize), converted and
/// checked in the reference's order. `n_lists`: the number of lists `weights` must match, or
/// None when it is only known per query (rrf_many), where a query's own checks follow
/// ([`query_weights`]).
#[allow(clippy::too_many_arguments)]
pub fn fusion_params(
    method: Arg<'_>,
    norm: Option<Bound<'_, PyAny>>,
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
    let method = method.or(Method::Rrf, |v| v.extract())?;
    let norm = norm.map(|n| n.extract::<Norm>()).transpose()?;
    params::norm(method, norm)?;
    let k = match k {
        Arg::Missing => 60.0,
        Arg::Given(_) if !method.takes("k") => return Err(params::unused("k", method).into()),
        Arg::Given(v) => params::k(real(&v, "k")?)?,
    };
    let weights = match weights {
        None => None,
        Some(_) if !method.is_weighted() => return Err(params::unused("weights", method).into()),
        Some(w) => {
            let w = as_tuple(&w, "weights")?;
            if let Some(n) = n_lists {
                params::weights_len(w.len(), n)?;
            }
            let mut values = Vec::with_capacity(w.len());
            for (i, x) in w.iter().enumerate() {
                values.push(params::weight(i, real(&x, &format!("weights[{i}]"))?)?);
            }
            for (i, &x) in values.iter().enumerate() {
                params::mean_weight(method, i, x)?;
            }
            Some(values)
        }
    };
    let window = window.map(|w| integer(&w, "window", 1)).transpose()?;
    let duplicates = duplicates.or(Duplicates::First, |v| v.extract())?;
    let tie_break = tie_break.or(TieBreak::BestRank, |v| v.extract())?;
    let offset = offset.or(0, |v| integer(v, "offset", 0))?;
    let limit = limit.map(|l| integer(&l, "limit", 0)).transpose()?;
    let min_score = min_score
        .map(|m| Ok::<_, PyErr>(params::min_score(real(&m, "min_score")?)?))
        .transpose()?;
    let normalize = normalize.or(false, |v| flag(v, "normalize"))?;
    if normalize && !method.takes("normalize") {
        return Err(params::unused("normalize", method).into());
    }
    let p = Params {
        k,
        weights,
        window,
        duplicates,
        tie_break,
        offset,
        limit,
        min_score,
        normalize,
        method,
        norm,
        ..Params::default()
    };
    if p.normalize && (p.weights.is_some() || n_lists.is_some()) {
        params::normalizer(&query_weights(&p, n_lists.unwrap_or(0)), p.k)?;
    }
    Ok(p)
}

/// The boost's values: a mapping key -> finite real (checked in the reference's order).
pub type Boost<'py> = Option<Bound<'py, pyo3::types::PyDict>>;

/// The method's own arguments (lower_is_better .. boost_weight), converted and checked in the
/// reference's order into `p`; the boost values come back as a dict of floats.
#[allow(clippy::too_many_arguments)]
pub fn method_params<'py>(
    p: &mut Params,
    n_lists: Option<usize>,
    lower_is_better: Option<Bound<'py, PyAny>>,
    phi: Option<Bound<'py, PyAny>>,
    gamma: Option<Bound<'py, PyAny>>,
    sigma: Option<Bound<'py, PyAny>>,
    boost: Option<Bound<'py, PyAny>>,
    boost_weight: Option<Bound<'py, PyAny>>,
) -> PyResult<Boost<'py>> {
    let method = p.method;
    let norm = params::norm(method, p.norm)?;
    if let Some(lower) = lower_is_better {
        if method.is_rank_based() || !norm.reads_scores() {
            let user = if method.is_rank_based() {
                format!("method '{}'", method.name())
            } else {
                format!("norm '{}'", norm.name()) // it reads the ranks, not the scores
            };
            return Err(PyValueError::new_err(format!(
                "lower_is_better is not used by {user}"
            )));
        }
        let lower = as_tuple(&lower, "lower_is_better")?;
        if let Some(n) = n_lists {
            if lower.len() != n {
                return Err(PyValueError::new_err(format!(
                    "lower_is_better has {} values for {n} lists",
                    lower.len()
                )));
            }
        }
        p.lower_is_better = Some(
            lower
                .iter()
                .enumerate()
                .map(|(i, x)| flag(&x, &format!("lower_is_better[{i}]")))
                .collect::<PyResult<_>>()?,
        );
    }
    for (name, value, slot) in [
        ("phi", phi, &mut p.phi),
        ("gamma", gamma, &mut p.gamma),
        ("sigma", sigma, &mut p.sigma),
    ] {
        match value {
            Some(_) if !method.takes(name) => return Err(params::unused(name, method).into()),
            Some(v) => *slot = Some(params::finite(name, real(&v, name)?)?),
            None if method.takes(name) && name != "sigma" => {
                return Err(params::needed(name, method).into())
            }
            None if method.takes(name) => *slot = Some(0.01),
            None => {}
        }
    }
    if let Some(x) = p.phi {
        params::phi(x)?;
    }
    if let Some(x) = p.sigma {
        params::sigma(x)?;
    }
    let boost = match boost {
        None => None,
        Some(b) => {
            let py = b.py();
            if !b.is_instance(mapping_type(py)?)? {
                return Err(PyTypeError::new_err(format!(
                    "boost must be a mapping key -> value, got {}",
                    describe(&b)
                )));
            }
            let values = pyo3::types::PyDict::new(py);
            for item in b.call_method0("items")?.try_iter()? {
                let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
                let name = format!("boost[{}]", repr(&key));
                values.set_item(&key, params::finite(&name, real(&value, &name)?)?)?;
            }
            Some(values)
        }
    };
    match (&boost, boost_weight) {
        (None, Some(_)) => {
            return Err(PyValueError::new_err(
                "boost_weight is not used without boost",
            ))
        }
        (Some(_), None) => return Err(PyValueError::new_err("boost needs boost_weight")),
        (Some(_), Some(w)) => {
            p.boost_weight = Some(params::finite("boost_weight", real(&w, "boost_weight")?)?)
        }
        (None, None) => {}
    }
    if boost.is_some() && p.normalize {
        return Err(PyValueError::new_err(
            "boost cannot be combined with normalize=True",
        ));
    }
    Ok(boost)
}

fn mapping_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static MAPPING: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    MAPPING.import(py, "collections.abc", "Mapping")
}

/// The weights of a query of `n_lists` lists: the given ones (checked to match), or 1.0 each.
pub fn query_weights(p: &Params, n_lists: usize) -> Vec<f64> {
    p.weights.clone().unwrap_or_else(|| vec![1.0; n_lists])
}
