//! The statistics of `rankfusion.compare` (`python/rankfusion/_compare.py`): the paired tests of
//! many (system, baseline) rows in parallel with the GIL released (`crate::stats`), the
//! correction of a family of p-values, and the means of rows. Private functions of `_core`;
//! Python checks the public arguments first (as the reference does), and these refuse what the
//! core cannot take. Every argument error is our `FusionError` / `FusionTypeError` naming the
//! argument (`super::errors`): the conversions' here, the core's checks' (`stats::paired_tests`:
//! a value that is not finite is located at its row and query, as `list` and `rank`) there.

use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyModule, PyTuple};

use super::args::{choice, describe, index, real, repr};
use super::arrays::thread_count;
use super::errors::{type_error, value_error};
use super::signals;
use crate::stats::{self, Correction, Settings, Test};

/// A `D`-dimensional, C-contiguous numpy array of `T` (`dtype`): its values, copied (other
/// Python threads may write to the array while the core reads with the GIL released), and its
/// shape.
fn copied<T: numpy::Element + Copy, const D: usize>(
    value: &Bound<'_, PyAny>,
    name: &str,
    dtype: &str,
) -> PyResult<(Vec<T>, [usize; D])> {
    let not_one = || {
        let message = format!(
            "{name} must be a {D}-D {dtype} array, got {}",
            describe(value)
        );
        type_error(name, message)
    };
    let array = value.cast::<PyArrayDyn<T>>().map_err(|_| not_one())?;
    let shape = <[usize; D]>::try_from(array.shape()).map_err(|_| not_one())?;
    let values = array.readonly().as_slice().map(<[T]>::to_vec);
    let values =
        values.map_err(|_| value_error(name, format!("{name} must be a C-contiguous array")))?;
    Ok((values, shape))
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
    let (x, [tests, n]) = copied::<f64, 2>(x, "x", "float64")?;
    let (y, _) = copied::<f64, 2>(y, "y", "float64")?;
    let (streams, _) = copied::<u64, 1>(streams, "streams", "uint64")?;
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
    let (values, counts) = stats::columns(&outcomes);
    let values = values.map(|v| v.into_pyarray(py).into_any());
    let counts = counts.map(|c| c.into_pyarray(py).into_any());
    PyTuple::new(py, values.into_iter().chain(counts).collect::<Vec<_>>())
}

/// The family of p-values `p` (a 1-D float64 array) corrected by `method` (one of
/// `_CORRECTIONS`), in order. Errors: FusionTypeError / FusionError naming `p` or `method`.
#[pyfunction]
fn _correct<'py>(
    py: Python<'py>,
    p: &Bound<'py, PyAny>,
    method: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (p, _) = copied::<f64, 1>(p, "p", "float64")?;
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
    let (values, [_, n]) = copied::<f64, 2>(values, "values", "float64")?;
    Ok(stats::row_means(&values, n)?.into_pyarray(py).into_any())
}

/// Whether the randomization test of `n` queries with `permutations` enumerates every sign
/// vector (`2**n <= permutations`).
#[pyfunction]
fn _exact(n: &Bound<'_, PyAny>, permutations: &Bound<'_, PyAny>) -> PyResult<bool> {
    let n = unsigned(n, "n")?;
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
