//! The scoring seam: how a method turns a key's counted occurrences into its score, for the
//! methods that are not a plain sum of rank values (those, RRF, RBC and the ISR family, are scored
//! in the engine's scan layouts directly). Every formula here is `_reference.py`'s `_fuse`, step
//! for step, in the same order of floating-point operations (docs/semantics.md, "Fusion
//! methods").

use super::canonical_sum;
use super::engine::{ones, POLL_KEYS};
use super::params::{Method, Norm, Plan};
use super::trace::Contribution;
use crate::cancel::{self, Cancel};
use crate::error::{Error, KeyRef, Problem, Stage};

/// The raw scores of the lists of one query: per list, None or its scores by position. An empty
/// slice: no scores at all.
pub type Scores<'a> = &'a [Option<&'a [f64]>];

/// A key's counted occurrence: list, 0-based position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub list: u32,
    pub position: u32,
}

/// Position of a contribution of a list that does not hold the key (its rank is 0).
pub const UNRANKED: u32 = u32::MAX;

/// One query, scanned: what the methods read.
pub struct Scanned<'a> {
    pub plan: &'a Plan,
    /// The lists read (weight not 0), ascending.
    pub read: &'a [usize],
    /// Per list (by index), the items read (holes not counted).
    pub n_read: &'a [u32],
    /// Per key, its counted occurrences `entries[offsets[k]..offsets[k + 1]]`, ordered by list
    /// then position.
    pub offsets: &'a [u32],
    pub entries: &'a [Entry],
    /// Per key, its first occurrence (list, position), for errors.
    pub firsts: &'a [(u32, u32)],
    pub scores: Scores<'a>,
}

/// What the scoring leaves per key: the score, and for traces the contributions and what the
/// method did with them (NaN: nothing).
#[derive(Default)]
pub struct Scored {
    pub scores: Vec<f64>,
    pub factors: Vec<f64>,
    pub divisors: Vec<f64>,
    /// Key k's contributions: `contributions[offsets[k]..offsets[k + 1]]`.
    pub offsets: Vec<u32>,
    pub contributions: Vec<Contribution>,
    // scratch
    by_list: Vec<Vec<u32>>,
    values: Vec<f64>,
    norms: Vec<ListNorm>,
    sums: Vec<f64>,
    ranks: Vec<u32>,
    pair: PairScratch,
    positions: Vec<u32>,
    slot_of: Vec<u8>,
    normalized: Vec<f64>,
}

/// A list's normalisation, its statistics computed.
#[derive(Clone, Copy, Debug)]
enum ListNorm {
    Identity,
    Constant(f64),
    /// (s - sub) / div
    Affine {
        sub: f64,
        div: f64,
    },
    /// s / div
    Scale {
        div: f64,
    },
}

impl ListNorm {
    #[inline]
    fn apply(self, s: f64) -> f64 {
        match self {
            ListNorm::Identity => s,
            ListNorm::Constant(c) => c,
            ListNorm::Affine { sub, div } => (s - sub) / div,
            ListNorm::Scale { div } => s / div,
        }
    }
}

/// The normalisation `norm` of one list whose counted raw scores (in list order, negated when
/// the list is lower-is-better) are `values` (not empty).
/// `cancel` is polled before the sums of a list (`Problem::Interrupted`).
fn list_norm(
    norm: Norm,
    values: &[f64],
    scratch: &mut Vec<f64>,
    cancel: &Cancel<'_>,
) -> Result<ListNorm, Error> {
    let n = values.len() as f64;
    // Python's min and max: the first of the smallest (largest) values. (`f64::min` and
    // `f64::max` may return either of two equal zeros.)
    let (mut low, mut high) = (values[0], values[0]);
    for &v in values.iter() {
        if v < low {
            low = v;
        }
        if v > high {
            high = v;
        }
    }
    Ok(match norm {
        Norm::None | Norm::Rank | Norm::Borda => ListNorm::Identity,
        Norm::MinMax if high == low => ListNorm::Constant(1.0),
        Norm::MinMax => ListNorm::Affine {
            sub: low,
            div: high - low,
        },
        Norm::Max if high < 0.0 => {
            return Err(Error::invalid(
                "norm",
                format!(
                    "norm='max' needs a list's largest score to be >= 0, got {} (use 'min-max' \
                     for negative scores)",
                    crate::format::float(high)
                ),
            ))
        }
        Norm::Max if high == 0.0 => ListNorm::Constant(0.0),
        Norm::Max => ListNorm::Scale { div: high },
        Norm::Sum => {
            cancel.check()?;
            let total = canonical_sum_of(values.len(), |i| values[i] - low, scratch);
            if total == 0.0 {
                ListNorm::Constant(1.0 / n)
            } else {
                ListNorm::Affine {
                    sub: low,
                    div: total,
                }
            }
        }
        Norm::ZScore if high == low => ListNorm::Constant(0.0),
        Norm::ZScore => {
            cancel.check()?;
            let mean = canonical_sum_of(values.len(), |i| values[i], scratch) / n;
            let sd = root_sum_squares(values.len(), |i| values[i] - mean, n, scratch);
            if sd == 0.0 {
                ListNorm::Constant(0.0)
            } else {
                ListNorm::Affine { sub: mean, div: sd }
            }
        }
        Norm::L2 => {
            cancel.check()?;
            let length = root_sum_squares(values.len(), |i| values[i], 1.0, scratch);
            if length == 0.0 {
                ListNorm::Constant(0.0)
            } else {
                ListNorm::Scale { div: length }
            }
        }
        Norm::Dbsf => {
            let mut stats = [(0.0, 0.0)];
            welford(values, &[0, values.len()], &mut stats);
            dbsf(values.len(), stats[0])
        }
    })
}

/// Welford's running (mean, sum of squared deviations) of each of the lists
/// `values[bounds[j]..bounds[j + 1]]` into `stats[j]` (at most [`DENSE_MAX`] lists). The lists' recurrences
/// are independent: run side by side, their divisions overlap. Each list's own operations are
/// done in its own order, so each gets the bits it gets alone.
fn welford(values: &[f64], bounds: &[usize], stats: &mut [(f64, f64)]) {
    let lists = bounds.len() - 1;
    let longest = (0..lists)
        .map(|j| bounds[j + 1] - bounds[j])
        .max()
        .unwrap_or(0);
    let (mut means, mut m2s) = ([0.0f64; DENSE_MAX], [0.0f64; DENSE_MAX]);
    for count in 0..longest {
        for j in 0..lists.min(DENSE_MAX) {
            if count < bounds[j + 1] - bounds[j] {
                let v = values[bounds[j] + count];
                let delta = v - means[j];
                means[j] += delta / (count + 1) as f64;
                m2s[j] += delta * (v - means[j]);
            }
        }
    }
    for (j, stat) in stats.iter_mut().enumerate().take(lists.min(DENSE_MAX)) {
        *stat = (means[j], m2s[j]);
    }
}

/// Qdrant's distribution-based normalisation of a list of `n` scores (not empty) of Welford's
/// (mean, sum of squared deviations) `stats`: sample sd, mean -/+ 3 sd, not clipped; one score,
/// or the two bounds equal, 0.5.
fn dbsf(n: usize, (mean, m2): (f64, f64)) -> ListNorm {
    if n == 1 {
        return ListNorm::Constant(0.5);
    }
    let sd = (m2 / (n as f64 - 1.0)).sqrt();
    let (low, high) = (mean - 3.0 * sd, mean + 3.0 * sd);
    if low == high {
        ListNorm::Constant(0.5)
    } else {
        ListNorm::Affine {
            sub: low,
            div: high - low,
        }
    }
}

/// The canonical sum of `term(0..n)` (see [`canonical_sum`]; terms may be infinite, and a NaN
/// term gives the sort's NaN).
/// A list's scores are mostly monotone, and their squared deviations fall then rise: when the
/// terms are a *valley* (non-increasing, then non-decreasing; monotone lists are valleys), they
/// are added from the bottom outwards, merging the two sides, in O(n) without sorting; otherwise
/// they are sorted in `scratch`.
///
/// The same bits as the sort: two non-decreasing orders of the same values differ only in the
/// order of values equal under `<`, which have the same bits or are zeros of either sign; and
/// zeros change nothing in a sum that starts from +0.0 (the running sum is never -0.0, and
/// `x + ±0.0 == x` for any other `x`), wherever they come.
fn canonical_sum_of(n: usize, term: impl Fn(usize) -> f64, scratch: &mut Vec<f64>) -> f64 {
    if let Some(total) = valley_sum(n, &term) {
        return total;
    }
    scratch.clear();
    scratch.extend((0..n).map(term));
    scratch.sort_unstable_by(f64::total_cmp);
    scratch.iter().fold(0.0, |acc, &v| acc + v)
}

/// The sum from 0.0 of `term(0..n)` in ascending order when the terms form a valley (see
/// [`canonical_sum_of`]; a NaN is never part of one), else None.
#[inline]
fn valley_sum(n: usize, term: &impl Fn(usize) -> f64) -> Option<f64> {
    if n == 0 {
        return Some(0.0);
    }
    // The bottom: the end of the non-increasing run.
    let mut bottom = 0;
    let mut last = term(0);
    while bottom + 1 < n {
        let next = term(bottom + 1);
        // (A NaN compares false: it ends the run.)
        if next <= last {
            bottom += 1;
            last = next;
        } else {
            break;
        }
    }
    let mut end = bottom;
    while end + 1 < n {
        let next = term(end + 1);
        if next >= last {
            end += 1;
            last = next;
        } else {
            return None;
        }
    }
    if n == 1 {
        return Some(0.0 + term(0));
    }
    // Merge term(bottom), term(bottom - 1), ..., term(0) with term(bottom + 1), ..., term(n - 1).
    // (Without branches: which side is next is data, as likely one as the other.)
    let mut acc = 0.0f64;
    let (mut left, mut right) = (bottom + 1, bottom + 1);
    while left > 0 && right < n {
        let (l, r) = (term(left - 1), term(right));
        let take_right = r < l;
        acc += if take_right { r } else { l };
        right += usize::from(take_right);
        left -= usize::from(!take_right);
    }
    while left > 0 {
        acc += term(left - 1);
        left -= 1;
    }
    while right < n {
        acc += term(right);
        right += 1;
    }
    Some(acc)
}

