//! The scoring seam: how a method turns a key's counted occurrences into its score, for the
//! methods that are not a plain sum of rank values (those, RRF, RBC and the ISR family, are scored
//! in the engine's scan layouts directly). Every formula here is `_reference.py`'s `_fuse`, step
//! for step, in the same order of floating-point operations (docs/semantics.md, "Fusion
//! methods").

use super::canonical_sum;
use super::params::{Method, Norm, Plan};
use super::trace::Contribution;
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
/// the list is lower-is-better) are `values` (not empty). `values` is scratch: it may be sorted.
fn list_norm(norm: Norm, values: &mut [f64]) -> Result<ListNorm, Error> {
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
                    crate::trec::pyrepr::float(high)
                ),
            ))
        }
        Norm::Max if high == 0.0 => ListNorm::Constant(0.0),
        Norm::Max => ListNorm::Scale { div: high },
        Norm::Sum => {
            // Welford's order is the list's; the sums are canonical (any order gives the bits).
            let mut shifted: Vec<f64> = values.iter().map(|&v| v - low).collect();
            let total = canonical_sum(&mut shifted);
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
            let mean = canonical_sum(&mut values.to_vec()) / n;
            let deviations: Vec<f64> = values.iter().map(|&v| v - mean).collect();
            let sd = root_sum_squares(&deviations, n);
            if sd == 0.0 {
                ListNorm::Constant(0.0)
            } else {
                ListNorm::Affine { sub: mean, div: sd }
            }
        }
        Norm::L2 => {
            let length = root_sum_squares(values, 1.0);
            if length == 0.0 {
                ListNorm::Constant(0.0)
            } else {
                ListNorm::Scale { div: length }
            }
        }
        Norm::Dbsf => {
            if values.len() == 1 {
                ListNorm::Constant(0.5)
            } else {
                let (mut mean, mut m2) = (0.0f64, 0.0f64);
                for (count, &v) in values.iter().enumerate() {
                    let delta = v - mean;
                    mean += delta / (count + 1) as f64;
                    m2 += delta * (v - mean);
                }
                let sd = (m2 / (n - 1.0)).sqrt();
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
        }
    })
}

/// sqrt(sum of x * x / divisor), the sum canonical. When the squares under- or overflow (a zero
/// or infinite root of values that are not all zero), the same with every x divided by the
/// largest |x| first, and the root multiplied by it (as the reference's `_root_sum_squares`).
fn root_sum_squares(xs: &[f64], divisor: f64) -> f64 {
    let mut squares: Vec<f64> = xs.iter().map(|&x| x * x).collect();
    let root = (canonical_sum(&mut squares) / divisor).sqrt();
    if (root == 0.0 || root.is_infinite()) && xs.iter().any(|&x| x != 0.0) {
        let top = xs
            .iter()
            .fold(0.0f64, |m, &x| if x.abs() > m { x.abs() } else { m });
        let mut scaled: Vec<f64> = xs.iter().map(|&x| (x / top) * (x / top)).collect();
        return top * (canonical_sum(&mut scaled) / divisor).sqrt();
    }
    root
}

/// The median of `values` (sorted in place, stably: equal values keep their order, as Python's
/// `sorted` keeps them): the middle one, or the mean of the two middle ones.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let half = values.len() / 2;
    if values.len() % 2 == 1 {
        values[half]
    } else {
        (values[half - 1] + values[half]) / 2.0
    }
}

impl Scored {
    /// Scores every key of `q` by its method (anything but RRF, RBC and the ISR family).
    pub fn score(&mut self, q: &Scanned<'_>) -> Result<(), Error> {
        let plan = q.plan;
        let (method, norm) = (plan.params.method, plan.norm);
        let n_keys = q.offsets.len().saturating_sub(1);
        let n_lists = plan.n_lists();
        self.scores.clear();
        self.factors.clear();
        self.divisors.clear();
        self.offsets.clear();
        self.contributions.clear();
        self.offsets.push(0);

        let raw = |list: usize, position: u32| -> f64 {
            q.scores
                .get(list)
                .copied()
                .flatten()
                .map_or(f64::NAN, |s| s[position as usize])
        };
        let sign = |list: usize| -> f64 {
            match &plan.params.lower_is_better {
                Some(lower) if lower[list] => -1.0,
                _ => 1.0,
            }
        };

        // Each list's normalisation, over the raw scores of its counted items in list order.
        self.norms.clear();
        self.norms.resize(n_lists, ListNorm::Identity);
        if plan.reads_scores() {
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
                positions.sort_unstable();
                self.values.clear();
                self.values
                    .extend(positions.iter().map(|&p| sign(list) * raw(list, p)));
                self.norms[list] = list_norm(norm, &mut self.values)?;
            }
        }

