//! Fusion as `python/rankfusion/_reference.py` (`_fuse`, `_normalizer`, `_best_possible`)
//! defines it, written again step for step with nothing optimised: the scan, each list's
//! normalisation, every key's contributions and score, Condorcet, normalize=True, the boost,
//! `min_score`, the order and the page. Keys are i64 (a hole is `None`), as in a batch row.

use std::collections::BTreeSet;

use _core::error::Stage;
use _core::fusion::{Duplicates, Method, Norm, TieBreak};

/// The checked arguments of one fusion (the reference's `_Options`).
#[derive(Clone, Debug)]
pub struct Options {
    pub method: Method,
    /// The normalisation in effect ("none" for rank-based methods).
    pub norm: Norm,
    pub k: f64,
    pub weights: Vec<f64>,
    pub window: Option<usize>,
    pub duplicates: Duplicates,
    pub tie_break: TieBreak,
    pub offset: usize,
    pub limit: Option<usize>,
    pub min_score: Option<f64>,
    pub normalize: bool,
    pub phi: f64,
    pub gamma: f64,
    pub sigma: f64,
    pub lower_is_better: Option<Vec<bool>>,
    /// (boost_weight, key -> value)
    pub boost: Option<(f64, Vec<(i64, f64)>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Contribution {
    pub list: usize,
    /// 1-based; 0 when the key is not in the list.
    pub rank: usize,
    pub weight: f64,
    pub value: f64,
    pub raw: Option<f64>,
    pub normalized: Option<f64>,
}

#[derive(Clone, Debug)]
pub struct Hit {
    pub key: i64,
    pub score: f64,
    pub contributions: Vec<Contribution>,
    pub factor: Option<f64>,
    pub divisor: Option<f64>,
    pub boost: Option<f64>,
}

/// What the reference raises.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// ValueError: `lists[list]` has the key more than once (at `position`, 0-based).
    Duplicate { list: usize, position: usize },
    /// ValueError: norm='max' and a list's largest score is negative.
    NegativeMax,
    /// ValueError: a normalised value that is not finite.
    NonFiniteNormalized { key: i64, list: usize, value: f64 },
    /// ValueError: a score that is not finite, at `stage`.
    NonFiniteScore { key: i64, stage: Stage, score: f64 },
    /// ValueError: `scores[list][position]` is not finite and the method reads it (`fuse`'s
    /// argument check of `scores=`; `fuse` below is given checked scores and never raises it).
    RawScore { list: usize, position: usize },
}

/// The canonical sum: ascending order of value, from 0.0, one addition at a time. (Python's
/// `sorted` keeps -0.0 and 0.0 in their order where `total_cmp` puts -0.0 first: the sum is the
/// same, since adding a zero of either sign to a sum started at +0.0 never changes it; with a
/// NaN or infinities of both signs the sum is NaN in any order.)
pub fn canonical_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    let mut total = 0.0;
    for x in v {
        total += x;
    }
    total
}

/// Python's `min`: the first of the smallest.
fn py_min(values: &[f64]) -> f64 {
    let mut m = values[0];
    for &v in &values[1..] {
        if v < m {
            m = v;
        }
    }
    m
}

/// Python's `max`: the first of the largest.
fn py_max(values: &[f64]) -> f64 {
    let mut m = values[0];
    for &v in &values[1..] {
        if v > m {
            m = v;
        }
    }
    m
}

/// `x ** n` by repeated squaring (the reference's `_power`).
pub fn power(mut x: f64, mut n: u64) -> f64 {
    let mut result = 1.0;
    while n != 0 {
        if n & 1 == 1 {
            result *= x;
        }
        n >>= 1;
        x *= x;
    }
    result
}

/// The reference's `_median`: sorted (stably), the middle one or the mean of the two middle ones.
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    // Stable, and -0.0 == 0.0 as for Python's `<` (no NaN here: every value is finite).
    v.sort_by(|a, b| a.partial_cmp(b).expect("finite values"));
    let half = v.len() / 2;
    if v.len() % 2 == 1 {
        v[half]
    } else {
        (v[half - 1] + v[half]) / 2.0
    }
}