/// sqrt(sum of x * x / divisor) over `x(0..n)`, the sum canonical. When the squares under- or
/// overflow (a zero or infinite root of values that are not all zero), the same with every x
/// divided by the largest |x| first, and the root multiplied by it (as the reference's
/// `_root_sum_squares`). `scratch` is scratch.
fn root_sum_squares(
    n: usize,
    x: impl Fn(usize) -> f64,
    divisor: f64,
    scratch: &mut Vec<f64>,
) -> f64 {
    // The squares written out once (the valley test and the merge each read them).
    scratch.clear();
    scratch.extend((0..n).map(|i| x(i) * x(i)));
    let squares = &mut scratch[..];
    let total = match valley_sum(squares.len(), &|i| squares[i]) {
        Some(total) => total,
        None => canonical_sum(squares),
    };
    let root = (total / divisor).sqrt();
    if (root == 0.0 || root.is_infinite()) && (0..n).any(|i| x(i) != 0.0) {
        let top = (0..n).fold(0.0f64, |m, i| if x(i).abs() > m { x(i).abs() } else { m });
        let scaled = |i: usize| (x(i) / top) * (x(i) / top);
        return top * (canonical_sum_of(n, scaled, scratch) / divisor).sqrt();
    }
    root
}

/// The median of `values` (more than two sorted in place, stably: equal values keep their
/// order, as Python's `sorted` keeps them): the middle one, or the mean of the two middle ones.
fn median(values: &mut [f64]) -> f64 {
    // One or two values need no sort (a sum does not depend on the order of its two terms).
    match *values {
        [v] => return v,
        [a, b] => return (a + b) / 2.0,
        _ => {}
    }
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let half = values.len() / 2;
    if values.len() % 2 == 1 {
        values[half]
    } else {
        (values[half - 1] + values[half]) / 2.0
    }
}

/// List `list`'s raw score at `position` (NaN when the list has no scores).
#[inline]
fn raw(scores: Scores<'_>, list: usize, position: u32) -> f64 {
    scores
        .get(list)
        .copied()
        .flatten()
        .map_or(f64::NAN, |s| s[position as usize])
}

/// -1.0 for a lower-is-better list, else 1.0.
#[inline]
fn sign(plan: &Plan, list: usize) -> f64 {
    match &plan.fusion.lower_is_better {
        Some(lower) if lower[list] => -1.0,
        _ => 1.0,
    }
}

/// What [`contribution`] reads of a query besides the list and position.
struct Query<'a> {
    plan: &'a Plan,
    norms: &'a [ListNorm],
    /// Per list (by index), the items read (holes not counted).
    n_read: &'a [u32],
    /// The number of keys of the query, as a float.
    n_c: f64,
    scores: Scores<'a>,
}

/// The contribution of list `list`'s item at `position` to a key ([`UNRANKED`]: the value a
/// list not holding the key gives it, for the methods that fill). `Err(v)`: the normalised
/// value `v` is not finite.
#[inline]
fn contribution(q: &Query<'_>, list: usize, position: u32) -> Result<Contribution, f64> {
    let plan = q.plan;
    let (method, norm) = (plan.fusion.method, plan.norm);
    let w = plan.weights[list];
    let rank = rank(position);
    let mut v = f64::NAN;
    let c = match method {
        Method::Bordafuse => {
            v = borda_points(q.n_c, q.n_read[list], rank);
            w * v
        }
        Method::Condorcet => w,
        _ => {
            v = match norm {
                Norm::Rank | Norm::Borda => rank_norm(norm, q.n_c, q.n_read[list], rank),
                _ if rank == 0 => 0.0,
                _ => q.norms[list].apply(sign(plan, list) * raw(q.scores, list, position)),
            };
            if !v.is_finite() {
                return Err(v);
            }
            term(method, w, v)
        }
    };
    Ok(Contribution {
        list: list as u32,
        position,
        value: c,
        raw: if rank == 0 {
            f64::NAN
        } else {
            raw(q.scores, list, position)
        },
        normalized: v,
    })
}

/// The 1-based rank of `position` (0: [`UNRANKED`]).
#[inline(always)]
fn rank(position: u32) -> u64 {
    if position == UNRANKED {
        0
    } else {
        u64::from(position) + 1
    }
}

/// What a method adds for a normalised value (BordaFuse: points) `v` of a list of weight `w`.
#[inline(always)]
fn term(method: Method, w: f64, v: f64) -> f64 {
    match method {
        Method::Wsum
        | Method::Mixed
        | Method::RelativeScore
        | Method::ArithmeticMean
        | Method::Bordafuse => w * v,
        Method::GeometricMean if v > 0.0 => w * v.ln(),
        Method::HarmonicMean if v > 0.0 => w / v,
        Method::GeometricMean | Method::HarmonicMean => 0.0,
        _ => v,
    }
}

/// The methods whose score is the canonical sum of a key's terms, scaled by [`scale_sum`].
fn sums_terms(method: Method) -> bool {
    matches!(
        method,
        Method::Sum
            | Method::Wsum
            | Method::Mnz
            | Method::Anz
            | Method::Gmnz
            | Method::Wmnz
            | Method::Mixed
            | Method::RelativeScore
            | Method::Dbsf
    )
}

/// The score of a [`sums_terms`] method from the canonical sum `total` of a key's terms, the
/// number of lists `present` holding it and (Wmnz) `weights()`, the canonical sum of their
/// weights: (score, factor, divisor), NaN for what the method does not apply.
#[inline(always)]
fn scale_sum(
    plan: &Plan,
    total: f64,
    present: usize,
    weights: impl FnOnce() -> f64,
) -> (f64, f64, f64) {
    scale_by(
        plan.fusion.method,
        total,
        present_factor(plan, present),
        weights,
    )
}

/// What a [`sums_terms`] method scales the sum of a key held by `present` lists by, that
/// depends only on `present`: (factor, divisor), NaN for what the method does not apply (Wmnz's
/// factor depends on the weights).
#[inline(always)]
fn present_factor(plan: &Plan, present: usize) -> (f64, f64) {
    let p = present as f64;
    match plan.fusion.method {
        Method::Mnz => (p, f64::NAN),
        Method::Anz => (f64::NAN, p),
        Method::Gmnz => (p.powf(plan.fusion.gamma.unwrap_or(1.0)), f64::NAN),
        Method::Mixed => (p.sqrt(), f64::NAN),
        _ => (f64::NAN, f64::NAN),
    }
}

/// [`scale_sum`] with the key's [`present_factor`] given.
#[inline(always)]
fn scale_by(
    method: Method,
    total: f64,
    (factor, divisor): (f64, f64),
    weights: impl FnOnce() -> f64,
) -> (f64, f64, f64) {
    match method {
        Method::Mnz | Method::Gmnz | Method::Mixed => (total * factor, factor, divisor),
        Method::Anz => (total / divisor, factor, divisor),
        Method::Wmnz => {
            let factor = weights();
            (total * factor, factor, divisor)
        }
        _ => (total, factor, divisor),
    }
}

/// Max and min (Python's: the first of the largest, smallest value) or the median of a key's
/// normalised values `values` (not empty), in list order; sorted in place for the median. Any
/// order of the same values gives the same bits: equal values differ at most in the sign of a
/// zero, which the `+ 0.0` removes (and the median's two middle values add either way).
#[inline(always)]
fn order_stat(method: Method, values: &mut [f64]) -> f64 {
    let pick = |better: fn(f64, f64) -> bool| {
        let mut best = values[0];
        for &v in &values[1..] {
            if better(v, best) {
                best = v;
            }
        }
        best
    };
    // A zero is +0.0 whatever the order of the lists (`+ 0.0`).
    match method {
        Method::Max => pick(|v, best| v > best) + 0.0,
        Method::Min => pick(|v, best| v < best) + 0.0,
        _ => median(values) + 0.0,
    }
}

/// The rank and borda normalisations of a key at `rank` (0: not in the list; rank gives 0.0)
/// in a list of `n_read` items, of `n_c` keys in all.
#[inline(always)]
fn rank_norm(norm: Norm, n_c: f64, n_read: u32, rank: u64) -> f64 {
    match (norm, rank) {
        (Norm::Borda, 0) => 0.5 - (f64::from(n_read) - 1.0) / (2.0 * n_c),
        (Norm::Borda, _) => 1.0 - (rank - 1) as f64 / n_c,
        (_, 0) => 0.0,
        _ => 1.0 - (rank - 1) as f64 / f64::from(n_read),
    }
}

/// BordaFuse's points for a key at `rank` (0: not in the list) in a list of `n_read` items, of
/// `n_c` keys in all.
#[inline(always)]
fn borda_points(n_c: f64, n_read: u32, rank: u64) -> f64 {
    if rank == 0 {
        (n_c - f64::from(n_read) + 1.0) / 2.0
    } else {
        n_c - rank as f64 + 1.0
    }
}

/// Whether the method gives a key a value in every list read, holding it or not.
fn fills(plan: &Plan) -> bool {
    plan.norm == Norm::Borda
        || matches!(
            plan.fusion.method,
            Method::Bordafuse | Method::ArithmeticMean
        )
}

/// A key's score from its contributions `mine` (in list order, at least one) of which
/// `present` lists hold it: (score, factor, divisor), NaN for what the method does not apply.
/// Condorcet's score is set afterwards. `values` and `sums` are scratch.
fn combine(
    plan: &Plan,
    mine: &[Contribution],
    present: usize,
    values: &mut Vec<f64>,
    sums: &mut Vec<f64>,
) -> (f64, f64, f64) {
    values.clear();
    values.extend(mine.iter().map(|c| c.value));
    let total = canonical_sum(values);
    let weight = |c: &Contribution| plan.weights[c.list as usize];
    let score = match plan.fusion.method {
        m if sums_terms(m) => {
            let wmnz = || {
                sums.clear();
                let mut last = u32::MAX;
                for c in mine {
                    if c.list != last {
                        sums.push(plan.weights[c.list as usize]);
                        last = c.list;
                    }
                }
                canonical_sum(sums)
            };
            return scale_sum(plan, total, present, wmnz);
        }
        m @ (Method::Max | Method::Min | Method::Med) => {
            values.clear();
            values.extend(mine.iter().map(|c| c.normalized));
            order_stat(m, values)
        }
        m @ (Method::ArithmeticMean | Method::GeometricMean | Method::HarmonicMean) => {
            let parts = || mine.iter().map(|c| (weight(c), c.normalized, c.value));
            sums.clear();
            sums.resize(mine.len(), 0.0);
            let (score, divisor) = mean(m, parts, || total, sums);
            return (score, f64::NAN, divisor);
        }
        _ => total,
    };
    (score, f64::NAN, f64::NAN)
}

