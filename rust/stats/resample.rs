//! The resampling tests of one paired comparison: the randomization (sign-flip permutation)
//! test, exact or sampled, and the paired bootstrap. Both read their random draws from a
//! [`Xoshiro`] stream in the order docs/semantics.md gives, and add in query order, so that the
//! reference (`_reference.py`) draws and adds the same numbers.

use super::rng::{below, Xoshiro};
use super::sum;
use crate::cancel::Cancel;

/// Sign vectors whose sums are computed side by side (independent additions, in vector lanes).
const LANES: usize = 8;
/// Bootstrap resamples summed side by side.
const RESAMPLE_LANES: usize = 4;
/// About this many additions between two polls of the `Cancel`.
const POLL_WORK: usize = 1 << 18;

/// Whether the randomization test enumerates every sign vector: `2^n <= permutations`.
pub fn exact(n: u64, permutations: u64) -> bool {
    n < 64 && (1u64 << n) <= permutations
}

/// The two-sided randomization test of the mean difference `d` (n >= 1): the share of sign
/// vectors `s` whose `|sum s_i d_i|` is at least the observed `|sum d_i|` less the tolerance
/// `n * sum |d_i| * 2^-52` (twice the bound on the rounding error of an n-term sum: two sums
/// that are equal in exact arithmetic always count as equal). Every one of the `2^n` vectors
/// when [`exact`] (p = count / 2^n), else `permutations` vectors drawn from `rng`, with
/// p = (count + 1) / (permutations + 1): vector b's flips are the bits of the stream's words
/// `b * W` to `b * W + W - 1` (W = ceil(n / 64)), query i flipped when bit `i % 64` of word
/// `i / 64` is set. `None` once `cancel` stops.
pub fn randomization(
    d: &[f64],
    permutations: u64,
    rng: &mut Xoshiro,
    words: &mut Vec<u64>,
    cancel: &Cancel<'_>,
) -> Option<f64> {
    let n = d.len();
    let observed = sum(d.iter().copied()).abs();
    let spread = sum(d.iter().map(|v| v.abs()));
    let threshold = observed - n as f64 * spread * f64::EPSILON;
    let width = n.div_ceil(64);
    words.clear();
    words.resize(width * LANES, 0);
    let poll_every = (POLL_WORK / (n * LANES)).max(1);
    let mut count = 0u64;
    let mut blocks = 0usize;
    if exact(n as u64, permutations) {
        let total = 1u64 << n;
        let mut first = 0u64;
        while first < total {
            let lanes = (total - first).min(LANES as u64) as usize;
            for (lane, w) in words.iter_mut().enumerate() {
                *w = first + lane as u64;
            }
            count += count_lanes(d, words, lanes, threshold);
            first += LANES as u64;
            blocks += 1;
            if blocks % poll_every == 0 && cancel.poll() {
                return None;
            }
        }
        return Some(count as f64 / total as f64);
    }
    let mut done = 0u64;
    while done < permutations {
        let lanes = (permutations - done).min(LANES as u64) as usize;
        for lane in 0..lanes {
            for k in 0..width {
                words[k * LANES + lane] = rng.next();
            }
        }
        count += count_lanes(d, words, lanes, threshold);
        done += lanes as u64;
        blocks += 1;
        if blocks % poll_every == 0 && cancel.poll() {
            return None;
        }
    }
    Some((count + 1) as f64 / (permutations + 1) as f64)
}

/// How many of the first `lanes` sign vectors in `words` (word k of lane l at
/// `words[k * LANES + l]`) give `|sum s_i d_i| >= threshold`. Each lane adds its signed values
/// in query order from 0.0; a flip negates a value exactly (its sign bit).
#[inline]
fn count_lanes(d: &[f64], words: &[u64], lanes: usize, threshold: f64) -> u64 {
    let mut acc = [0.0f64; LANES];
    for (chunk, block) in d.chunks(64).zip(words.chunks_exact(LANES)) {
        let mut w = [0u64; LANES];
        w.copy_from_slice(block);
        for (shift, &v) in chunk.iter().enumerate() {
            let bits = v.to_bits();
            for lane in 0..LANES {
                acc[lane] += f64::from_bits(bits ^ ((w[lane] >> shift) << 63));
            }
        }
    }
    acc[..lanes].iter().filter(|a| a.abs() >= threshold).count() as u64
}

/// What the paired bootstrap gives: its p-value and its percentile interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bootstrap {
    pub p: f64,
    pub low: f64,
    pub high: f64,
}

/// The paired bootstrap of the mean difference `d` (n >= 1): `resamples` resamples of n
/// queries drawn with replacement from `rng` (resample b's j-th query is [`below`] of the
/// stream's word `b * n + j`), each resample's mean its values added in draw order from 0.0,
/// over n. p = min(1, 2 min(1 + #{means <= 0}, 1 + #{means >= 0}) / (resamples + 1)); the
/// interval is the means' quantiles `(1 - confidence) / 2` and `1 - (1 - confidence) / 2`
/// ([`quantile`]). `None` once `cancel` stops.
pub fn bootstrap(
    d: &[f64],
    resamples: u64,
    confidence: f64,
    rng: &mut Xoshiro,
    means: &mut Vec<f64>,
    draws: &mut Vec<u64>,
    cancel: &Cancel<'_>,
) -> Option<Bootstrap> {
    let n = d.len();
    let size = n as f64;
    means.clear();
    draws.clear();
    draws.resize(n * RESAMPLE_LANES, 0);
    let poll_every = (POLL_WORK / (n * RESAMPLE_LANES)).max(1);
    let mut blocks = 0usize;
    let mut done = 0u64;
    while done < resamples {
        let lanes = (resamples - done).min(RESAMPLE_LANES as u64) as usize;
        rng.fill(&mut draws[..lanes * n]);
        let mut acc = [0.0f64; RESAMPLE_LANES];
        for j in 0..n {
            for (lane, a) in acc.iter_mut().enumerate() {
                // Lanes past `lanes` read stale draws; their sums are dropped.
                *a += d[below(draws[lane * n + j], n)];
            }
        }
        means.extend(acc[..lanes].iter().map(|a| a / size));
        done += lanes as u64;
        blocks += 1;
        if blocks % poll_every == 0 && cancel.poll() {
            return None;
        }
    }
    let at_most_zero = means.iter().filter(|&&m| m <= 0.0).count() as u64;
    let at_least_zero = means.iter().filter(|&&m| m >= 0.0).count() as u64;
    let smaller = at_most_zero.min(at_least_zero) + 1;
    let p = (2.0 * smaller as f64 / (resamples + 1) as f64).min(1.0);
    means.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Some(Bootstrap {
        p,
        low: quantile(means, tail),
        high: quantile(means, 1.0 - tail),
    })
}

/// The `q`-quantile of `sorted` (NaN when empty), interpolated linearly (numpy's default,
/// 'linear'): `h = (len - 1) q`, `j = floor(h)`, `sorted[j] + (h - j) (sorted[j + 1] -
/// sorted[j])`, or the last value when `j` is the last index.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let h = last as f64 * q;
    let j = h.floor();
    let i = j as usize;
    if i >= last {
        return sorted[last];
    }
    sorted[i] + (h - j) * (sorted[i + 1] - sorted[i])
}
