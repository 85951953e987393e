//! Paired significance tests of per-query metric values: what `rankfusion.compare` computes for
//! each (system, baseline, metric) it tests (docs/compare.md; the exact definitions are in
//! docs/semantics.md, "Comparing runs", and in the reference, `_reference.py`).
//!
//! A test reads two rows of n values, the system's `x` and the baseline's `y` (one per query,
//! in the same query order), and their differences `d = x - y`. It gives the difference of the
//! means, a p-value (randomization, paired t or bootstrap), the effect size (the mean of `d`
//! over its standard deviation), an interval of the mean difference (Student's t for the
//! randomization and t tests, the bootstrap's percentile interval for the bootstrap), and the
//! queries the system wins, ties and loses. The resampling tests draw from a stream of their
//! own ([`rng::Xoshiro::stream`]), so tests run in any order, on any thread, with the same
//! result; [`paired_tests`] runs many in parallel, stopping when its `Cancel` says so.
//! [`correct`] corrects a family of p-values.
//!
//! Every sum is a plain left-to-right sum from 0.0 in query (or draw) order ([`sum`]): the
//! reference adds in the same order, so every value is the same bits in both.

mod correct;
pub mod resample;
pub mod rng;
pub mod student;
#[cfg(test)]
mod tests;

pub use correct::{correct, Correction};
pub use resample::exact;

use crate::cancel::Cancel;
use crate::error::{Error, Problem, Result};
use crate::format;
use crate::pool;
use rng::Xoshiro;

/// The paired test that gives the p-value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// The randomization (sign-flip permutation) test of the mean difference, two-sided.
    Randomization,
    /// The paired (Student's) t-test, two-sided.
    T,
    /// The paired bootstrap of the mean difference, two-sided.
    Bootstrap,
}

impl Test {
    /// The names the Python API takes, in the order of the variants.
    pub const NAMES: [&'static str; 3] = ["randomization", "t", "bootstrap"];

    /// The test called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        let all = [Test::Randomization, Test::T, Test::Bootstrap];
        Self::NAMES.iter().position(|&n| n == name).map(|i| all[i])
    }
}

/// The most permutations (or resamples) a test may draw: counts stay exact as floats.
pub const MAX_PERMUTATIONS: u64 = 1 << 40;

/// How the tests are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub test: Test,
    /// Sign vectors drawn (randomization, unless exact) or resamples (bootstrap).
    pub permutations: u64,
    pub seed: u64,
    /// The interval's coverage, in (0, 1).
    pub confidence: f64,
}

/// One test's outcome. Undefined values are NaN: the effect size when the differences have no
/// spread (or n = 1), the t interval when n = 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// mean(x) - mean(y).
    pub delta: f64,
    pub p: f64,
    /// mean(d) / sd(d), the standard deviation with n - 1.
    pub effect_size: f64,
    pub low: f64,
    pub high: f64,
    /// Queries where x > y, x == y, x < y.
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
}

/// The outcomes of tests as columns, in the order of the tests: (delta, p, effect_size, low,
/// high), and (wins, ties, losses) as i64 (saturated).
pub fn columns(outcomes: &[Paired]) -> ([Vec<f64>; 5], [Vec<i64>; 3]) {
    let value = |f: fn(&Paired) -> f64| outcomes.iter().map(f).collect();
    let count = |f: fn(&Paired) -> usize| {
        let count = |o| i64::try_from(f(o)).unwrap_or(i64::MAX);
        outcomes.iter().map(count).collect()
    };
    (
        [
            value(|o| o.delta),
            value(|o| o.p),
            value(|o| o.effect_size),
            value(|o| o.low),
            value(|o| o.high),
        ],
        [count(|o| o.wins), count(|o| o.ties), count(|o| o.losses)],
    )
}

/// `values` added left to right from 0.0.
#[inline]
pub fn sum(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |acc, v| acc + v)
}

/// The mean of `values` (non-empty): their [`sum`] over their number (ir-measures' mean).
pub fn mean(values: &[f64]) -> f64 {
    sum(values.iter().copied()) / values.len() as f64
}

/// Each row's [`mean`] of `values`, rows of `n` values; an argument error naming `values` when
/// the rows have no columns.
pub fn row_means(values: &[f64], n: usize) -> Result<Vec<f64>> {
    if n == 0 {
        return Err(Error::invalid("values", "values has no columns"));
    }
    Ok(values.chunks_exact(n).map(mean).collect())
}

/// `streams` holds one stream per test (`tests`, the rows of `x`): else an argument error naming
/// `streams`.
pub fn check_streams(streams: usize, tests: usize) -> Result<()> {
    if streams == tests {
        return Ok(());
    }
    Err(Error::invalid(
        "streams",
        format!("streams must hold one stream per row of x ({tests}), got {streams}"),
    ))
}