/// OpenSearch's means of a key from `parts()`, its (weight, normalised value, term) per
/// contribution, and `total()`, the canonical sum of its terms: (score, divisor). `sums` is
/// scratch, as long as the parts at least.
#[inline(always)]
fn mean<I: Iterator<Item = (f64, f64, f64)>>(
    method: Method,
    parts: impl Fn() -> I,
    total: impl FnOnce() -> f64,
    sums: &mut [f64],
) -> (f64, f64) {
    // The canonical sum of `of` over the parts whose normalised value `keep` keeps, and their
    // number.
    let mut kept = |keep: fn(f64) -> bool, of: fn((f64, f64, f64)) -> f64| {
        let mut n = 0;
        for p in parts().filter(|p| keep(p.1)) {
            sums[n] = of(p);
            n += 1;
        }
        (canonical_sum(&mut sums[..n]), n)
    };
    let weight = |p: (f64, f64, f64)| p.0;
    let term = |p: (f64, f64, f64)| p.2;
    match method {
        Method::ArithmeticMean => {
            let (weights, _) = kept(|v| v >= 0.0, weight);
            let (sum, _) = kept(|v| v >= 0.0, term);
            let score = if weights == 0.0 { 0.0 } else { sum / weights };
            (score, weights)
        }
        Method::GeometricMean => {
            let (weights, n) = kept(|v| v > 0.0, weight);
            let score = if n == 0 {
                0.0
            } else {
                (total() / weights).exp()
            };
            (score, weights)
        }
        _ => {
            let (terms, n) = kept(|v| v > 0.0, term);
            let (weights, _) = kept(|v| v > 0.0, weight);
            let score = if n == 0 { 0.0 } else { weights / terms };
            (score, terms)
        }
    }
}

/// One query in the engine's dense layout (at most [`super::engine::DENSE_MAX_LISTS`] lists
/// read, a key counted at most once per list), as its scan left it: what
/// [`Scored::score_dense`] reads.
pub struct Dense<'a, C: Fn(usize) -> usize, F: Fn(usize) -> (u32, u32)> {
    pub plan: &'a Plan,
    /// The lists read (weight not 0), ascending: list `read[s]` is slot `s`.
    pub read: &'a [usize],
    /// Per list (by index), the items read (holes not counted); filled when the method or
    /// norm reads it.
    pub n_read: &'a [u32],
    /// Per slot, the items of its list's window not counted (holes, repeats). With none, the
    /// list's counted items are its first `read_len` items, in order.
    pub skipped: &'a [u32],
    pub n_keys: usize,
    /// Key k's occurrences (list, position) are `occurrences[k * stride..][..count(k)]`.
    pub stride: usize,
    pub occurrences: &'a [(u32, u32)],
    pub count: C,
    /// Per key, its first occurrence (list, position), for errors.
    pub first: F,
    pub scores: Scores<'a>,
}

/// Condorcet weighs the sets of lists from a table of their weights' sums up to this many lists
/// read.
const CONDORCET_TABLE_LISTS: usize = 8;

/// The largest number of lists a [`Dense`] query reads.
const DENSE_MAX: usize = super::engine::DENSE_MAX_LISTS;