/// The reference's `_root_sum_squares`: sqrt(sum of x * x / divisor), the sum canonical; when
/// that root is 0 or inf and some x is not 0, the same of every x divided by the largest |x|
/// (Python's `max`: the first of the largest), multiplied back.
fn root_sum_squares(xs: &[f64], divisor: f64) -> f64 {
    let root = (canonical_sum(xs.iter().map(|&x| x * x)) / divisor).sqrt();
    if (root == 0.0 || root.is_infinite()) && xs.iter().any(|&x| x != 0.0) {
        let magnitudes: Vec<f64> = xs.iter().map(|x| x.abs()).collect();
        let top = py_max(&magnitudes);
        return top * (canonical_sum(xs.iter().map(|&x| (x / top) * (x / top))) / divisor).sqrt();
    }
    root
}

type Normalizer = Box<dyn Fn(f64) -> f64>;

/// The reference's `_normalizer`: the normalisation of one list whose counted raw scores, in
/// list order, are `values`.
fn normalizer(norm: Norm, values: &[f64]) -> Result<Normalizer, Failure> {
    if norm == Norm::None {
        return Ok(Box::new(|s| s));
    }
    let n = values.len() as f64;
    let (low, high) = (py_min(values), py_max(values));
    Ok(match norm {
        Norm::MinMax if high == low => Box::new(|_| 1.0),
        Norm::MinMax => Box::new(move |s| (s - low) / (high - low)),
        Norm::Max if high < 0.0 => return Err(Failure::NegativeMax),
        Norm::Max if high == 0.0 => Box::new(|_| 0.0),
        Norm::Max => Box::new(move |s| s / high),
        Norm::Sum => {
            let total = canonical_sum(values.iter().map(|&v| v - low));
            if total == 0.0 {
                Box::new(move |_| 1.0 / n)
            } else {
                Box::new(move |s| (s - low) / total)
            }
        }
        Norm::ZScore if high == low => Box::new(|_| 0.0),
        Norm::ZScore => {
            let mean = canonical_sum(values.iter().copied()) / n;
            let deviations: Vec<f64> = values.iter().map(|&v| v - mean).collect();
            let sd = root_sum_squares(&deviations, n);
            if sd == 0.0 {
                Box::new(|_| 0.0)
            } else {
                Box::new(move |s| (s - mean) / sd)
            }
        }
        Norm::L2 => {
            let length = root_sum_squares(values, 1.0);
            if length == 0.0 {
                Box::new(|_| 0.0)
            } else {
                Box::new(move |s| s / length)
            }
        }
        Norm::Dbsf => {
            if values.len() == 1 {
                return Ok(Box::new(|_| 0.5));
            }
            let (mut mean, mut m2) = (0.0f64, 0.0f64);
            for (i, &v) in values.iter().enumerate() {
                let count = (i + 1) as f64;
                let delta = v - mean;
                mean += delta / count;
                m2 += delta * (v - mean);
            }
            // Scores spanning the float range overflow m2 to -inf: a NaN sd.
            let sd = if m2 >= 0.0 {
                (m2 / (n - 1.0)).sqrt()
            } else {
                f64::NAN
            };
            let (low, high) = (mean - 3.0 * sd, mean + 3.0 * sd);
            if low == high {
                Box::new(|_| 0.5)
            } else {
                Box::new(move |s| (s - low) / (high - low))
            }
        }
        Norm::None | Norm::Rank | Norm::Borda => unreachable!("not a score normalisation"),
    })
}

/// normalize=True's divisor (the reference's `_best_possible`); None where it raises.
pub fn best_possible(weights: &[f64], k: f64) -> Option<f64> {
    if !weights.iter().any(|&w| w > 0.0) {
        return None;
    }
    let best = canonical_sum(weights.iter().filter(|&&w| w > 0.0).map(|&w| w / (k + 1.0)));
    (best > 0.0 && best.is_finite()).then_some(best)
}

/// The methods this model computes (written out by hand, apart from the core's table, so that
/// the fuzzer checks the table too): a method added to the table is fuzzed once it is here and
/// in [`fuse`].
pub const MODELLED: [Method; 22] = {
    use Method::*;
    [
        Rrf, Rbc, Isr, LogIsr, LognIsr, Bordafuse, Condorcet, Sum, Wsum, Mnz, Anz, Gmnz, Max,
        Min, Med, Wmnz, Mixed, Dbsf, RelativeScore, ArithmeticMean, GeometricMean, HarmonicMean,
    ]
};

/// Whether the method's values come from the raw scores (the reference's `_reads_scores`).
pub fn reads_scores(o: &Options) -> bool {
    !is_rank_based(o.method) && !matches!(o.norm, Norm::Rank | Norm::Borda)
}