/// The tests of `streams.len()` pairs of rows: test t compares `x[t * n .. (t + 1) * n]` with
/// the same rows of `y`, drawing from the stream `streams[t]` of `settings.seed`. On up to
/// `n_threads` threads, tests in parallel. Errors, checked before any work, each an argument
/// error (`Problem::Invalid`) naming its argument: rows of no values or lengths that do not
/// match (`x`, `y`), a value that is not finite (`x` or `y`, at the item (row t, query i)),
/// permutations outside `1..=MAX_PERMUTATIONS`, a confidence outside (0, 1), the t-test with
/// fewer than 2 queries (`test`); `Problem::Interrupted` once `cancel` stops.
pub fn paired_tests(
    x: &[f64],
    y: &[f64],
    n: usize,
    streams: &[u64],
    settings: &Settings,
    n_threads: usize,
    cancel: &Cancel<'_>,
) -> Result<Vec<Paired>> {
    check(x, y, n, streams.len(), settings)?;
    // Student's quantile depends on n and the confidence only: once for every test.
    let t_quantile = if n >= 2 {
        student::two_sided_quantile(1.0 - settings.confidence, (n - 1) as f64)
    } else {
        f64::NAN
    };
    let outcomes = pool::map_indices(
        n_threads,
        streams.len(),
        cancel,
        Buffers::default,
        |buffers, t| {
            let rows = t * n..(t + 1) * n;
            let rng = Xoshiro::stream(settings.seed, streams[t]);
            one(
                &x[rows.clone()],
                &y[rows],
                settings,
                t_quantile,
                rng,
                buffers,
                cancel,
            )
        },
    )?;
    outcomes
        .into_iter()
        .map(|o| o.ok_or_else(|| Problem::Interrupted.into()))
        .collect()
}

fn check(x: &[f64], y: &[f64], n: usize, tests: usize, settings: &Settings) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid(
            "x",
            "x has no columns: there are no queries to compare",
        ));
    }
    if tests.checked_mul(n) != Some(x.len()) {
        return Err(Error::invalid(
            "x",
            format!(
                "{tests} tests of {n} queries need {tests} x {n} values in x, got {}",
                x.len()
            ),
        ));
    }
    if y.len() != x.len() {
        return Err(Error::invalid(
            "y",
            format!(
                "y must hold as many values as x ({}), got {}",
                x.len(),
                y.len()
            ),
        ));
    }
    for (name, values) in [("x", x), ("y", y)] {
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            let (row, query) = (i / n, i % n);
            let message = format!(
                "{name}[{row}][{query}] must be finite, got {}",
                format::float(values[i])
            );
            return Err(Error::invalid(name, message).at_item(row, query));
        }
    }
    if !(1..=MAX_PERMUTATIONS).contains(&settings.permutations) {
        return Err(Error::invalid(
            "permutations",
            format!(
                "permutations must be between 1 and 2**40, got {}",
                settings.permutations
            ),
        ));
    }
    let c = settings.confidence;
    if !(c > 0.0 && c < 1.0) {
        return Err(Error::invalid(
            "confidence",
            format!(
                "confidence must be between 0 and 1 (exclusive), got {}",
                format::float(c)
            ),
        ));
    }
    if settings.test == Test::T && n < 2 {
        return Err(Error::invalid(
            "test",
            "the t-test needs at least 2 queries, got 1",
        ));
    }
    Ok(())
}

/// Scratch space of one thread, reused from test to test.
#[derive(Default)]
struct Buffers {
    d: Vec<f64>,
    words: Vec<u64>,
    means: Vec<f64>,
}

/// One test (see [`paired_tests`]); `None` once `cancel` stops.
fn one(
    x: &[f64],
    y: &[f64],
    settings: &Settings,
    t_quantile: f64,
    mut rng: Xoshiro,
    buffers: &mut Buffers,
    cancel: &Cancel<'_>,
) -> Option<Paired> {
    let n = x.len();
    let size = n as f64;
    let d = &mut buffers.d;
    d.clear();
    d.extend(x.iter().zip(y).map(|(a, b)| a - b));
    let (mut wins, mut ties) = (0, 0);
    for (a, b) in x.iter().zip(y) {
        wins += usize::from(a > b);
        ties += usize::from(a == b);
    }
    let delta = mean(x) - mean(y);
    let mean_d = mean(d);
    let sd = if n >= 2 {
        (sum(d.iter().map(|v| (v - mean_d) * (v - mean_d))) / (size - 1.0)).sqrt()
    } else {
        f64::NAN
    };
    let effect_size = if sd > 0.0 { mean_d / sd } else { f64::NAN };
    let half = t_quantile * (sd / size.sqrt());
    let (mut low, mut high) = (mean_d - half, mean_d + half);
    let p = match settings.test {
        Test::Randomization => resample::randomization(
            d,
            settings.permutations,
            &mut rng,
            &mut buffers.words,
            cancel,
        )?,
        Test::T => t_test(mean_d, sd, size),
        Test::Bootstrap => {
            let b = resample::bootstrap(
                d,
                settings.permutations,
                settings.confidence,
                &mut rng,
                &mut buffers.means,
                &mut buffers.words,
                cancel,
            )?;
            (low, high) = (b.low, b.high);
            b.p
        }
    };
    Some(Paired {
        delta,
        p,
        effect_size,
        low,
        high,
        wins,
        ties,
        losses: n - wins - ties,
    })
}

/// The paired t-test's two-sided p-value from the differences' mean and standard deviation
/// (n >= 2): `t = mean / (sd / sqrt(n))` on n - 1 degrees of freedom. No spread: 1 when the
/// mean is 0 (every difference is 0: no evidence of one), else 0 (`|t|` is infinite).
pub fn t_test(mean_d: f64, sd: f64, size: f64) -> f64 {
    let se = sd / size.sqrt();
    if se == 0.0 {
        return if mean_d == 0.0 { 1.0 } else { 0.0 };
    }
    student::two_sided_p((mean_d / se).abs(), size - 1.0)
}
