//! Each list's normalisation (docs/semantics.md, "Normalisations"), once: its statistics over
//! the raw scores of the list's counted items ([`list_norm`]), then the same affine map of every
//! score ([`ListNorm::apply`]). The sums are canonical; [`canonical_sum_of`] adds the terms of a
//! monotone-ish list without sorting them, with the sort's bits.

use super::canonical_sum;
use super::methods::Norm;
use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::format;

/// The most lists whose statistics [`welford`] runs side by side (the dense layout's).
pub const DENSE_MAX: usize = super::engine::DENSE_MAX_LISTS;

/// A list's normalisation, its statistics computed.
#[derive(Clone, Copy, Debug)]
pub enum ListNorm {
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
    pub fn apply(self, s: f64) -> f64 {
        match self {
            ListNorm::Identity => s,
            ListNorm::Constant(c) => c,
            ListNorm::Affine { sub, div } => (s - sub) / div,
            ListNorm::Scale { div } => s / div,
        }
    }
}

/// The normalisation `norm` of list `list` whose counted raw scores (in list order, negated
/// when the list is lower-is-better) are `values` (not empty). A statistic that overflows a
/// float (the span, a sum, a mean, a standard deviation, a length) is an error naming the list.
/// `cancel` is polled before the sums of a list (`Problem::Interrupted`).
pub fn list_norm(
    norm: Norm,
    list: usize,
    values: &[f64],
    scratch: &mut Vec<f64>,
    cancel: &Cancel<'_>,
) -> Result<ListNorm> {
    let n = values.len() as f64;
    let finite = |statistic: f64, what: &str| checked(norm, list, statistic, what);
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
            div: finite(high - low, "the span of its scores (max - min)")?,
        },
        Norm::Max if high < 0.0 => {
            return Err(Error::invalid(
                "norm",
                format!(
                    "norm='max' needs a list's largest score to be >= 0, got {} (use 'min-max' \
                     for negative scores)",
                    format::float(high)
                ),
            ))
        }
        Norm::Max if high == 0.0 => ListNorm::Constant(0.0),
        Norm::Max => ListNorm::Scale { div: high },
        Norm::Sum => {
            cancel.check()?;
            let total = canonical_sum_of(values.len(), |i| values[i] - low, scratch);
            let total = finite(total, "the sum of its scores above the min")?;
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
            let mean = finite(mean, "the sum of its scores (for their mean)")?;
            let sd = root_sum_squares(values.len(), |i| values[i] - mean, n, scratch);
            let sd = finite(sd, "their standard deviation")?;
            if sd == 0.0 {
                ListNorm::Constant(0.0)
            } else {
                ListNorm::Affine { sub: mean, div: sd }
            }
        }
        Norm::L2 => {
            cancel.check()?;
            let length = root_sum_squares(values.len(), |i| values[i], 1.0, scratch);
            let length = finite(length, "the length (l2 norm) of its scores")?;
            if length == 0.0 {
                ListNorm::Constant(0.0)
            } else {
                ListNorm::Scale { div: length }
            }
        }
        Norm::Dbsf => {
            let mut stats = [(0.0, 0.0)];
            welford(values, &[0, values.len()], &mut stats);
            dbsf(list, values.len(), stats[0])?
        }
    })
}

/// Welford's running (mean, sum of squared deviations) of each of the lists
/// `values[bounds[j]..bounds[j + 1]]` into `stats[j]` (at most [`DENSE_MAX`] lists). The lists' recurrences
/// are independent: run side by side, their divisions overlap. Each list's own operations are
/// done in its own order, so each gets the bits it gets alone.
pub fn welford(values: &[f64], bounds: &[usize], stats: &mut [(f64, f64)]) {
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

/// Qdrant's distribution-based normalisation of list `list` of `n` scores (not empty) of
/// Welford's (mean, sum of squared deviations) `stats`: sample sd, mean -/+ 3 sd, not clipped;
/// one score, or the two bounds equal, 0.5. A span that overflows (a sd that does) is an error.
pub fn dbsf(list: usize, n: usize, (mean, m2): (f64, f64)) -> Result<ListNorm> {
    if n == 1 {
        return Ok(ListNorm::Constant(0.5));
    }
    let sd = (m2 / (n as f64 - 1.0)).sqrt();
    let (low, high) = (mean - 3.0 * sd, mean + 3.0 * sd);
    if low == high {
        return Ok(ListNorm::Constant(0.5));
    }
    let span = "the span of mean -/+ 3 sd of its scores";
    Ok(ListNorm::Affine {
        sub: low,
        div: checked(Norm::Dbsf, list, high - low, span)?,
    })
}

/// `statistic` of list `list`'s scores under `norm`, when it is finite; else the error saying
/// that `what` overflows a float.
fn checked(norm: Norm, list: usize, statistic: f64, what: &str) -> Result<f64> {
    if statistic.is_finite() {
        return Ok(statistic);
    }
    Err(Error::invalid(
        "scores",
        format!(
            "norm='{}' cannot normalise scores[{list}]: {what} overflows a float",
            norm.name()
        ),
    )
    .for_list(list))
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
pub fn canonical_sum_of(n: usize, term: impl Fn(usize) -> f64, scratch: &mut Vec<f64>) -> f64 {
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
pub fn root_sum_squares(
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