fn is_rank_based(m: Method) -> bool {
    use Method::*;
    matches!(
        m,
        Rrf | Rbc | Isr | LogIsr | LognIsr | Bordafuse | Condorcet
    )
}

/// `_fuse` of `lists` (one per weight; `None` is a hole) whose raw scores are `raw_scores`
/// (per list, None or one per item; needed for every list read when the method reads scores).
pub fn fuse(
    lists: &[Vec<Option<i64>>],
    raw_scores: &[Option<Vec<f64>>],
    o: &Options,
) -> Result<Vec<Hit>, Failure> {
    let method = o.method;
    let weights = &o.weights;

    // 2. The interleaved scan.
    let read: Vec<usize> = (0..lists.len()).filter(|&i| weights[i] != 0.0).collect();
    let mut depth = read.iter().map(|&i| lists[i].len()).max().unwrap_or(0);
    if let Some(w) = o.window {
        depth = depth.min(w);
    }
    // key -> its counted occurrences (list, rank), in order of first appearance
    let mut found: Vec<(i64, Vec<(usize, usize)>)> = Vec::new();
    let mut n_read = vec![0usize; lists.len()];
    for position in 0..depth {
        let rank = position + 1;
        for &i in &read {
            if position >= lists[i].len() {
                continue;
            }
            let Some(key) = lists[i][position] else {
                continue;
            };
            n_read[i] += 1;
            let at = match found.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    found.push((key, Vec::new()));
                    found.len() - 1
                }
            };
            let entry = &mut found[at].1;
            if o.duplicates != Duplicates::Sum && entry.iter().any(|&(l, _)| l == i) {
                if o.duplicates == Duplicates::Error {
                    return Err(Failure::Duplicate { list: i, position });
                }
                continue;
            }
            entry.push((i, rank));
        }
    }
    let n_keys = found.len();

    // 3. Each list's normalisation.
    let raw = |i: usize, rank: usize| -> Option<f64> {
        raw_scores
            .get(i)
            .and_then(|s| s.as_ref())
            .map(|s| s[rank - 1])
    };
    let sign = |i: usize| -> f64 {
        match &o.lower_is_better {
            Some(l) if l[i] => -1.0,
            _ => 1.0,
        }
    };
    let mut normalized: Vec<Option<Normalizer>> = (0..lists.len()).map(|_| None).collect();
    if !is_rank_based(method) && !matches!(o.norm, Norm::Rank | Norm::Borda) {
        for &i in &read {
            let mut counted: Vec<usize> = found
                .iter()
                .flat_map(|(_, occ)| occ.iter().filter(|&&(j, _)| j == i).map(|&(_, r)| r))
                .collect();
            counted.sort();
            if !counted.is_empty() {
                let values: Vec<f64> = counted
                    .iter()
                    .map(|&r| sign(i) * raw(i, r).expect("scores"))
                    .collect();
                normalized[i] = Some(normalizer(o.norm, &values)?);
            }
        }
    }
    let nk = n_keys as f64;
    let value = |key: i64, i: usize, rank: usize| -> Result<f64, Failure> {
        let v = if o.norm == Norm::Borda {
            if rank > 0 {
                1.0 - (rank - 1) as f64 / nk
            } else {
                0.5 - (n_read[i] as f64 - 1.0) / (2.0 * nk)
            }
        } else if rank == 0 {
            0.0
        } else if o.norm == Norm::Rank {
            1.0 - (rank - 1) as f64 / n_read[i] as f64
        } else {
            normalized[i].as_ref().expect("a normalised list")(
                sign(i) * raw(i, rank).expect("scores"),
            )
        };
        if !v.is_finite() {
            return Err(Failure::NonFiniteNormalized {
                key,
                list: i,
                value: v,
            });
        }
        Ok(v)
    };

    // 4. Each key's contributions and score.
    let mut scored: Vec<Hit> = Vec::new();
    for (key, occurrences) in &found {
        let key = *key;
        let mut occurrences = occurrences.clone();
        let mut present: BTreeSet<usize> = occurrences.iter().map(|&(i, _)| i).collect();
        let filled =
            o.norm == Norm::Borda || matches!(method, Method::Bordafuse | Method::ArithmeticMean);
        if filled {
            for &i in &read {
                if !present.contains(&i) {
                    occurrences.push((i, 0));
                }
            }
            if o.norm == Norm::Borda {
                present = read.iter().copied().collect();
            }
        }
        occurrences.sort();
        let mut contributions = Vec::new();
        for &(i, rank) in &occurrences {
            let w = weights[i];
            let mut v = None;
            let c = match method {
                Method::Rrf => w / (o.k + rank as f64),
                Method::Rbc => w * ((1.0 - o.phi) * power(o.phi, (rank - 1) as u64)),
                Method::Isr | Method::LogIsr | Method::LognIsr => 1.0 / (rank * rank) as f64,
                Method::Bordafuse => {
                    let points = if rank > 0 {
                        n_keys as f64 - rank as f64 + 1.0
                    } else {
                        (n_keys as f64 - n_read[i] as f64 + 1.0) / 2.0
                    };
                    v = Some(points);
                    w * points
                }
                Method::Condorcet => w,
                _ => {
                    let x = value(key, i, rank)?;
                    v = Some(x);
                    match method {
                        Method::Wsum
                        | Method::Mixed
                        | Method::RelativeScore
                        | Method::ArithmeticMean => w * x,
                        Method::GeometricMean if x > 0.0 => w * x.ln(),
                        Method::HarmonicMean if x > 0.0 => w / x,
                        Method::GeometricMean | Method::HarmonicMean => 0.0,
                        _ => x,
                    }
                }
            };
            contributions.push(Contribution {
                list: i,
                rank,
                weight: w,
                value: c,
                raw: if rank > 0 { raw(i, rank) } else { None },
                normalized: v,
            });
        }
        let total = canonical_sum(contributions.iter().map(|c| c.value));
        let p = present.len() as f64;
        let (mut factor, mut divisor) = (None, None);
        let values: Vec<f64> = contributions.iter().filter_map(|c| c.normalized).collect();
        match method {
            Method::Mnz | Method::Isr => factor = Some(p),
            Method::Anz => divisor = Some(p),
            Method::Gmnz => factor = Some(p.powf(o.gamma)),
            Method::Wmnz => factor = Some(canonical_sum(present.iter().map(|&i| weights[i]))),
            Method::Mixed => factor = Some(p.sqrt()),
            Method::LogIsr => factor = Some(p.ln()),
            Method::LognIsr => factor = Some((p + o.sigma).ln()),
            _ => {}
        }
        let score = match method {
            // A zero is +0.0, whatever the order of the lists.
            Method::Max => py_max(&values) + 0.0,
            Method::Min => py_min(&values) + 0.0,
            Method::Med => median(&values) + 0.0,
            // its wins, counted below once every key is scored
            Method::Condorcet => 0.0,
            Method::ArithmeticMean => {
                let kept: Vec<&Contribution> = contributions
                    .iter()
                    .filter(|c| c.normalized.unwrap() >= 0.0)
                    .collect();
                let d = canonical_sum(kept.iter().map(|c| c.weight));
                divisor = Some(d);
                if d == 0.0 {
                    0.0
                } else {
                    canonical_sum(kept.iter().map(|c| c.value)) / d
                }
            }
            Method::GeometricMean => {
                let kept: Vec<&Contribution> = contributions
                    .iter()
                    .filter(|c| c.normalized.unwrap() > 0.0)
                    .collect();
                let d = canonical_sum(kept.iter().map(|c| c.weight));
                divisor = Some(d);
                if kept.is_empty() {
                    0.0
                } else {
                    (total / d).exp()
                }
            }
            Method::HarmonicMean => {
                let kept: Vec<&Contribution> = contributions
                    .iter()
                    .filter(|c| c.normalized.unwrap() > 0.0)
                    .collect();
                let d = canonical_sum(kept.iter().map(|c| c.value));
                divisor = Some(d);
                if kept.is_empty() {
                    0.0
                } else if d == 0.0 {
                    // every w / v underflowed to 0.0: inf, as IEEE-754 divides
                    f64::INFINITY
                } else {
                    canonical_sum(kept.iter().map(|c| c.weight)) / d
                }
            }
            _ => match (factor, divisor) {
                (Some(f), _) => total * f,
                (None, Some(d)) => total / d,
                (None, None) => total,
            },
        };
        if !score.is_finite() {
            let stage = if method == Method::Rrf {
                Stage::Rrf
            } else {
                Stage::Fused
            };
            return Err(Failure::NonFiniteScore { key, stage, score });
        }
        scored.push(Hit {
            key,
            score,
            contributions,
            factor,
            divisor,
            boost: None,
        });
    }

    // Condorcet: one plus the number of keys each key beats.
    if method == Method::Condorcet {
        let rank_in = |x: usize, i: usize| -> Option<usize> {
            found[x]
                .1
                .iter()
                .filter(|&&(j, _)| j == i)
                .map(|&(_, r)| r)
                .min()
        };
        for (x, hit) in scored.iter_mut().enumerate() {
            let mut wins = 0;
            for y in 0..n_keys {
                if y == x {
                    continue;
                }
                let (mut ahead, mut behind) = (Vec::new(), Vec::new());
                for &i in &read {
                    let (rx, ry) = (rank_in(x, i), rank_in(y, i));
                    if rx.is_some() && (ry.is_none() || rx < ry) {
                        ahead.push(weights[i]);
                    } else if ry.is_some() && (rx.is_none() || ry < rx) {
                        behind.push(weights[i]);
                    }
                }
                if canonical_sum(ahead) > canonical_sum(behind) {
                    wins += 1;
                }
            }
            hit.score = 1.0 + wins as f64;
        }
    }

    // 5. normalize=True; 6. the boost. Each hit with the value it is ordered by.
    let boost_values: Vec<(i64, f64)> = o.boost.as_ref().map_or(Vec::new(), |b| b.1.clone());
    let boost_of = |key: i64| {
        boost_values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, v)| v)
    };
    let valued: Vec<f64> = scored.iter().filter_map(|h| boost_of(h.key)).collect();
    let (low, high) = if valued.is_empty() {
        (0.0, 0.0)
    } else {
        (py_min(&valued), py_max(&valued))
    };
    let mut hits: Vec<(f64, Hit)> = Vec::new();
    for mut hit in scored {
        let mut total = hit.score;
        if o.normalize {
            let best = best_possible(weights, o.k).expect("checked");
            hit.score = total / best;
            if !hit.score.is_finite() {
                return Err(Failure::NonFiniteScore {
                    key: hit.key,
                    stage: Stage::Normalized,
                    score: hit.score,
                });
            }
        }
        if let (Some((weight, _)), Some(v)) = (&o.boost, boost_of(hit.key)) {
            let added = if high > low {
                weight * ((v - low) / (high - low))
            } else {
                0.0
            };
            hit.score += added;
            total = hit.score;
            hit.boost = Some(added);
            if !hit.score.is_finite() {
                return Err(Failure::NonFiniteScore {
                    key: hit.key,
                    stage: Stage::Boosted,
                    score: hit.score,
                });
            }
        }
        hits.push((total, hit));
    }

    // 7. min_score, the order (stable: ties in first-appearance order, or by key), the page.
    if let Some(m) = o.min_score {
        hits.retain(|(_, h)| h.score >= m);
    }
    hits.sort_by(|a, b| b.0.partial_cmp(&a.0).expect("finite"));
    if o.tie_break == TieBreak::Key {
        let mut start = 0;
        while start < hits.len() {
            let mut end = start + 1;
            while end < hits.len() && hits[end].0 == hits[start].0 {
                end += 1;
            }
            hits[start..end].sort_by_key(|(_, h)| h.key);
            start = end;
        }
    }
    let end = o
        .limit
        .map_or(hits.len(), |l| o.offset.saturating_add(l).min(hits.len()));
    let start = o.offset.min(end);
    Ok(hits.drain(start..end).map(|(_, h)| h).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weighted_example_of_the_docs() {
        // rrf([["c1", "c2"], ["c2", "c3"]], k=10, weights=[1, 2]): c2, c3, c1
        let o = Options {
            method: Method::Rrf,
            norm: Norm::None,
            k: Some(10.0),
            weights: vec![1.0, 2.0],
            window: None,
            duplicates: Duplicates::First,
            tie_break: TieBreak::BestRank,
            offset: 0,
            limit: None,
            min_score: None,
            normalize: false,
            phi: 0.0,
            gamma: 1.0,
            sigma: 0.01,
            lower_is_better: None,
            boost: None,
        };
        let lists = vec![vec![Some(1), Some(2)], vec![Some(2), Some(3)]];
        let hits = fuse(&lists, &[None, None], &o).unwrap();
        let got: Vec<(i64, f64)> = hits.iter().map(|h| (h.key, h.score)).collect();
        assert_eq!(
            got,
            [
                (2, 0.0 + 1.0 / 12.0 + 2.0 / 11.0),
                (3, 2.0 / 12.0),
                (1, 1.0 / 11.0)
            ]
        );
    }
}
