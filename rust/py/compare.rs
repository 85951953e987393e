//! The statistics of `rankfusion.compare` (`python/rankfusion/_compare.py`): the paired tests of
//! many (system, baseline) rows in parallel with the GIL released (`crate::stats`), the
//! correction of a family of p-values, and the means of rows. Private functions of `_core`;
//! Python checks the public arguments first (as the reference does), and these refuse what the
//! core cannot take. Every argument error is our `FusionError` / `FusionTypeError` naming the
//! argument (`super::errors`): the conversions' here, the core's checks' (`stats::paired_tests`:
//! a value that is not finite is located at its row and query, as `list` and `rank`) there.

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyModule, PyTuple};

use super::args::{choice, describe, index, real, repr};
use super::arrays::thread_count;
use super::errors::{type_error, value_error};
use super::signals;
use crate::stats::{self, Correction, Settings, Test};

/// A 2-D float64 numpy array's values, copied (other Python threads may write to the array
/// while the core reads with the GIL released), and its shape.
fn rows(value: &Bound<'_, PyAny>, name: &str) -> PyResult<(Vec<f64>, usize, usize)> {
    let array = value.cast::<PyArray2<f64>>().map_err(|_| {
        type_error(
            name,
            format!(
                "{name} must be a 2-D float64 array, got {}",
                describe(value)
            ),
        )
    })?;
    let shape = (array.shape()[0], array.shape()[1]);
    let values = array
        .readonly()
        .as_slice()
        .map(<[f64]>::to_vec)
        .map_err(|_| value_error(name, format!("{name} must be a C-contiguous array")))?;
    Ok((values, shape.0, shape.1))
}

/// A 1-D numpy array of `T` (`dtype`), copied.
fn vector<T: numpy::Element + Copy>(
    value: &Bound<'_, PyAny>,
    name: &str,
    dtype: &str,
) -> PyResult<Vec<T>> {
    let array = value.cast::<PyArray1<T>>().map_err(|_| {
        type_error(
            name,
            format!(
                "{name} must be a 1-D {dtype} array, got {}",
                describe(value)
            ),
        )
    })?;
    let values = array
        .readonly()
        .as_slice()
        .map(<[T]>::to_vec)
        .map_err(|_| value_error(name, format!("{name} must be a C-contiguous array")))?;
    Ok(values)
}

/// An integer in `0..2**64` (`seed`, `permutations`).
fn unsigned(value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    let n = index(value, name)?;
    n.extract::<u64>().map_err(|_| {
        value_error(
            name,
            format!("{name} must be between 0 and 2**64 - 1, got {}", repr(&n)),
        )
    })
}

/// `(delta, p, effect_size, low, high, wins, ties, losses)`, arrays of T: the paired test of
/// row t of `x` (the system's per-query values, (T, n) float64) against row t of `y` (the
/// baseline's), drawing from stream `streams[t]` (uint64) of `seed`; on up to `threads` threads,
/// with the GIL released. Undefined values are NaN. Errors: FusionTypeError / FusionError naming
/// the argument (`x`, `y`, `streams`, `test`, `permutations`, `seed`, `confidence`, `threads`)
/// for what the core refuses (docs/semantics.md, "Comparing runs"); a value that is not finite
/// is located at `list` = its row and `rank` = its query + 1; KeyboardInterrupt (or what the
/// SIGINT handler raises) when interrupted.
#[pyfunction]
#[pyo3(signature = (x, y, streams, *, test, permutations, seed, confidence, threads=None))]
#[allow(clippy::too_many_arguments)]
fn _paired_tests<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    streams: &Bound<'py, PyAny>,
    test: &Bound<'py, PyAny>,
    permutations: &Bound<'py, PyAny>,
    seed: &Bound<'py, PyAny>,
    confidence: &Bound<'py, PyAny>,
    threads: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (x, tests, n) = rows(x, "x")?;
    let (y, _, _) = rows(y, "y")?;
    let streams = vector::<u64>(streams, "streams", "uint64")?;
    stats::check_streams(streams.len(), tests)?;
    let settings = Settings {
        test: choice(test.as_borrowed(), "test", Test::NAMES, Test::from_name)?,
        permutations: unsigned(permutations, "permutations")?,
        seed: unsigned(seed, "seed")?,
        confidence: real(confidence, "confidence")?,
    };
    let n_threads = thread_count(threads)?;
    let outcomes = signals::detached(py, |cancel| {
        stats::paired_tests(&x, &y, n, &streams, &settings, n_threads, cancel)
    })??;
    let column = |f: fn(&stats::Paired) -> f64| -> Vec<f64> { outcomes.iter().map(f).collect() };
    let count = |f: fn(&stats::Paired) -> usize| -> Vec<i64> {
        outcomes
            .iter()
            .map(|o| i64::try_from(f(o)).unwrap_or(i64::MAX))
            .collect()
    };
    PyTuple::new(
        py,
        [
            column(|o| o.delta).into_pyarray(py).into_any(),
            column(|o| o.p).into_pyarray(py).into_any(),
            column(|o| o.effect_size).into_pyarray(py).into_any(),
            column(|o| o.low).into_pyarray(py).into_any(),
            column(|o| o.high).into_pyarray(py).into_any(),
            count(|o| o.wins).into_pyarray(py).into_any(),
            count(|o| o.ties).into_pyarray(py).into_any(),
            count(|o| o.losses).into_pyarray(py).into_any(),
        ],
    )
}

/// The family of p-values `p` (a 1-D float64 array) corrected by `method` (one of
/// `_CORRECTIONS`), in order. Errors: FusionTypeError / FusionError naming `p` or `method`.
#[pyfunction]
fn _correct<'py>(
    py: Python<'py>,
    p: &Bound<'py, PyAny>,
    method: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let p = vector::<f64>(p, "p", "float64")?;
    let method = choice(
        method.as_borrowed(),
        "method",
        Correction::NAMES,
        Correction::from_name,
    )?;
    Ok(stats::correct(&p, method).into_pyarray(py).into_any())
}

/// Each row's mean (its values added left to right from 0.0, over their number: ir-measures'
/// mean) of a 2-D float64 array with at least one column. Errors: FusionTypeError /
/// FusionError naming `values`.
#[pyfunction]
fn _row_means<'py>(py: Python<'py>, values: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (values, _, n) = rows(values, "values")?;
    Ok(stats::row_means(&values, n)?.into_pyarray(py).into_any())
}

/// Whether the randomization test of `n` queries with `permutations` enumerates every sign
/// vector (`2**n <= permutations`).
#[pyfunction]
fn _exact(n: &Bound<'_, PyAny>, permutations: &Bound<'_, PyAny>) -> PyResult<bool> {
    let n = unsigned(n, "n")?;
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    Ok(stats::exact(n, unsigned(permutations, "permutations")?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_paired_tests, m)?)?;
    m.add_function(wrap_pyfunction!(_correct, m)?)?;
    m.add_function(wrap_pyfunction!(_row_means, m)?)?;
    m.add_function(wrap_pyfunction!(_exact, m)?)?;
    m.add("_TESTS", PyTuple::new(m.py(), Test::NAMES)?)?;
    m.add("_CORRECTIONS", PyTuple::new(m.py(), Correction::NAMES)?)?;
    m.add("_MAX_PERMUTATIONS", stats::MAX_PERMUTATIONS)?;
    Ok(())
}