/// The error of key `key` of a dense query whose fused `score` is not finite.
fn not_finite_score<C, F>(q: &Dense<'_, C, F>, key: usize, score: f64) -> Error
where
    C: Fn(usize) -> usize,
    F: Fn(usize) -> (u32, u32),
{
    fused_not_finite((q.first)(key), score)
}

/// The error of a key whose first occurrence is `first` (list, position) and whose fused
/// `score` is not finite.
fn fused_not_finite(first: (u32, u32), score: f64) -> Error {
    Problem::NonFiniteScore {
        key: KeyRef::at(first.0 as usize, first.1 as usize),
        score,
        stage: Stage::Fused,
    }
    .into()
}

/// The error of [`Scored::dense_pairs`]'s key `key` with a value that is not finite: the first
/// such in list order (slot order), as [`Scored::dense_keys`] reports it.
#[cold]
#[inline(never)]
fn pair_not_finite<C, F>(
    q: &Dense<'_, C, F>,
    key: usize,
    mut values: [(usize, f64); 2],
    two: bool,
) -> Error
where
    C: Fn(usize) -> usize,
    F: Fn(usize) -> (u32, u32),
{
    let held = if two {
        &mut values[..]
    } else {
        &mut values[..1]
    };
    held.sort_by_key(|&(slot, _)| slot);
    let (slot, value) = held
        .iter()
        .copied()
        .find(|(_, v)| !v.is_finite())
        .unwrap_or(held[0]);
    let first = (q.first)(key);
    Problem::NonFiniteNormalized {
        key: KeyRef::at(first.0 as usize, first.1 as usize),
        list: q.read[slot],
        value,
    }
    .into()
}

/// The terms of a query's lists, normalised before its scan: what [`Scored::pre_terms`] gives
/// and [`Scored::score_terms`] reads.
#[derive(Default)]
pub struct PreTerms {
    /// Per slot (list read) `s`, the term of the item at position `p` of its window is
    /// `terms[starts[s] + p]`.
    pub terms: Vec<f64>,
    /// OpenSearch's geometric and harmonic means (else empty): whether the item's normalised
    /// value is kept (above 0), 1 or 0, beside its term.
    pub kept: Vec<u8>,
    /// The borda norm and BordaFuse, whose values depend on the number of keys of the query,
    /// known only after the scan: `terms` then holds each item's position (as f64), the scan
    /// writes it in its slot's own cell, and [`Scored::score_terms`] makes the terms, filling
    /// in the lists that do not hold a key.
    pub deferred: bool,
    /// Per slot, the items of its window that are not holes.
    pub n_read: [u32; DENSE_MAX],
    pub starts: [usize; DENSE_MAX],
    /// Per slot, the holes of its window: the items a scan that finds no repeat skips.
    pub holes: [u32; DENSE_MAX],
    /// The borda norm's ranked values `1 - p / |C|` by position p, for the query being scored
    /// (scratch of [`Scored::score_terms`]).
    pub borda: Vec<f64>,
    /// The rank norm's values `1 - p / counted` by position p in 0..n, for lists of `rank_shape`
    /// (n, counted): kept from list to list and query to query while the shape is the same.
    rank: Vec<f64>,
    rank_shape: (usize, u32),
}

/// Appends to `terms` the term of every raw score `x` of `row`: `w * norm.apply(s * x)` with a
/// weight, else `norm.apply(s * x)` (as [`term`] makes it of a sum of terms), one loop per case.
fn fill(terms: &mut Vec<f64>, row: &[f64], s: f64, norm: ListNorm, weight: Option<f64>) {
    macro_rules! fill {
        ($v:ident => $value:expr) => {
            match weight {
                Some(w) => terms.extend(row.iter().map(|&x| {
                    let $v = s * x;
                    w * $value
                })),
                None => terms.extend(row.iter().map(|&x| {
                    let $v = s * x;
                    $value
                })),
            }
        };
    }
    match norm {
        ListNorm::Identity => fill!(v => v),
        ListNorm::Constant(c) => fill!(v => { let _ = v; c }),
        ListNorm::Affine { sub, div } => fill!(v => (v - sub) / div),
        ListNorm::Scale { div } => fill!(v => v / div),
    }
}

/// Whether a method's score needs the number of lists holding a key, or their weights.
pub fn needs_present(method: Method) -> bool {
    matches!(
        method,
        Method::Mnz | Method::Anz | Method::Gmnz | Method::Mixed | Method::Wmnz
    )
}

/// Max, min and median: a key's score is one of its normalised values (or the mean of two).
fn is_order_stat(method: Method) -> bool {
    matches!(method, Method::Max | Method::Min | Method::Med)
}

/// Whether a key's score in [`Scored::score_terms`] is the canonical sum of its terms itself,
/// not scaled, divided or picked from them.
fn plain_sum(method: Method) -> bool {
    sums_terms(method)
        && !matches!(
            method,
            Method::Mnz | Method::Anz | Method::Gmnz | Method::Mixed | Method::Wmnz
        )
}

/// Whether [`Scored::score_terms`] reads how many lists hold each key.
pub fn terms_need_count(method: Method) -> bool {
    needs_present(method) || is_order_stat(method)
}

impl Scored {
    /// The fast path of the fusions other than Condorcet (a [`sums_terms`] method, max, min,
    /// med or one of OpenSearch's means, over scores or the rank normalisation; the borda norm
    /// and BordaFuse deferred, see [`PreTerms::deferred`]), in the dense layout, untraced:
    /// every item's term `term(method, w, v)` of its normalised value `v`, each list
    /// normalised over the items of its window that are not holes, *before* the scan, so that
    /// the scan adds terms as it adds RRF's. Right when the scan then skips no repeat (the
    /// caller checks: `skipped == holes`); the same values, bit for bit, as
    /// [`Scored::score_dense`] computes after the scan, which sees the same items in the same
    /// order. `len(list)` is a list's length, holes included; `holes(list, n)` how many of its first
    /// `n` items are holes.
    ///
    /// False (nothing decided: the caller takes the general path, which reports whatever is
    /// wrong in its own order) for anything else: another method or norm, a list without
    /// scores, a norm that fails (`max` of negative scores, an interruption), a normalised value
    /// that is not finite.
    #[allow(clippy::too_many_arguments)]
    pub fn pre_terms(
        &mut self,
        plan: &Plan,
        read: &[usize],
        scores: Scores<'_>,
        len: impl Fn(usize) -> usize,
        is_hole: impl Fn(usize, usize) -> bool,
        holes: impl Fn(usize, usize) -> u32,
        out: &mut PreTerms,
        cancel: &Cancel<'_>,
    ) -> bool {
        let method = plan.fusion.method;
        // OpenSearch's arithmetic mean is a sum of terms too when no normalised value is
        // negative (none is skipped): the sum over the weights of every list read.
        let arithmetic = method == Method::ArithmeticMean;
        // The geometric and harmonic means add the terms of the values kept (the others' are
        // 0.0) and divide by, or into, the weights of the lists that kept theirs.
        let means = matches!(method, Method::GeometricMean | Method::HarmonicMean);
        let by_rank = plan.norm == Norm::Rank;
        let deferred =
            method == Method::Bordafuse || sums_terms(method) && plan.norm == Norm::Borda;
        if !(sums_terms(method) || arithmetic || means || is_order_stat(method) || deferred)
            || !(plan.reads_scores() || by_rank || deferred)
            || plan.normalizer.is_some()
            || read.len() > DENSE_MAX
        {
            return false;
        }
        // The methods whose term is `w * v` (see `fill`).
        let weighted = term(method, 2.0, 1.0) == 2.0;
        out.terms.clear();
        out.kept.clear();
        out.deferred = deferred;
        // Qdrant's dbsf: every list's statistics at once (see `welford`).
        let mut dbsf_norms = [None; DENSE_MAX];
        if plan.norm == Norm::Dbsf && plan.reads_scores() {
            self.values.clear();
            let mut bounds = [0usize; DENSE_MAX + 1];
            for (slot, &list) in read.iter().enumerate() {
                let n = plan.read_len(list, len(list));
                let row = match scores.get(list).copied().flatten() {
                    Some(row) if row.len() >= n => row,
                    _ => return false,
                };
                let s = sign(plan, list);
                self.values
                    .extend((0..n).filter(|&p| !is_hole(list, p)).map(|p| s * row[p]));
                bounds[slot + 1] = self.values.len();
            }
            let mut stats = [(0.0, 0.0); DENSE_MAX];
            welford(&self.values, &bounds[..=read.len()], &mut stats);
            for (slot, norm) in dbsf_norms.iter_mut().enumerate().take(read.len()) {
                let n = bounds[slot + 1] - bounds[slot];
                *norm = (n > 0).then(|| dbsf(n, stats[slot]));
            }
        }
        for (slot, &list) in read.iter().enumerate() {
            let row = scores.get(list).copied().flatten();
            let n = plan.read_len(list, len(list));
            let row = match row {
                Some(row) if row.len() >= n => &row[..n],
                _ if by_rank || deferred => &[][..],
                _ => return false,
            };
            if deferred {
                let holes = holes(list, n);
                out.starts[slot] = out.terms.len();
                out.terms.extend((0..n).map(|p| p as f64));
                out.holes[slot] = holes;
                out.n_read[slot] = n as u32 - holes;
                continue;
            }
            let s = sign(plan, list);
            let holes = holes(list, n);
            let counted = n as u32 - holes;
            let norm = if plan.norm == Norm::None || by_rank || counted == 0 {
                ListNorm::Identity
            } else if let Some(norm) = dbsf_norms[slot] {
                norm
            } else {
                // The counted raw scores: the row itself when it has no hole and higher is
                // better (`1.0 * x` is `x`, bit for bit).
                let values: &[f64] = if holes == 0 && s == 1.0 {
                    row
                } else {
                    self.values.clear();
                    self.values
                        .extend((0..n).filter(|&p| !is_hole(list, p)).map(|p| s * row[p]));
                    &self.values
                };
                match list_norm(plan.norm, values, &mut self.sums, cancel) {
                    Ok(norm) => norm,
                    Err(_) => return false,
                }
            };
            // The normalised value of the item at position p (rank_norm's, for the rank norm).
            let n_read = f64::from(counted);
            let value = |p: usize| {
                if by_rank {
                    1.0 - p as f64 / n_read
                } else {
                    norm.apply(s * row[p])
                }
            };
            let w = plan.weights[list];
            let start = out.terms.len();
            let mut values_finite = true;
            if means {
                // Each value once: its term, and whether it is kept.
                for p in 0..n {
                    let v = value(p);
                    values_finite &= v.is_finite();
                    out.kept.push(u8::from(v > 0.0));
                    out.terms.push(term(method, w, v));
                }
            } else if by_rank {
                // The rank norm's values depend only on (n, counted): computed once for every
                // list of that shape (a division each), then only the terms.
                if out.rank_shape != (n, counted) {
                    out.rank.clear();
                    out.rank.extend((0..n).map(value));
                    out.rank_shape = (n, counted);
                }
                out.terms
                    .extend(out.rank.iter().map(|&v| term(method, w, v)));
            } else {
                // One loop per norm and kind of term (each simple enough to vectorise); the
                // values are `norm.apply(s * x)` and `term(method, w, v)`.
                fill(&mut out.terms, row, s, norm, weighted.then_some(w));
            }
            // A normalised value that is not finite (a hole's is never read), or a term that
            // overflows (the general path reports the score it makes).
            if !values_finite || !out.terms[start..].iter().all(|v| v.is_finite()) {
                return false;
            }
            if arithmetic && !(0..n).all(|p| value(p) >= 0.0) {
                return false;
            }
            out.starts[slot] = start;
            out.holes[slot] = holes;
        }
        true
    }

    /// The scores of the fast path (see [`Scored::pre_terms`]) from the scan's slots: key `k`'s
    /// terms are `values[k * stride..][..count(k)]` (with two lists, always two slots, the second
    /// +0.0 for a key in one list), its lists' slots the bits `seen(k)`. The canonical sum of
    /// the terms, scaled as [`scale_sum`] scales it (the arithmetic mean: divided by the sum of
    /// the weights of the lists read; the geometric and harmonic means: by, or into, the sum of
    /// the weights of the lists whose bits `8 + slot` of `seen(k)` say they kept their value):
    /// what [`Scored::score_dense`] gives.
    #[allow(clippy::too_many_arguments)]
    pub fn score_terms(
        plan: &Plan,
        read: &[usize],
        pre: &mut PreTerms,
        n_keys: usize,
        stride: usize,
        values: &mut [f64],
        seen: impl Fn(usize) -> u64,
        first: impl Fn(usize) -> (u32, u32),
        out: &mut Vec<f64>,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        let method = plan.fusion.method;
        let mut factors = [(f64::NAN, f64::NAN); DENSE_MAX + 1];
        for (present, f) in factors.iter_mut().enumerate() {
            *f = present_factor(plan, present);
        }
        let count = terms_need_count(method);
        let means = matches!(method, Method::GeometricMean | Method::HarmonicMean);
        // Wmnz: the canonical sum of the weights of the lists holding a key, per set of them;
        // the geometric and harmonic means: of the lists that kept their value (the bits above
        // the seen-lists bits).
        let mut weight_sums = [0.0f64; 1 << DENSE_MAX];
        if method == Method::Wmnz || means {
            for (bits, sum) in weight_sums.iter_mut().enumerate().take(1 << read.len()) {
                let mut ws = [0.0f64; DENSE_MAX];
                let mut n = 0;
                for (slot, &list) in read.iter().enumerate() {
                    if bits >> slot & 1 == 1 {
                        ws[n] = plan.weights[list];
                        n += 1;
                    }
                }
                *sum = canonical_sum(&mut ws[..n]);
            }
        }
        let weights_of = |bits: u64| weight_sums[(bits & 0xFF) as usize];
        if pre.deferred {
            return Self::score_deferred(
                plan,
                read,
                pre,
                n_keys,
                stride,
                values,
                seen,
                first,
                out,
                cancel,
                &factors,
                weights_of((1 << read.len()) - 1),
            );
        }
        // The arithmetic mean (see `pre_terms`): every list read counts, holding the key or not.
        let all_weights = {
            let mut ws = [0.0f64; DENSE_MAX];
            let n = read.len().min(DENSE_MAX);
            for (w, &list) in ws.iter_mut().zip(read) {
                *w = plan.weights[list];
            }
            canonical_sum(&mut ws[..n])
        };
        out.reserve(n_keys);
        if stride == 2 && plain_sum(method) {
            // Two slots a key and a plain sum: `0.0 + a + b` is the canonical sum (see
            // `canonical_sum`), in a pass that vectorises.
            let base = out.len();
            for block in values[..n_keys * 2].chunks(POLL_KEYS * 2) {
                cancel.check()?;
                out.extend(block.chunks_exact(2).map(|v| 0.0 + v[0] + v[1]));
            }
            if let Some(key) = out[base..].iter().position(|s| !s.is_finite()) {
                return Err(fused_not_finite(first(key), out[base + key]));
            }
            return Ok(());
        }
        for key in 0..n_keys {
            if key % POLL_KEYS == 0 {
                cancel.check()?;
            }
            let at = key * stride;
            let (total, n) = if stride == 2 {
                let n = if count { ones(seen(key)) } else { 0 };
                (canonical_sum(&mut values[at..at + 2]), n)
            } else {
                let n = ones(seen(key));
                (canonical_sum(&mut values[at..at + n]), n)
            };
            let score = if is_order_stat(method) {
                // The values in scan order, not list order: the same bits (see `order_stat`).
                order_stat(method, &mut values[at..at + n])
            } else if method == Method::ArithmeticMean {
                if all_weights == 0.0 {
                    0.0
                } else {
                    total / all_weights
                }
            } else if means {
                // As `mean`: the terms of values not kept are 0.0, which change no sum.
                let kept = seen(key) >> 8;
                let weights = weights_of(kept);
                match (kept, method) {
                    (0, _) => 0.0,
                    (_, Method::GeometricMean) => (total / weights).exp(),
                    _ => weights / total,
                }
            } else {
                scale_by(method, total, factors[n], || weights_of(seen(key))).0
            };
            if !score.is_finite() {
                return Err(fused_not_finite(first(key), score));
            }
            out.push(score);
        }
        Ok(())
    }

    /// [`Scored::score_terms`] of the borda norm and BordaFuse ([`PreTerms::deferred`]): key
    /// `k`'s position in slot `s` is `values[k * stride + s]` when bit `s` of `seen(k)` is set;
    /// every slot gives a value, the unranked one where the key is missing, and every list
    /// read counts as holding the key (as the general path fills them in). `all_weights`: the
    /// canonical sum of the weights of every list read (Wmnz).
    #[allow(clippy::too_many_arguments)]
    fn score_deferred(
        plan: &Plan,
        read: &[usize],
        pre: &mut PreTerms,
        n_keys: usize,
        stride: usize,
        values: &[f64],
        seen: impl Fn(usize) -> u64,
        first: impl Fn(usize) -> (u32, u32),
        out: &mut Vec<f64>,
        cancel: &Cancel<'_>,
        factors: &[(f64, f64)],
        all_weights: f64,
    ) -> Result<(), Error> {
        let method = plan.fusion.method;
        let n_c = n_keys as f64;
        let l = read.len();
        // The borda norm's ranked value depends only on the position: one division per
        // position of the longest window, not one per key and list.
        pre.borda.clear();
        if method != Method::Bordafuse {
            let longest = (0..l)
                .map(|slot| (pre.n_read[slot] + pre.holes[slot]) as usize)
                .max()
                .unwrap_or(0);
            pre.borda
                .extend((0..longest).map(|p| rank_norm(Norm::Borda, n_c, 0, p as u64 + 1)));
        }
        let pre = &*pre;
        // The term of a key at `rank` (0: not in the list) of the slot-th list read.
        let term_at = |slot: usize, rank: u64| {
            let w = plan.weights[read[slot]];
            if method == Method::Bordafuse {
                w * borda_points(n_c, pre.n_read[slot], rank)
            } else {
                let v = match rank.checked_sub(1).and_then(|p| pre.borda.get(p as usize)) {
                    Some(&v) => v,
                    None => rank_norm(Norm::Borda, n_c, pre.n_read[slot], rank),
                };
                term(method, w, v)
            }
        };
        let mut unranked = [0.0f64; DENSE_MAX];
        for (slot, u) in unranked.iter_mut().enumerate().take(l) {
            *u = term_at(slot, 0);
        }
        let mut terms = [0.0f64; DENSE_MAX];
        out.reserve(n_keys);
        for key in 0..n_keys {
            if key % POLL_KEYS == 0 {
                cancel.check()?;
            }
            let bits = seen(key);
            for slot in 0..l {
                terms[slot] = if bits >> slot & 1 == 1 {
                    term_at(slot, values[key * stride + slot] as u64 + 1)
                } else {
                    unranked[slot]
                };
            }
            let total = canonical_sum(&mut terms[..l]);
            let score = if method == Method::Bordafuse {
                total
            } else {
                scale_by(method, total, factors[l], || all_weights).0
            };
            if !score.is_finite() {
                return Err(fused_not_finite(first(key), score));
            }
            out.push(score);
        }
        Ok(())
    }

    /// Scores every key of `q` by its method (anything but RRF, RBC and the ISR family).
    pub fn score(&mut self, q: &Scanned<'_>, cancel: &Cancel<'_>) -> Result<(), Error> {
        let plan = q.plan;
        let norm = plan.norm;
        let n_keys = q.offsets.len().saturating_sub(1);
        let n_lists = plan.n_lists();
        self.scores.clear();
        self.factors.clear();
        self.divisors.clear();
        self.offsets.clear();
        self.contributions.clear();
        self.offsets.push(0);

        // Each list's normalisation, over the raw scores of its counted items in list order.
        self.norms.clear();
        self.norms.resize(n_lists, ListNorm::Identity);
        // (`none` is the identity: no statistics to gather.)
        if plan.reads_scores() && norm != Norm::None {
            self.by_list.resize_with(n_lists, Vec::new);
            for positions in &mut self.by_list {
                positions.clear();
            }
            for e in q.entries {
                self.by_list[e.list as usize].push(e.position);
            }
            for &list in q.read {
                let positions = &mut self.by_list[list];
                if positions.is_empty() {
                    continue;
                }
                cancel::sort_unstable_by_key(positions, &|&p| p, cancel)?;
                self.values.clear();
                let s = sign(plan, list);
                self.values
                    .extend(positions.iter().map(|&p| s * raw(q.scores, list, p)));
                self.norms[list] = list_norm(norm, &self.values, &mut self.sums, cancel)?;
            }
        }

        let query = Query {
            plan,
            norms: &self.norms,
            n_read: q.n_read,
            n_c: n_keys as f64,
            scores: q.scores,
        };
        let fill = fills(plan);
        for key in 0..n_keys {
            if key % POLL_KEYS == 0 {
                cancel.check()?;
            }
            let first = q.firsts[key];
            let key_ref = || KeyRef::at(first.0 as usize, first.1 as usize);
            let not_finite = |list: usize| {
                move |value: f64| -> Error {
                    Problem::NonFiniteNormalized {
                        key: key_ref(),
                        list,
                        value,
                    }
                    .into()
                }
            };
            let entries = &q.entries[q.offsets[key] as usize..q.offsets[key + 1] as usize];
            let start = self.contributions.len();
            // In list order: a list's entries, or its fill-in when it holds none.
            let mut next = 0;
            let mut present = 0usize;
            for &list in q.read {
                let mut held = false;
                while next < entries.len() && entries[next].list as usize == list {
                    let c = contribution(&query, list, entries[next].position)
                        .map_err(not_finite(list))?;
                    self.contributions.push(c);
                    next += 1;
                    held = true;
                }
                if held {
                    present += 1;
                } else if fill {
                    let c = contribution(&query, list, UNRANKED).map_err(not_finite(list))?;
                    self.contributions.push(c);
                    if norm == Norm::Borda {
                        present += 1;
                    }
                }
            }
            let mine = &self.contributions[start..];
            let (score, factor, divisor) =
                combine(plan, mine, present, &mut self.values, &mut self.sums);
            if plan.fusion.method != Method::Condorcet && !score.is_finite() {
                return Err(Problem::NonFiniteScore {
                    key: key_ref(),
                    score,
                    stage: Stage::Fused,
                }
                .into());
            }
            self.scores.push(score);
            self.factors.push(factor);
            self.divisors.push(divisor);
            self.offsets.push(self.contributions.len() as u32);
        }
        if plan.fusion.method == Method::Condorcet {
            self.condorcet(q, n_keys, cancel)?;
        }
        Ok(())
    }

    /// [`Scored::score`] of a query in the dense layout, without traces, straight from the
    /// scan's slots (no per-key entries, contributions kept only while their key is scored):
    /// appends every key's score to `out`, the same bits as `score`. Not for Condorcet.
    pub fn score_dense<C, F>(
        &mut self,
        q: &Dense<'_, C, F>,
        out: &mut Vec<f64>,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error>
    where
        C: Fn(usize) -> usize,
        F: Fn(usize) -> (u32, u32),
    {
        let plan = q.plan;
        let norm = plan.norm;
        debug_assert!(plan.fusion.method != Method::Condorcet && q.read.len() <= DENSE_MAX);
        let n_lists = plan.n_lists();
        self.norms.clear();
        self.norms.resize(n_lists, ListNorm::Identity);
        if plan.reads_scores() && norm != Norm::None {
            for (slot, &list) in q.read.iter().enumerate() {
                self.values.clear();
                let s = sign(plan, list);
                match q.scores.get(list).copied().flatten() {
                    // Every item of the window counted: its scores, in list order.
                    Some(row) if q.skipped[slot] == 0 => {
                        let n = plan.read_len(list, row.len());
                        self.values.extend(row[..n].iter().map(|&x| s * x));
                    }
                    _ => {
                        let positions = &mut self.positions;
                        positions.clear();
                        for key in 0..q.n_keys {
                            let at = key * q.stride;
                            for &(l, p) in &q.occurrences[at..at + (q.count)(key)] {
                                if l as usize == list {
                                    positions.push(p);
                                }
                            }
                        }
                        positions.sort_unstable();
                        self.values
                            .extend(positions.iter().map(|&p| s * raw(q.scores, list, p)));
                    }
                }
                if !self.values.is_empty() {
                    self.norms[list] = list_norm(norm, &self.values, &mut self.sums, cancel)?;
                }
            }
        }
        self.slot_of.clear();
        self.slot_of.resize(n_lists, 0);
        for (slot, &list) in q.read.iter().enumerate() {
            self.slot_of[list] = slot as u8;
        }
        let (n_c, n_read) = (q.n_keys as f64, q.n_read);
        if plan.fusion.method == Method::Bordafuse {
            return self.dense_keys(q, out, cancel, |_, list, position| {
                borda_points(n_c, n_read[list], rank(position))
            });
        }
        if !plan.reads_scores() {
            return self.dense_keys(q, out, cancel, |_, list, position| {
                rank_norm(plan.norm, n_c, n_read[list], rank(position))
            });
        }
        // Per list read (by slot): the normalised value of every item of its window, list by
        // list (`ListNorm::apply` of the signed raw score: the same operations), and of a
        // position without a score.
        let mut table = std::mem::take(&mut self.normalized);
        table.clear();
        let mut spans = [(0usize, 0usize, f64::NAN); DENSE_MAX];
        for (slot, &list) in q.read.iter().enumerate() {
            let row = q.scores.get(list).copied().flatten().unwrap_or_default();
            let row = &row[..plan.read_len(list, row.len())];
            let (norm, s) = (self.norms[list], sign(plan, list));
            let start = table.len();
            match norm {
                ListNorm::Identity => table.extend(row.iter().map(|&x| s * x)),
                ListNorm::Constant(c) => table.resize(start + row.len(), c),
                ListNorm::Affine { sub, div } => {
                    table.extend(row.iter().map(|&x| (s * x - sub) / div));
                }
                ListNorm::Scale { div } => table.extend(row.iter().map(|&x| s * x / div)),
            }
            spans[slot] = (start, table.len(), norm.apply(s * f64::NAN));
        }
        let scored = self.dense_keys(q, out, cancel, |slot, _, position| {
            if position == UNRANKED {
                return 0.0;
            }
            let (start, end, missing) = spans[slot];
            table[start..end]
                .get(position as usize)
                .copied()
                .unwrap_or(missing)
        });
        self.normalized = table;
        scored
    }

    /// Every key's score in the dense layout, as [`Scored::score`] and [`combine`] compute it,
    /// a key's contributions in arrays of [`DENSE_MAX`] (no per-key buffer).
    /// `value(slot, list, position)` is the normalised value (BordaFuse: the points) of the key
    /// at `position` in list `list`, the `slot`-th list read ([`UNRANKED`]: the fill-in of a
    /// list not holding it).
    #[inline(always)]
    fn dense_keys<C, F>(
        &mut self,
        q: &Dense<'_, C, F>,
        out: &mut Vec<f64>,
        cancel: &Cancel<'_>,
        value: impl Fn(usize, usize, u32) -> f64,
    ) -> Result<(), Error>
    where
        C: Fn(usize) -> usize,
        F: Fn(usize) -> (u32, u32),
    {
        let plan = q.plan;
        let method = plan.fusion.method;
        let fill = fills(plan);
        let borda = plan.norm == Norm::Borda;
        // Every combination but the borda norm's and BordaFuse's fill-ins needs no list order
        // (canonical sums, max, min and median are the same whatever the order of the values):
        // the values straight from the key's occurrences, in scan order (the arithmetic mean's
        // fill-ins after them). A value that is not finite is reported by the loop in list order
        // below, as `score` reports it.
        let direct = !(borda || method == Method::Bordafuse);
        let scores = plan.reads_scores();
        // What a sum is scaled by, per number of lists holding the key.
        let mut factors = [(f64::NAN, f64::NAN); DENSE_MAX + 1];
        if sums_terms(method) {
            for (present, f) in factors.iter_mut().enumerate() {
                *f = present_factor(plan, present);
            }
        }
        if q.stride == 2
            && !fill
            && (sums_terms(method) || matches!(method, Method::Max | Method::Min))
        {
            return self.dense_pairs(q, out, cancel, value, &factors);
        }
        for key in 0..q.n_keys {
            if key % POLL_KEYS == 0 {
                cancel.check()?;
            }
            let at = key * q.stride;
            let occurrences = &q.occurrences[at..at + (q.count)(key)];
            if direct {
                // Weight, normalised value, term per value.
                let (mut ws, mut vs, mut cs) =
                    ([0.0f64; DENSE_MAX], [0.0; DENSE_MAX], [0.0; DENSE_MAX]);
                let mut finite = true;
                let mut held = 0u32;
                for (i, &(list, position)) in occurrences.iter().enumerate() {
                    let (list, slot) = (list as usize, self.slot_of[list as usize] as usize);
                    let (w, v) = (plan.weights[list], value(slot, list, position));
                    finite &= v.is_finite();
                    (ws[i], vs[i], cs[i]) = (w, v, term(method, w, v));
                    held |= 1 << slot;
                }
                let mut n = occurrences.len();
                if fill {
                    // The arithmetic mean: a list not holding the key gives it its value.
                    for (slot, &list) in q.read.iter().enumerate() {
                        if held >> slot & 1 == 0 {
                            let (w, v) = (plan.weights[list], value(slot, list, UNRANKED));
                            finite &= v.is_finite();
                            (ws[n], vs[n], cs[n]) = (w, v, term(method, w, v));
                            n += 1;
                        }
                    }
                }
                if finite {
                    let score = match method {
                        m @ (Method::Max | Method::Min | Method::Med) => {
                            order_stat(m, &mut vs[..n])
                        }
                        m @ (Method::ArithmeticMean
                        | Method::GeometricMean
                        | Method::HarmonicMean) => {
                            let mut terms = cs;
                            let total = || canonical_sum(&mut terms[..n]);
                            let parts = || (0..n).map(|i| (ws[i], vs[i], cs[i]));
                            mean(m, parts, total, &mut [0.0; DENSE_MAX]).0
                        }
                        m => {
                            let total = canonical_sum(&mut cs[..n]);
                            scale_by(m, total, factors[n], || canonical_sum(&mut ws[..n])).0
                        }
                    };
                    if !score.is_finite() {
                        return Err(not_finite_score(q, key, score));
                    }
                    out.push(score);
                    continue;
                }
            }
            let mut by_slot = [UNRANKED; DENSE_MAX];
            for &(list, position) in occurrences {
                by_slot[self.slot_of[list as usize] as usize] = position;
            }
            // Per contribution, in list order: weight, normalised value, term.
            let (mut ws, mut vs, mut cs) =
                ([0.0f64; DENSE_MAX], [0.0; DENSE_MAX], [0.0; DENSE_MAX]);
            let (mut n, mut present) = (0, 0usize);
            for (slot, (&list, &position)) in q.read.iter().zip(&by_slot).enumerate() {
                if position == UNRANKED && !fill {
                    continue;
                }
                let (w, v) = (plan.weights[list], value(slot, list, position));
                // (Rank values and BordaFuse's points are finite: only scores are checked.)
                if scores && !v.is_finite() {
                    let first = (q.first)(key);
                    return Err(Problem::NonFiniteNormalized {
                        key: KeyRef::at(first.0 as usize, first.1 as usize),
                        list,
                        value: v,
                    }
                    .into());
                }
                (ws[n], vs[n], cs[n]) = (w, v, term(method, w, v));
                n += 1;
                present += usize::from(position != UNRANKED || borda);
            }
            let score = match method {
                m @ (Method::Max | Method::Min | Method::Med) => order_stat(m, &mut vs[..n]),
                m @ (Method::ArithmeticMean | Method::GeometricMean | Method::HarmonicMean) => {
                    // (`total` sorts a copy: `parts` reads the terms beside their weights.)
                    let mut terms = cs;
                    let total = || canonical_sum(&mut terms[..n]);
                    let parts = || (0..n).map(|i| (ws[i], vs[i], cs[i]));
                    mean(m, parts, total, &mut [0.0; DENSE_MAX]).0
                }
                m => {
                    let total = canonical_sum(&mut cs[..n]);
                    if sums_terms(m) {
                        scale_sum(plan, total, present, || canonical_sum(&mut ws[..n])).0
                    } else {
                        total // BordaFuse
                    }
                }
            };
            if !score.is_finite() {
                return Err(not_finite_score(q, key, score));
            }
            out.push(score);
        }
        Ok(())
    }

    /// [`Scored::dense_keys`] for exactly two lists read (hybrid search's lexical + vector, the
    /// commonest case), no fill-ins, and a [`sums_terms`] method, max or min: the same scores,
    /// with no branch on whether a key is in one list or both (random in fused lists). A key in
    /// one list gets a second term of +0.0, which changes no canonical sum (see
    /// `Workspace::score_keys`), and a second value equal to its first, which changes no max or
    /// min.
    #[inline(always)]
    fn dense_pairs<C, F>(
        &self,
        q: &Dense<'_, C, F>,
        out: &mut Vec<f64>,
        cancel: &Cancel<'_>,
        value: impl Fn(usize, usize, u32) -> f64,
        factors: &[(f64, f64); DENSE_MAX + 1],
    ) -> Result<(), Error>
    where
        C: Fn(usize) -> usize,
        F: Fn(usize) -> (u32, u32),
    {
        let plan = q.plan;
        let method = plan.fusion.method;
        let weights = [plan.weights[q.read[0]], plan.weights[q.read[1]]];
        let sums = sums_terms(method);
        out.reserve(q.n_keys);
        for key in 0..q.n_keys {
            if key % POLL_KEYS == 0 {
                cancel.check()?;
            }
            let at = key * 2;
            let two = (q.count)(key) == 2;
            // The first occurrence is the key's; the second slot is read whatever it holds (a
            // stale pair when the key is in one list: its value is then not used).
            let (list, position) = q.occurrences[at];
            let slot = usize::from(self.slot_of[list as usize] & 1);
            let other = 1 - slot;
            let v0 = value(slot, list as usize, position);
            let v1 = value(other, q.read[other], q.occurrences[at + 1].1);
            let v1 = if two { v1 } else { v0 };
            if !(v0.is_finite() && v1.is_finite()) {
                return Err(pair_not_finite(q, key, [(slot, v0), (other, v1)], two));
            }
            let score = if sums {
                let (w0, w1) = (weights[slot], if two { weights[other] } else { 0.0 });
                let c0 = term(method, w0, v0);
                let c1 = if two { term(method, w1, v1) } else { 0.0 };
                let n = 1 + usize::from(two);
                let total = canonical_sum(&mut [c0, c1]);
                scale_by(method, total, factors[n], || canonical_sum(&mut [w0, w1])).0
            } else if method == Method::Max {
                (if v1 > v0 { v1 } else { v0 }) + 0.0
            } else {
                (if v1 < v0 { v1 } else { v0 }) + 0.0
            };
            if !score.is_finite() {
                return Err(not_finite_score(q, key, score));
            }
            out.push(score);
        }
        Ok(())
    }

    /// Condorcet: each key's score is one plus the number of keys it beats: more list weight
    /// ranks it ahead of the other than behind it (a list holding neither abstains).
    fn condorcet(
        &mut self,
        q: &Scanned<'_>,
        n_keys: usize,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        let entries = |key: usize| {
            q.entries[q.offsets[key] as usize..q.offsets[key + 1] as usize]
                .iter()
                .map(|e| (e.list, e.position))
        };
        self.condorcet_of(q.plan, q.read, n_keys, entries, cancel)
    }

    /// Condorcet's scores (see [`Scored::condorcet`]) into `scores`, from each key's counted
    /// occurrences (list, position) `occurrences(key)`, in any order; the lists read are
    /// `read`. For the engine's untraced dense layout, which has no per-key entries. `cancel`
    /// is polled as the keys are compared (`Problem::Interrupted`).
    pub fn condorcet_of<I: Iterator<Item = (u32, u32)>>(
        &mut self,
        plan: &Plan,
        read: &[usize],
        n_keys: usize,
        occurrences: impl Fn(usize) -> I,
        cancel: &Cancel<'_>,
    ) -> Result<(), Error> {
        let l = read.len();
        // ranks[key * l + slot]: the key's best position in the slot-th list read, or UNRANKED.
        self.ranks.clear();
        self.ranks.resize(n_keys * l, UNRANKED);
        for key in 0..n_keys {
            for (list, position) in occurrences(key) {
                if let Ok(slot) = read.binary_search(&(list as usize)) {
                    let best = &mut self.ranks[key * l + slot];
                    *best = position.min(*best);
                }
            }
        }
        let weights: Vec<f64> = read.iter().map(|&i| plan.weights[i]).collect();
        // x beats y when the lists ranking x ahead of y weigh more than those ranking y ahead
        // of x (canonical sums of their weights): both answers from one comparison. With few
        // lists, the sums of every set of lists (by bits) in a table.
        let table: Vec<f64> = if l <= CONDORCET_TABLE_LISTS {
            (0..1usize << l)
                .map(|set| {
                    let mut ws: Vec<f64> = (0..l)
                        .filter(|s| set >> s & 1 == 1)
                        .map(|s| weights[s])
                        .collect();
                    canonical_sum(&mut ws)
                })
                .collect()
        } else {
            Vec::new()
        };
        if l == 2 {
            cancel.check()?;
            pair_wins(
                &self.ranks,
                n_keys,
                &table,
                &mut self.scores,
                &mut self.pair,
            );
            Ok(())
        } else if counts_decide(&table, l) {
            counted_wins(
                &self.ranks,
                l,
                n_keys,
                &mut self.scores,
                &mut self.pair,
                cancel,
            )
        } else {
            pairwise_wins(
                &self.ranks,
                l,
                n_keys,
                &weights,
                &table,
                &mut self.scores,
                cancel,
            )
        }
    }
}

/// Condorcet's scores, one plus each key's wins, comparing every pair of keys: `ranks[key * l +
/// slot]` is the key's best position in the slot-th list read (or [`UNRANKED`]), `table` the
/// canonical sums of the weights of every set of lists (by bits; empty with more than
/// [`CONDORCET_TABLE_LISTS`] lists, then summed per pair).
fn pairwise_wins(
    ranks: &[u32],
    l: usize,
    n_keys: usize,
    weights: &[f64],
    table: &[f64],
    wins: &mut Vec<f64>,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    let (mut ahead, mut behind) = (Vec::with_capacity(l), Vec::with_capacity(l));
    // x beats y when the lists ranking x ahead of y weigh more than those ranking y ahead of x
    // (canonical sums of their weights): both answers from one comparison.
    let mut weigh = |rx: &[u32], ry: &[u32]| -> (f64, f64) {
        if !table.is_empty() {
            let (mut a, mut b) = (0usize, 0usize);
            for s in 0..l {
                a |= usize::from(rx[s] < ry[s]) << s;
                b |= usize::from(ry[s] < rx[s]) << s;
            }
            return (table[a], table[b]);
        }
        ahead.clear();
        behind.clear();
        for s in 0..l {
            // UNRANKED is the largest position: a present key is ahead of a missing one.
            if rx[s] < ry[s] {
                ahead.push(weights[s]);
            } else if ry[s] < rx[s] {
                behind.push(weights[s]);
            }
        }
        (canonical_sum(&mut ahead), canonical_sum(&mut behind))
    };
    // Integer counts, added without a branch on who wins (which is as good as random).
    let mut won = vec![0u32; n_keys];
    for x in 0..n_keys {
        // Polled once per key: each compares itself with every key after it.
        if x % 64 == 0 {
            cancel.check()?;
        }
        let rx = &ranks[x * l..(x + 1) * l];
        let mut won_x = 0;
        for y in x + 1..n_keys {
            let (a, b) = weigh(rx, &ranks[y * l..(y + 1) * l]);
            won_x += u32::from(a > b);
            won[y] += u32::from(b > a);
        }
        won[x] += won_x;
    }
    wins.clear();
    wins.extend(won.iter().map(|&w| 1.0 + f64::from(w)));
    Ok(())
}

/// Whether x beats y exactly when more lists rank x ahead of y than y ahead of x: `table`'s sum
/// of a set of lists depends on their number only and grows with it (equal positive weights,
/// as unweighted Condorcet's).
fn counts_decide(table: &[f64], l: usize) -> bool {
    let by_count = |n: usize| table[(1 << n) - 1];
    table.len() == 1 << l
        && (0..table.len()).all(|set| table[set] == by_count(set.count_ones() as usize))
        && (0..l).all(|n| by_count(n) < by_count(n + 1))
}

/// [`pairwise_wins`] when the counts of lists decide (see [`counts_decide`]), 64 keys at a time:
/// per list, bitsets of the keys at the places before each place (prefixes); for key x, each
/// list gives the keys it ranks x ahead of (those not in the prefix through x's place: behind
/// it, or missing) and the keys it ranks ahead of x (the prefix before x's place; every key it
/// holds when x is missing), which bit-sliced counters add up per key y, and x beats the keys
/// whose first count exceeds the second. O(n² L / 64) for n keys and L lists; the same integers
/// as [`pairwise_wins`].
fn counted_wins(
    ranks: &[u32],
    l: usize,
    n_keys: usize,
    wins: &mut Vec<f64>,
    scratch: &mut PairScratch,
    cancel: &Cancel<'_>,
) -> Result<(), Error> {
    // Counts up to 15 lists in 4 bit slices (the table, and so this path, stops at 8).
    const SLICES: usize = 4;
    let words = n_keys.div_ceil(64);
    let PairScratch {
        prefixes,
        places,
        order,
        ..
    } = scratch;
    places.clear();
    places.resize(n_keys * l, u32::MAX);
    prefixes.clear();
    // Per list: where its prefixes start, and how many keys it holds.
    let mut lists = Vec::with_capacity(l);
    for s in 0..l {
        keys_by_position(ranks, l, s, n_keys, order);
        let start = prefixes.len();
        prefixes.resize(start + words, 0);
        for (place, &k) in order.iter().enumerate() {
            places[k as usize * l + s] = place as u32;
            let last = prefixes.len() - words;
            prefixes.extend_from_within(last..);
            let at = prefixes.len() - words + k as usize / 64;
            prefixes[at] |= 1 << (k % 64);
        }
        lists.push((start, order.len()));
    }
    let last_word = match n_keys % 64 {
        0 => !0u64,
        r => (1u64 << r) - 1,
    };
    // Per list, for the key at hand: the prefix rows of the keys it is ahead of (their
    // complement; None: no key) and of the keys ahead of it.
    let mut rows = Vec::with_capacity(l);
    wins.clear();
    wins.reserve(n_keys);
    for x in 0..n_keys {
        if x % 64 == 0 {
            cancel.check()?;
        }
        rows.clear();
        rows.extend(
            lists
                .iter()
                .enumerate()
                .map(|(s, &(start, held))| match places[x * l + s] {
                    u32::MAX => (None, start + held * words),
                    p => {
                        let p = p as usize;
                        (Some(start + (p + 1) * words), start + p * words)
                    }
                }),
        );
        let mut won = 0u32;
        for w in 0..words {
            let (mut ahead, mut behind) = ([0u64; SLICES], [0u64; SLICES]);
            for &(x_ahead, y_ahead) in &rows {
                let x_ahead = x_ahead.map_or(0, |row| !prefixes[row + w]);
                add_bits(&mut ahead, x_ahead);
                add_bits(&mut behind, prefixes[y_ahead + w]);
            }
            // ahead > behind, from the top slice down.
            let (mut greater, mut equal) = (0u64, !0u64);
            for i in (0..SLICES).rev() {
                greater |= equal & ahead[i] & !behind[i];
                equal &= !(ahead[i] ^ behind[i]);
            }
            let mask = if w + 1 == words { last_word } else { !0 };
            won += (greater & mask).count_ones();
        }
        wins.push(1.0 + f64::from(won));
    }
    Ok(())
}

/// The keys list `s` holds, in position order, into `order`: `ranks[key * l + s]` is the key's
/// position in it (its best: one key per position) or [`UNRANKED`]. No sort: each key goes to
/// its position in a table as long as the list, then the empty cells are dropped.
fn keys_by_position(ranks: &[u32], l: usize, s: usize, n_keys: usize, order: &mut Vec<u32>) {
    let rank = |k: usize| ranks[k * l + s];
    let len = (0..n_keys)
        .map(rank)
        .filter(|&r| r != UNRANKED)
        .max()
        .map_or(0, |r| r as usize + 1);
    order.clear();
    order.resize(len, u32::MAX);
    for k in 0..n_keys {
        let r = rank(k);
        if r != UNRANKED {
            order[r as usize] = k as u32;
        }
    }
    order.retain(|&k| k != u32::MAX);
}

/// Adds 1 to the bit-sliced counters (`counters[i]`: bit i of 64 counts) where `bits` is set.
#[inline(always)]
fn add_bits<const N: usize>(counters: &mut [u64; N], bits: u64) {
    let mut carry = bits;
    for c in counters.iter_mut() {
        let next = *c & carry;
        *c ^= carry;
        carry = next;
    }
}

/// The buffers of [`pair_wins`] and [`counted_wins`], kept from query to query.
#[derive(Default)]
pub struct PairScratch {
    /// [`counted_wins`]: every list's prefix bitsets, and each key's place in each list.
    prefixes: Vec<u64>,
    places: Vec<u32>,
    order: Vec<u32>,
    place: Vec<[u32; 2]>,
    by_position: [Vec<u32>; 2],
    joint: Vec<u64>,
    tree: Vec<u32>,
    only_in_1: Vec<u64>,
}

/// [`pairwise_wins`] with two lists, by counting instead of comparing every pair: in each list
/// another key is behind x (A), ahead of it (B) or, both missing, tied (T), and whether x
/// beats it depends only on that pair of relations (a 3 x 3 table from the weights). Per key,
/// the relations' totals per list are its place in that list, and one joint count — the keys
/// behind x in both lists, or behind it in one and missing with it from the other — found by
/// a sweep down list 0 with a Fenwick tree over places in list 1 — gives the other counts.
/// O(n log n) for n keys, the same integers as [`pairwise_wins`].
fn pair_wins(
    ranks: &[u32],
    n_keys: usize,
    table: &[f64],
    wins: &mut Vec<f64>,
    scratch: &mut PairScratch,
) {
    const A: usize = 0;
    const B: usize = 1;
    const T: usize = 2;
    let beats = |c0: usize, c1: usize| {
        let a = usize::from(c0 == A) | usize::from(c1 == A) << 1;
        let b = usize::from(c0 == B) | usize::from(c1 == B) << 1;
        table[a] > table[b]
    };
    let mut beat = [[false; 3]; 3];
    for (c0, row) in beat.iter_mut().enumerate() {
        for (c1, cell) in row.iter_mut().enumerate() {
            *cell = beats(c0, c1);
        }
    }
    let n = n_keys as u64;
    let rank = |key: usize, s: usize| ranks[key * 2 + s];
    // Each list's keys by position: a key's place is how many keys the list ranks ahead of it.
    let PairScratch {
        place,
        by_position,
        joint,
        tree,
        only_in_1,
        ..
    } = scratch;
    place.clear();
    place.resize(n_keys, [u32::MAX; 2]);
    for (s, order) in by_position.iter_mut().enumerate() {
        keys_by_position(ranks, 2, s, n_keys, order);
        for (i, &k) in order.iter().enumerate() {
            place[k as usize][s] = i as u32;
        }
    }
    let held = [by_position[0].len() as u64, by_position[1].len() as u64];
    // The joint count per key (see above), by a sweep from the bottom of list 0: first the keys
    // missing from it (all in list 1), then list 0's keys from its last.
    joint.clear();
    joint.resize(n_keys, 0);
    tree.clear();
    tree.resize(by_position[1].len() + 1, 0);
    // The Fenwick tree counts the keys inserted at each place in list 1.
    let insert = |tree: &mut [u32], place: u32| {
        let mut j = place as usize + 1;
        while j < tree.len() {
            tree[j] += 1;
            j += j & j.wrapping_neg();
        }
    };
    let (mut inserted, mut missing_from_1) = (0u64, 0u64);
    // List 1's keys missing from list 0, in list 1's order.
    only_in_1.clear();
    only_in_1.extend(
        by_position[1]
            .iter()
            .map(|&k| k as usize)
            .filter(|&k| rank(k, 0) == UNRANKED)
            .map(|k| u64::from(place[k][1]) << 32 | k as u64),
    );
    let m = only_in_1.len() as u64;
    for (i, &e) in only_in_1.iter().enumerate() {
        let key = e as u32 as usize;
        // Missing from list 0 with x, behind x in list 1.
        joint[key] = m - 1 - i as u64;
        insert(tree, place[key][1]);
        inserted += 1;
    }
    for &key in by_position[0].iter().rev() {
        let key = key as usize;
        let p1 = place[key][1];
        joint[key] = if p1 == u32::MAX {
            missing_from_1 // behind x in list 0, missing with x from list 1
        } else {
            // Behind x in both lists (a key missing from list 1 is behind x there).
            let mut ahead_or_at = 0u64;
            let mut j = p1 as usize + 1;
            while j > 0 {
                ahead_or_at += u64::from(tree[j]);
                j -= j & j.wrapping_neg();
            }
            inserted - ahead_or_at
        };
        if p1 == u32::MAX {
            missing_from_1 += 1;
        } else {
            insert(tree, p1);
        }
        inserted += 1;
    }
    wins.clear();
    wins.extend((0..n_keys).map(|x| {
        // Per list: keys ahead of x (B), tied with it (T), behind it (A).
        let mut ahead = [0u64; 2];
        let mut tied = [0u64; 2];
        let mut behind = [0u64; 2];
        for s in 0..2 {
            if place[x][s] == u32::MAX {
                (ahead[s], tied[s]) = (held[s], n - held[s] - 1);
            } else {
                ahead[s] = u64::from(place[x][s]);
            }
            behind[s] = n - 1 - ahead[s] - tied[s];
        }
        let k = joint[x];
        let mut count = [[0u64; 3]; 3];
        if place[x][0] != u32::MAX && place[x][1] != u32::MAX {
            count[A][A] = k;
            count[A][B] = behind[0] - k;
            count[B][A] = behind[1] - k;
            count[B][B] = ahead[0] - count[B][A];
        } else if place[x][1] == u32::MAX {
            count[A][T] = k;
            count[B][T] = tied[1] - k;
            count[A][B] = behind[0] - k;
            count[B][B] = ahead[0] - count[B][T];
        } else {
            count[T][A] = k;
            count[T][B] = tied[0] - k;
            count[B][A] = behind[1] - k;
            count[B][B] = ahead[1] - count[T][B];
        }
        let mut won = 0u64;
        for c0 in 0..3 {
            for c1 in 0..3 {
                if beat[c0][c1] {
                    won += count[c0][c1];
                }
            }
        }
        1.0 + won as f64
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The canonical sum as docs/semantics.md states it: sorted ascending, added from 0.0.
    fn sorted_sum(values: &[f64]) -> f64 {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        v.iter().fold(0.0, |acc, &x| acc + x)
    }

    /// The reference's `_root_sum_squares` over [`sorted_sum`].
    fn sorted_root(xs: &[f64], divisor: f64) -> f64 {
        let squares: Vec<f64> = xs.iter().map(|&x| x * x).collect();
        let root = (sorted_sum(&squares) / divisor).sqrt();
        if (root == 0.0 || root.is_infinite()) && xs.iter().any(|&x| x != 0.0) {
            let top = xs.iter().map(|x| x.abs()).fold(0.0, f64::max);
            let scaled: Vec<f64> = xs.iter().map(|&x| (x / top) * (x / top)).collect();
            return top * (sorted_sum(&scaled) / divisor).sqrt();
        }
        root
    }

    fn sum_of(values: &[f64]) -> f64 {
        canonical_sum_of(values.len(), |i| values[i], &mut Vec::new())
    }

    use crate::testing::Rng;

    /// Condorcet's scores by [`pairwise_wins`], the loop the faster paths are held to.
    fn every_pair(ranks: &[u32], l: usize, n_keys: usize, w: &[f64], table: &[f64]) -> Vec<f64> {
        let mut wins = Vec::new();
        pairwise_wins(ranks, l, n_keys, w, table, &mut wins, &Cancel::none()).unwrap();
        wins
    }

    #[test]
    fn condorcet_by_bitsets_wins_as_every_pair_compared() {
        // 3 to 8 lists, keys in some of them at distinct positions with gaps, up to 150 keys
        // (three words of bits, the last one partial); equal weights of either sign, and
        // unequal ones (where counts do not decide: the pairwise loop runs).
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut scratch = PairScratch::default();
        let mut counted_rounds = 0;
        for round in 0..1500 {
            let l = 3 + rng.below(6) as usize;
            let n_keys = rng.pick(&[0usize, 1, 2, 5, 63, 64, 65, 100, 150]);
            let mut ranks = vec![UNRANKED; n_keys * l];
            for s in 0..l {
                let mut keys: Vec<usize> = (0..n_keys).collect();
                for i in (1..n_keys).rev() {
                    keys.swap(i, rng.below(i as u64 + 1) as usize);
                }
                let mut position = 0u32;
                for &key in &keys {
                    position += 1 + rng.below(2) as u32;
                    if rng.below(4) > 0 {
                        ranks[key * l + s] = position;
                    }
                }
            }
            for key in 0..n_keys {
                if ranks[key * l..(key + 1) * l].iter().all(|&r| r == UNRANKED) {
                    ranks[key * l + rng.below(l as u64) as usize] = 10_000 + key as u32;
                }
            }
            let w: Vec<f64> = match rng.below(3) {
                0 => vec![1.0; l],
                1 => vec![rng.pick(&[0.5, -1.0, 1e-300, 1e308]); l],
                _ => (0..l).map(|_| rng.pick(&[1.0, 0.5, 2.0, -1.0])).collect(),
            };
            let table: Vec<f64> = (0..1usize << l)
                .map(|set| {
                    let ws: Vec<f64> = (0..l).filter(|s| set >> s & 1 == 1).map(|s| w[s]).collect();
                    sorted_sum(&ws)
                })
                .collect();
            let compared = every_pair(&ranks, l, n_keys, &w, &table);
            let decide = counts_decide(&table, l);
            // Counts decide for equal positive weights that do not overflow, and only then.
            let equal_positive = w.iter().all(|&x| x == w[0] && x > 0.0 && x < 1e300);
            assert_eq!(decide, equal_positive, "round {round}: {w:?}");
            if decide {
                counted_rounds += 1;
                let mut counted = Vec::new();
                counted_wins(
                    &ranks,
                    l,
                    n_keys,
                    &mut counted,
                    &mut scratch,
                    &Cancel::none(),
                )
                .unwrap();
                assert_eq!(counted, compared, "round {round}: {l} lists, {ranks:?}");
            }
        }
        assert!(counted_rounds > 400);
    }

    #[test]
    fn condorcet_by_counting_wins_as_every_pair_compared() {
        // Two lists: keys in one list or both, distinct positions with gaps (holes, repeats),
        // weights of either sign, equal or summing to zero (ties: nobody wins).
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let weights = [1.0, 0.5, 2.0, -1.0, -0.5, 1e-300, 3.0];
        // One scratch for every round, as the engine keeps it from query to query.
        let mut scratch = PairScratch::default();
        for round in 0..3000 {
            let n_keys = rng.below(30) as usize;
            let mut ranks = vec![UNRANKED; n_keys * 2];
            for s in 0..2 {
                let mut position = 0u32;
                for key in 0..n_keys {
                    position += 1 + rng.below(3) as u32;
                    if rng.below(3) > 0 {
                        ranks[key * 2 + s] = position;
                    }
                }
            }
            for key in 0..n_keys {
                if ranks[key * 2] == UNRANKED && ranks[key * 2 + 1] == UNRANKED {
                    ranks[key * 2 + rng.below(2) as usize] = 1000 + key as u32;
                }
            }
            // Positions need not grow with the key: shuffle which key is where.
            for key in (1..n_keys).rev() {
                let other = rng.below(key as u64 + 1) as usize;
                ranks.swap(key * 2, other * 2);
                if ranks[key * 2] == UNRANKED && ranks[key * 2 + 1] == UNRANKED
                    || ranks[other * 2] == UNRANKED && ranks[other * 2 + 1] == UNRANKED
                {
                    ranks.swap(key * 2, other * 2); // undo: a key must be in some list
                }
            }
            let w = [rng.pick(&weights), rng.pick(&weights)];
            let table = [0.0, w[0], w[1], sorted_sum(&w)];
            let mut counted = Vec::new();
            pair_wins(&ranks, n_keys, &table, &mut counted, &mut scratch);
            let compared = every_pair(&ranks, 2, n_keys, &w, &table);
            assert_eq!(counted, compared, "round {round}: {ranks:?} {w:?}");
        }
    }

    #[test]
    fn valleys_are_summed_without_sorting_and_give_the_sorted_bits() {
        // Monotone (both ways), with ties and zeros of both signs, and valleys.
        let cases: [&[f64]; 10] = [
            &[3.0, 2.0, 2.0, 1e-17, 0.0, -0.0, 0.0, -1.0, -1e16],
            &[-1e16, -1.0, -0.0, 0.0, -0.0, 1e-17, 2.0, 2.0, 3.0],
            &[0.1, 0.1, 0.1, 0.1],
            &[-0.0, 0.0, -0.0],
            &[0.0, -0.0],
            &[9.0, 4.0, 1.0, 0.0, 1.0, 4.0, 4.0, 16.0, 1e-300],
            &[1e16, 1.0, -0.0, 0.0, 1.0, 1e16],
            &[f64::INFINITY, 1.0, f64::NEG_INFINITY],
            &[1e308, 1e308, -1e308],
            &[0.3],
        ];
        for case in cases {
            let n = case.len();
            if case != [9.0, 4.0, 1.0, 0.0, 1.0, 4.0, 4.0, 16.0, 1e-300] {
                assert!(valley_sum(n, &|i| case[i]).is_some(), "{case:?}");
            }
            assert_eq!(
                sum_of(case).to_bits(),
                sorted_sum(case).to_bits(),
                "{case:?}"
            );
        }
        // Not valleys: the sort.
        for case in [
            &[1.0, 3.0, 2.0][..],
            &[2.0, 1.0, 3.0, 0.5],
            &[1.0, f64::NAN, 2.0],
        ] {
            assert!(valley_sum(case.len(), &|i| case[i]).is_none(), "{case:?}");
            assert_eq!(
                sum_of(case).to_bits(),
                sorted_sum(case).to_bits(),
                "{case:?}"
            );
        }
        assert_eq!(sum_of(&[]).to_bits(), 0.0f64.to_bits());
        // Where the order of additions matters: the list order would give another sum.
        let xs = [1e16, 1.0, 1.0, 1.0, 1.0];
        assert_ne!(xs.iter().fold(0.0, |a, &x| a + x), sorted_sum(&xs));
        assert_eq!(sum_of(&xs).to_bits(), sorted_sum(&xs).to_bits());
    }

    #[test]
    fn any_arrangement_of_ties_and_signed_zeros_gives_the_sorted_bits() {
        let pool = [
            -1e16, -3.0, -0.1, -1e-300, -0.0, 0.0, 0.0, 1e-300, 0.1, 0.2, 0.3, 1.0, 3.0, 1e16,
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut valleys = 0;
        for round in 0..20_000 {
            let n = 1 + rng.below(12) as usize;
            let mut v: Vec<f64> = (0..n).map(|_| rng.pick(&pool)).collect();
            // Descending, ascending, a valley, or as drawn; ties broken as they come.
            match round % 4 {
                0 => v.sort_by(|a, b| b.partial_cmp(a).unwrap()),
                1 => v.sort_by(|a, b| a.partial_cmp(b).unwrap()),
                2 => {
                    let cut = rng.below(n as u64 + 1) as usize;
                    v[..cut].sort_by(|a, b| b.partial_cmp(a).unwrap());
                    v[cut..].sort_by(|a, b| a.partial_cmp(b).unwrap());
                }
                _ => {}
            }
            valleys += usize::from(valley_sum(n, &|i| v[i]).is_some());
            assert_eq!(sum_of(&v).to_bits(), sorted_sum(&v).to_bits(), "{v:?}");
            // Squares (l2) and squared deviations (z-score), as list_norm forms them.
            let mean = sum_of(&v) / n as f64;
            let deviations: Vec<f64> = v.iter().map(|&x| x - mean).collect();
            let root = root_sum_squares(n, |i| v[i] - mean, n as f64, &mut Vec::new());
            let expected = sorted_root(&deviations, n as f64);
            assert_eq!(root.to_bits(), expected.to_bits(), "{v:?}");
        }
        assert!(valleys > 15_000, "{valleys}");
    }
}