        let n_c = n_keys as f64;
        let fill =
            norm == Norm::Borda || matches!(method, Method::Bordafuse | Method::ArithmeticMean);
        for key in 0..n_keys {
            let first = q.firsts[key];
            let key_ref = || KeyRef::at(first.0 as usize, first.1 as usize);
            let entries = &q.entries[q.offsets[key] as usize..q.offsets[key + 1] as usize];
            let start = self.contributions.len();
            // The lists giving the key a value: its own, and with `fill` every list read.
            let mut next = 0;
            let mut present = 0usize;
            let add = |list: usize,
                       position: u32,
                       out: &mut Vec<Contribution>|
             -> Result<(), Error> {
                let w = plan.weights[list];
                let rank = if position == UNRANKED {
                    0
                } else {
                    position as u64 + 1
                };
                let mut v = f64::NAN;
                let c = match method {
                    Method::Bordafuse => {
                        v = if rank == 0 {
                            (n_c - f64::from(q.n_read[list]) + 1.0) / 2.0
                        } else {
                            n_c - rank as f64 + 1.0
                        };
                        w * v
                    }
                    Method::Condorcet => w,
                    _ => {
                        v = if rank == 0 {
                            if norm == Norm::Borda {
                                0.5 - (f64::from(q.n_read[list]) - 1.0) / (2.0 * n_c)
                            } else {
                                0.0
                            }
                        } else {
                            match norm {
                                Norm::Rank => 1.0 - (rank - 1) as f64 / f64::from(q.n_read[list]),
                                Norm::Borda => 1.0 - (rank - 1) as f64 / n_c,
                                _ => self.norms[list].apply(sign(list) * raw(list, position)),
                            }
                        };
                        if !v.is_finite() {
                            return Err(Problem::NonFiniteNormalized {
                                key: key_ref(),
                                list,
                                value: v,
                            }
                            .into());
                        }
                        match method {
                            Method::Wsum
                            | Method::Mixed
                            | Method::RelativeScore
                            | Method::ArithmeticMean => w * v,
                            Method::GeometricMean if v > 0.0 => w * v.ln(),
                            Method::HarmonicMean if v > 0.0 => w / v,
                            Method::GeometricMean | Method::HarmonicMean => 0.0,
                            _ => v,
                        }
                    }
                };
                out.push(Contribution {
                    list: list as u32,
                    position,
                    value: c,
                    raw: if rank == 0 {
                        f64::NAN
                    } else {
                        raw(list, position)
                    },
                    normalized: v,
                });
                Ok(())
            };
            // In list order: a list's entries, or its fill-in when it holds none.
            for &list in q.read {
                let mut held = false;
                while next < entries.len() && entries[next].list as usize == list {
                    add(list, entries[next].position, &mut self.contributions)?;
                    next += 1;
                    held = true;
                }
                if held {
                    present += 1;
                } else if fill {
                    add(list, UNRANKED, &mut self.contributions)?;
                    if norm == Norm::Borda {
                        present += 1;
                    }
                }
            }
            let mine = &self.contributions[start..];
            self.values.clear();
            self.values.extend(mine.iter().map(|c| c.value));
            let total = canonical_sum(&mut self.values);
            let p = present as f64;
            let (mut factor, mut divisor) = (f64::NAN, f64::NAN);
            // The canonical sum of `of` over the contributions `keep` keeps, and their number.
            let kept = |sums: &mut Vec<f64>,
                        keep: &dyn Fn(&Contribution) -> bool,
                        of: &dyn Fn(&Contribution) -> f64| {
                sums.clear();
                sums.extend(mine.iter().filter(|c| keep(c)).map(of));
                let n = sums.len();
                (canonical_sum(sums), n)
            };
            let weight = |c: &Contribution| plan.weights[c.list as usize];
            // Python's max and min: the first of the largest (smallest) values.
            let pick = |better: fn(f64, f64) -> bool| {
                let mut best = mine[0].normalized;
                for c in &mine[1..] {
                    if better(c.normalized, best) {
                        best = c.normalized;
                    }
                }
                best
            };
            let score = match method {
                Method::Mnz => {
                    factor = p;
                    total * factor
                }
                Method::Anz => {
                    divisor = p;
                    total / divisor
                }
                Method::Gmnz => {
                    factor = p.powf(plan.params.gamma.unwrap_or(1.0));
                    total * factor
                }
                Method::Wmnz => {
                    self.sums.clear();
                    let mut last = u32::MAX;
                    for c in mine {
                        if c.list != last {
                            self.sums.push(plan.weights[c.list as usize]);
                            last = c.list;
                        }
                    }
                    factor = canonical_sum(&mut self.sums);
                    total * factor
                }
                Method::Mixed => {
                    factor = p.sqrt();
                    total * factor
                }
                // A zero is +0.0 whatever the order of the lists (`+ 0.0`).
                Method::Max => pick(|v, best| v > best) + 0.0,
                Method::Min => pick(|v, best| v < best) + 0.0,
                Method::Med => {
                    self.values.clear();
                    self.values.extend(mine.iter().map(|c| c.normalized));
                    median(&mut self.values) + 0.0
                }
                Method::ArithmeticMean => {
                    let (weights, _) = kept(&mut self.sums, &|c| c.normalized >= 0.0, &weight);
                    let (sum, _) = kept(&mut self.sums, &|c| c.normalized >= 0.0, &|c| c.value);
                    divisor = weights;
                    if weights == 0.0 {
                        0.0
                    } else {
                        sum / weights
                    }
                }
                Method::GeometricMean => {
                    let (weights, n) = kept(&mut self.sums, &|c| c.normalized > 0.0, &weight);
                    divisor = weights;
                    if n == 0 {
                        0.0
                    } else {
                        (total / weights).exp()
                    }
                }
                Method::HarmonicMean => {
                    let (terms, n) = kept(&mut self.sums, &|c| c.normalized > 0.0, &|c| c.value);
                    let (weights, _) = kept(&mut self.sums, &|c| c.normalized > 0.0, &weight);
                    divisor = terms;
                    if n == 0 {
                        0.0
                    } else {
                        weights / terms
                    }
                }
                _ => total,
            };
            if method != Method::Condorcet && !score.is_finite() {
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
        if method == Method::Condorcet {
            self.condorcet(q, n_keys);
        }
        Ok(())
    }

    /// Condorcet: each key's score is one plus the number of keys it beats: more list weight
    /// ranks it ahead of the other than behind it (a list holding neither abstains).
    fn condorcet(&mut self, q: &Scanned<'_>, n_keys: usize) {
        let l = q.read.len();
        // ranks[key * l + slot]: the key's best position in the slot-th list read, or UNRANKED.
        self.ranks.clear();
        self.ranks.resize(n_keys * l, UNRANKED);
        for key in 0..n_keys {
            for e in q.entries[q.offsets[key] as usize..q.offsets[key + 1] as usize]
                .iter()
                .rev()
            {
                if let Ok(slot) = q.read.binary_search(&(e.list as usize)) {
                    self.ranks[key * l + slot] = e.position;
                }
            }
        }
        let weights: Vec<f64> = q.read.iter().map(|&i| q.plan.weights[i]).collect();
        let (mut ahead, mut behind) = (Vec::with_capacity(l), Vec::with_capacity(l));
        for x in 0..n_keys {
            let rx = &self.ranks[x * l..(x + 1) * l];
            let mut wins = 0u32;
            for y in 0..n_keys {
                if y == x {
                    continue;
                }
                let ry = &self.ranks[y * l..(y + 1) * l];
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
                if canonical_sum(&mut ahead) > canonical_sum(&mut behind) {
                    wins += 1;
                }
            }
            self.scores[x] = 1.0 + f64::from(wins);
        }
    }
}
