//! The score step of every method but Condorcet, written once (docs/semantics.md, "Fusion
//! methods"; `_reference.py`'s `_Values`, `_contributions`, `_combine`, step for step, in the
//! same order of floating-point operations):
//!
//! - **what an occurrence gives a key**: its value ([`value`]: the list's normalisation of its
//!   raw score, the rank or borda norm, BordaFuse's points) and its term ([`term`]: the method's
//!   [`Term`] of that value and the list's weight; rank terms from the plan);
//! - **how a key's terms become its score**: [`combine`], over any layout's view of one key
//!   ([`Parts`]): a canonical sum, times a factor, divided, an order statistic or a mean.
//!
//! Every score goes through those two. What differs between callers is only where a key's
//! parts are read from, each an implementation of [`Parts`] that the compiler inlines into its
//! own loop:
//!
//! - [`score_slots`]: the engine's dense layout (at most [`DENSE_MAX`] lists read, a key counted
//!   once per list), untraced: a key's terms in its slots (written by the scan, from the plan's
//!   rank terms or a [`Terms`] table made before the scan; or its positions, turned into terms
//!   after it), the lists holding it and keeping their value as bits, weight sums by set of
//!   lists from a table. Two lists (`PAIR`) read two slots with no branch;
//! - [`score_contributions`]: every key's contributions, in list order — traces, the general
//!   layout (more lists, summed duplicates), and a query with a value that is not finite (whose
//!   error must name the first one, in the reference's order).
//!
//! `the_untraced_layouts_score_as_the_traced_one` (fusion/method_tests.rs) holds every
//! instantiation to the contributions' path, bit for bit; `rust/optimize.rs` scores its grid
//! settings through [`combine`] too.

use super::canonical_sum;
use super::methods::{Combine, Factor, Term};
use super::norms::{dbsf, list_norm, welford, ListNorm, DENSE_MAX};
use super::params::{Norm, Plan};
use super::trace::Contribution;
use crate::cancel::{self, Cancel};
use crate::error::{Error, KeyRef, Problem, Result, Stage};

/// The raw scores of the lists of one query: per list, None or its scores by position. An empty
/// slice: no scores at all.
pub type Scores<'a> = &'a [Option<&'a [f64]>];

/// Position of a contribution of a list that does not hold the key (its rank is 0).
pub const UNRANKED: u32 = u32::MAX;

/// A large query polls its [`Cancel`] every this many keys scored.
pub const POLL_KEYS: usize = 1 << 16;

// --- what an occurrence gives a key ---------------------------------------------------------

/// The 1-based rank of `position` (0: [`UNRANKED`]).
#[inline(always)]
fn rank(position: u32) -> u64 {
    if position == UNRANKED {
        0
    } else {
        u64::from(position) + 1
    }
}

/// List `list`'s raw score at `position` (NaN when the list has no scores, or for
/// [`UNRANKED`]).
#[inline]
pub fn raw(scores: Scores<'_>, list: usize, position: u32) -> f64 {
    if position == UNRANKED {
        return f64::NAN;
    }
    scores
        .get(list)
        .copied()
        .flatten()
        .map_or(f64::NAN, |s| s[position as usize])
}

/// -1.0 for a lower-is-better list (its scores are negated before the norm), else 1.0.
#[inline]
pub fn sign(plan: &Plan, list: usize) -> f64 {
    match &plan.fusion.lower_is_better {
        Some(lower) if lower[list] => -1.0,
        _ => 1.0,
    }
}

/// What a key's occurrence is worth before its method's term: where the value comes from.
#[derive(Clone, Copy, Debug)]
pub struct Valuer<'a> {
    plan: &'a Plan,
    norms: &'a [ListNorm],
    /// Per list (by index), the items read (holes not counted).
    n_read: &'a [u32],
    /// The number of keys of the query, as a float.
    n_c: f64,
}

impl<'a> Valuer<'a> {
    pub fn new(plan: &'a Plan, norms: &'a [ListNorm], n_read: &'a [u32], n_keys: usize) -> Self {
        Valuer {
            plan,
            norms,
            n_read,
            n_c: n_keys as f64,
        }
    }

    /// The value of list `list`'s item at `position` whose raw score is `raw`
    /// ([`UNRANKED`]: the value a list not holding the key gives it): BordaFuse's points, the
    /// rank and borda norms, the list's normalisation of its (signed) raw score; NaN for the
    /// other rank-based methods (their terms are of ranks).
    #[inline(always)] // in the deferred path's loop over every item
    pub fn value(&self, list: usize, position: u32, raw: f64) -> f64 {
        let plan = self.plan;
        let r = rank(position);
        let n_read = self.n_read.get(list).copied().unwrap_or(0);
        if plan.fusion.method.term() == Term::Points {
            return borda_points(self.n_c, n_read, r);
        }
        if plan.fusion.method.is_rank_based() {
            return f64::NAN;
        }
        match plan.norm {
            Norm::Rank | Norm::Borda => rank_norm(plan.norm, self.n_c, n_read, r),
            _ if r == 0 => 0.0,
            _ => self.norms[list].apply(sign(plan, list) * raw),
        }
    }

    /// The term list `list` gives for an occurrence at `position` of value `v`.
    #[inline]
    pub fn term(&self, list: usize, position: u32, v: f64) -> f64 {
        term(self.plan, list, position, v)
    }
}

/// The term list `list`'s occurrence at `position` (rank values) of value `v` (the others)
/// adds: the method's [`Term`].
#[inline(always)]
pub fn term(plan: &Plan, list: usize, position: u32, v: f64) -> f64 {
    let t = plan.fusion.method.term();
    if t.of_rank() {
        return plan.rank_term(list, position as usize);
    }
    value_term(t, plan.weights[list], v)
}

/// The term of a normalised value `v` (BordaFuse: points) of a list of weight `w`.
#[inline(always)]
pub fn value_term(t: Term, w: f64, v: f64) -> f64 {
    match t {
        Term::Value => v,
        Term::Points | Term::Weighted => w * v,
        Term::WeightedLog if v > 0.0 => w * v.ln(),
        Term::WeightedInverse if v > 0.0 => w / v,
        Term::WeightedLog | Term::WeightedInverse => 0.0,
        Term::Vote => w,
        // Terms of the rank, not of a value: the plan's rank terms.
        Term::Reciprocal | Term::RankBiased | Term::InverseSquare => f64::NAN,
    }
}

/// The rank and borda normalisations of a key at `rank` (0: not in the list; rank gives 0.0)
/// in a list of `n_read` items, of `n_c` keys in all.
#[inline(always)]
pub fn rank_norm(norm: Norm, n_c: f64, n_read: u32, rank: u64) -> f64 {
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
pub fn borda_points(n_c: f64, n_read: u32, rank: u64) -> f64 {
    if rank == 0 {
        (n_c - f64::from(n_read) + 1.0) / 2.0
    } else {
        n_c - rank as f64 + 1.0
    }
}

/// Whether the method (with its norm) gives a key a term in every list read, holding it or
/// not; and whether every list read then counts as holding it (the borda norm).
pub fn fills(plan: &Plan) -> (bool, bool) {
    let borda = plan.norm == Norm::Borda;
    (plan.fusion.method.info().fills || borda, borda)
}

/// Whether a key's value is kept by a mean (the others are skipped with their weight).
#[inline(always)]
pub fn kept(combine: Combine, v: f64) -> bool {
    match combine {
        Combine::ArithmeticMean => v >= 0.0,
        _ => v > 0.0,
    }
}

// --- how a key's terms become its score -----------------------------------------------------

/// One key's parts, as a layout holds them: what [`combine`] reads.
pub trait Parts {
    /// Its terms, in any order (the canonical sum may sort them in place).
    fn terms(&mut self) -> &mut [f64];
    /// Its normalised values, in any order (max, min and median read them; they are the terms
    /// of those methods).
    fn values(&mut self) -> &mut [f64];
    /// How many lists hold it.
    fn present(&self) -> usize;
    /// The canonical sum of the weights of the lists holding it.
    fn present_weights(&mut self) -> f64;
    /// The means: the canonical sums of the weights and of the terms of the values the mean
    /// keeps, and how many it keeps.
    fn kept(&mut self, combine: Combine) -> Kept;
}

/// What a mean keeps of a key's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kept {
    pub weights: f64,
    pub terms: f64,
    pub count: usize,
}

/// A key's score, and what its method did with the canonical sum of its terms (NaN: nothing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Combined {
    pub score: f64,
    pub factor: f64,
    pub divisor: f64,
}

impl Combined {
    #[inline(always)]
    fn plain(score: f64) -> Self {
        Combined {
            score,
            factor: f64::NAN,
            divisor: f64::NAN,
        }
    }
}

/// The factor a `Times` method multiplies a key's sum by, for `present` lists holding it.
#[inline(always)]
pub fn factor(plan: &Plan, f: Factor, present: usize, weights: impl FnOnce() -> f64) -> f64 {
    plan.present_factor(f, present).unwrap_or_else(weights)
}

/// A key's score from its parts, as its method combines them (`how`, the method's [`Combine`]).
/// Condorcet's score (Copeland's) is counted elsewhere: here 0.0.
#[inline(always)]
pub fn combine<P: Parts>(plan: &Plan, how: Combine, parts: &mut P) -> Combined {
    // max, min and med: a zero is +0.0 whatever the order of the lists (`+ 0.0`).
    let pick = |values: &mut [f64], better: fn(f64, f64) -> bool| {
        let mut best = values[0];
        for &v in &values[1..] {
            if better(v, best) {
                best = v;
            }
        }
        best + 0.0
    };
    match how {
        Combine::Sum => Combined::plain(canonical_sum(parts.terms())),
        Combine::Times(f) => {
            let total = canonical_sum(parts.terms());
            let factor = factor(plan, f, parts.present(), || parts.present_weights());
            Combined {
                score: total * factor,
                factor,
                divisor: f64::NAN,
            }
        }
        Combine::PerList => {
            let total = canonical_sum(parts.terms());
            let divisor = parts.present() as f64;
            Combined {
                score: total / divisor,
                factor: f64::NAN,
                divisor,
            }
        }
        Combine::Max => Combined::plain(pick(parts.values(), |v, best| v > best)),
        Combine::Min => Combined::plain(pick(parts.values(), |v, best| v < best)),
        Combine::Median => Combined::plain(median(parts.values()) + 0.0),
        Combine::ArithmeticMean => {
            let kept = parts.kept(how);
            let score = if kept.weights == 0.0 {
                0.0
            } else {
                kept.terms / kept.weights
            };
            Combined {
                score,
                factor: f64::NAN,
                divisor: kept.weights,
            }
        }
        Combine::GeometricMean => {
            let kept = parts.kept(how);
            let score = if kept.count == 0 {
                0.0
            } else {
                // The terms of values not kept are 0.0, which change no sum.
                (canonical_sum(parts.terms()) / kept.weights).exp()
            };
            Combined {
                score,
                factor: f64::NAN,
                divisor: kept.weights,
            }
        }
        Combine::HarmonicMean => {
            let kept = parts.kept(how);
            let score = if kept.count == 0 {
                0.0
            } else {
                kept.weights / kept.terms
            };
            Combined {
                score,
                factor: f64::NAN,
                divisor: kept.terms,
            }
        }
        Combine::Copeland => Combined::plain(0.0),
    }
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

// --- the contributions' path ------------------------------------------------------------------

/// A key's contributions (ordered by list then position) as [`Parts`]: the terms and values
/// copied into scratch, weights from the plan.
struct ContributionParts<'a> {
    plan: &'a Plan,
    mine: &'a [Contribution],
    present: usize,
    terms: &'a mut Vec<f64>,
    values: &'a mut Vec<f64>,
}

impl Parts for ContributionParts<'_> {
    fn terms(&mut self) -> &mut [f64] {
        self.terms.clear();
        self.terms.extend(self.mine.iter().map(|c| c.value));
        self.terms
    }

    fn values(&mut self) -> &mut [f64] {
        self.values.clear();
        self.values.extend(self.mine.iter().map(|c| c.normalized));
        self.values
    }

    fn present(&self) -> usize {
        self.present
    }

    fn present_weights(&mut self) -> f64 {
        // One weight per list holding the key (its contributions are in list order).
        self.values.clear();
        let mut last = u32::MAX;
        for c in self.mine {
            if c.list != last {
                self.values.push(self.plan.weights[c.list as usize]);
                last = c.list;
            }
        }
        canonical_sum(self.values)
    }

    fn kept(&mut self, how: Combine) -> Kept {
        let keep = |c: &&Contribution| kept(how, c.normalized);
        self.values.clear();
        self.values.extend(
            self.mine
                .iter()
                .filter(keep)
                .map(|c| self.plan.weights[c.list as usize]),
        );
        let count = self.values.len();
        let weights = canonical_sum(self.values);
        self.terms.clear();
        self.terms
            .extend(self.mine.iter().filter(keep).map(|c| c.value));
        Kept {
            weights,
            terms: canonical_sum(self.terms),
            count,
        }
    }
}

/// What `plan`'s method does with a key's contributions `mine` (in list order), `present`
/// lists holding it: its score, factor and divisor.
pub fn applied(plan: &Plan, mine: &[Contribution], present: usize) -> Combined {
    let (mut terms, mut values) = (Vec::new(), Vec::new());
    let mut parts = ContributionParts {
        plan,
        mine,
        present,
        terms: &mut terms,
        values: &mut values,
    };
    combine(plan, plan.fusion.method.combine(), &mut parts)
}

/// One query as the contributions' path reads it: the lists read, each key's counted
/// occurrences (list, position) ordered by list then position, each key's first occurrence.
pub struct Occurrences<'a> {
    pub read: &'a [usize],
    /// Per list (by index), the items read (holes not counted).
    pub n_read: &'a [u32],
    /// Key k's occurrences are `entries[offsets[k]..offsets[k + 1]]`.
    pub offsets: &'a [u32],
    pub entries: &'a [(u32, u32)],
    pub firsts: &'a [(u32, u32)],
    pub scores: Scores<'a>,
}

/// What the scoring leaves per key: its score and, from the contributions' path, its
/// contributions and what its method did with them (NaN: nothing).
#[derive(Default)]
pub struct Scored {
    pub scores: Vec<f64>,
    pub factors: Vec<f64>,
    pub divisors: Vec<f64>,
    /// Key k's contributions: `contributions[offsets[k]..offsets[k + 1]]`.
    pub offsets: Vec<u32>,
    pub contributions: Vec<Contribution>,
    // scratch
    norms: Vec<ListNorm>,
    by_list: Vec<Vec<u32>>,
    raw_values: Vec<f64>,
    sums: Vec<f64>,
    terms: Vec<f64>,
    values: Vec<f64>,
}

impl Scored {
    /// Each list's normalisation (`norms`, by list index), over the raw scores of its counted
    /// items in list order (negated first when lower-is-better): `counted(list, out)` puts the
    /// positions of list `list`'s counted items, in any order, into `out`.
    pub fn normalise(
        &mut self,
        plan: &Plan,
        read: &[usize],
        scores: Scores<'_>,
        mut counted: impl FnMut(usize, &mut Vec<u32>),
        cancel: &Cancel<'_>,
    ) -> Result<()> {
        let n_lists = plan.n_lists();
        self.norms.clear();
        self.norms.resize(n_lists, ListNorm::Identity);
        // (`none` is the identity: no statistics to gather.)
        if !plan.reads_scores() || plan.norm == Norm::None {
            return Ok(());
        }
        self.by_list.resize_with(n_lists, Vec::new);
        for &list in read {
            let positions = &mut self.by_list[list];
            positions.clear();
            counted(list, positions);
            if positions.is_empty() {
                continue;
            }
            cancel::sort_unstable_by_key(positions, &|&p| p, cancel)?;
            let s = sign(plan, list);
            self.raw_values.clear();
            self.raw_values
                .extend(positions.iter().map(|&p| s * raw(scores, list, p)));
            self.norms[list] =
                list_norm(plan.norm, list, &self.raw_values, &mut self.sums, cancel)?;
        }
        Ok(())
    }

    /// The norms [`Scored::normalise`] found, by list index.
    pub fn norms(&self) -> &[ListNorm] {
        &self.norms
    }

    /// Scores every key of `q` from its contributions, in list order (a list that fills gives a
    /// key missing from it its unranked term): the first key (in scan order) with a normalised
    /// value that is not finite (the first in list order), or then a score that is not finite, is
    /// the error. Condorcet's scores are 0.0 here (its wins are counted after). Needs
    /// [`Scored::normalise`] first.
    pub fn score_contributions(
        &mut self,
        plan: &Plan,
        q: &Occurrences<'_>,
        cancel: &Cancel<'_>,
    ) -> Result<()> {
        let n_keys = q.offsets.len().saturating_sub(1);
        self.scores.clear();
        self.factors.clear();
        self.divisors.clear();
        self.offsets.clear();
        self.contributions.clear();
        self.offsets.push(0);
        let how = plan.fusion.method.combine();
        let (fill, borda) = fills(plan);
        let norms = std::mem::take(&mut self.norms);
        let valuer = Valuer::new(plan, &norms, q.n_read, n_keys);
        let scored = (|| {
            for key in 0..n_keys {
                if key % POLL_KEYS == 0 {
                    cancel.check()?;
                }
                let first = q.firsts[key];
                let key_ref = || KeyRef::at(first.0 as usize, first.1 as usize);
                let entries = &q.entries[q.offsets[key] as usize..q.offsets[key + 1] as usize];
                let start = self.contributions.len();
                // In list order: a list's entries, or its fill-in when it holds none.
                let mut next = 0;
                let mut present = 0usize;
                for &list in q.read {
                    let mut held = false;
                    while next < entries.len() && entries[next].0 as usize == list {
                        let position = entries[next].1;
                        self.push(plan, &valuer, q.scores, list, position, &key_ref)?;
                        next += 1;
                        held = true;
                    }
                    if held {
                        present += 1;
                    } else if fill {
                        self.push(plan, &valuer, q.scores, list, UNRANKED, &key_ref)?;
                        present += usize::from(borda);
                    }
                }
                let mut parts = ContributionParts {
                    plan,
                    mine: &self.contributions[start..],
                    present,
                    terms: &mut self.terms,
                    values: &mut self.values,
                };
                let c = combine(plan, how, &mut parts);
                if how != Combine::Copeland && !c.score.is_finite() {
                    return Err(fused_not_finite(plan, first, c.score));
                }
                self.scores.push(c.score);
                self.factors.push(c.factor);
                self.divisors.push(c.divisor);
                self.offsets.push(self.contributions.len() as u32);
            }
            Ok(())
        })();
        self.norms = norms;
        scored
    }

    /// Appends the contribution of list `list`'s occurrence at `position` ([`UNRANKED`]: its
    /// fill-in); a normalised value that is not finite is the key's error.
    #[inline]
    fn push(
        &mut self,
        plan: &Plan,
        valuer: &Valuer<'_>,
        scores: Scores<'_>,
        list: usize,
        position: u32,
        key: &impl Fn() -> KeyRef,
    ) -> Result<()> {
        let raw = raw(scores, list, position);
        let v = valuer.value(list, position, raw);
        // (Rank values and BordaFuse's points are finite: only scores can fail.)
        if plan.reads_scores() && !v.is_finite() {
            return Err(Problem::NonFiniteNormalized {
                key: key(),
                list,
                value: v,
            }
            .into());
        }
        self.contributions.push(Contribution {
            list: list as u32,
            position,
            value: valuer.term(list, position, v),
            raw,
            normalized: v,
        });
        Ok(())
    }
}

/// The error of a key whose first occurrence is `first` (list, position) and whose fused
/// `score` is not finite (RRF's says its weights are too large).
#[cold]
#[inline(never)]
pub fn fused_not_finite(plan: &Plan, first: (u32, u32), score: f64) -> Error {
    Problem::NonFiniteScore {
        key: KeyRef::at(first.0 as usize, first.1 as usize),
        score,
        stage: if plan.fusion.method == super::Method::Rrf {
            Stage::Rrf
        } else {
            Stage::Fused
        },
    }
    .into()
}

// --- rank terms in the general layout ---------------------------------------------------------

/// A key's rank terms (the general layout: any number of occurrences per list) as [`Parts`].
struct RankParts<'a> {
    terms: &'a mut [f64],
    present: usize,
}

impl Parts for RankParts<'_> {
    fn terms(&mut self) -> &mut [f64] {
        self.terms
    }

    fn values(&mut self) -> &mut [f64] {
        self.terms
    }

    fn present(&self) -> usize {
        self.present
    }

    fn present_weights(&mut self) -> f64 {
        f64::NAN // (no rank-term method reads it)
    }

    fn kept(&mut self, _: Combine) -> Kept {
        Kept {
            weights: f64::NAN,
            terms: f64::NAN,
            count: 0,
        }
    }
}

/// Every key's score into `out` for the methods whose terms are of ranks (RRF, RBC, the ISR
/// family), untraced, from each key's occurrences (list, position) `occurrences(key)` (the
/// general layout). The first key whose score is not finite is the error.
pub fn score_rank_terms<I: Iterator<Item = (u32, u32)> + Clone>(
    plan: &Plan,
    n_keys: usize,
    occurrences: impl Fn(usize) -> I,
    first: impl Fn(usize) -> (u32, u32),
    out: &mut Vec<f64>,
    cancel: &Cancel<'_>,
) -> Result<()> {
    let how = plan.fusion.method.combine();
    let (mut terms, mut lists) = (Vec::new(), Vec::new());
    out.reserve(n_keys);
    for key in 0..n_keys {
        if key % POLL_KEYS == 0 {
            cancel.check()?;
        }
        let occs = occurrences(key);
        terms.clear();
        terms.extend(
            occs.clone()
                .map(|(list, position)| plan.rank_term(list as usize, position as usize)),
        );
        let present = if how == Combine::Sum {
            0
        } else {
            lists.clear();
            lists.extend(occs.map(|o| o.0));
            lists.sort_unstable();
            lists.dedup();
            lists.len()
        };
        let score = combine(
            plan,
            how,
            &mut RankParts {
                terms: &mut terms,
                present,
            },
        )
        .score;
        if !score.is_finite() {
            return Err(fused_not_finite(plan, first(key), score));
        }
        out.push(score);
    }
    Ok(())
}

// --- the dense layout's path -------------------------------------------------------------------

/// The number of bits set in the low 8 bits of `bits` (a key's lists in the dense layout): a
/// table, since the portable x86-64 target has no popcount instruction and its emulation is
/// slow.
#[inline(always)]
pub fn ones(bits: u64) -> usize {
    static ONES: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = (i as u32).count_ones() as u8;
            i += 1;
        }
        t
    };
    ONES[(bits & 0xFF) as usize] as usize
}

/// The canonical sums of the weights of every set of lists read (by bits, slot s the list
/// `read[s]`), computed once per query for the methods that read them.
pub struct WeightSums {
    sums: [f64; 1 << DENSE_MAX],
}

impl WeightSums {
    pub fn new(plan: &Plan, read: &[usize]) -> Self {
        let mut sums = [0.0f64; 1 << DENSE_MAX];
        for (bits, sum) in sums.iter_mut().enumerate().take(1 << read.len()) {
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
        WeightSums { sums }
    }

    #[inline(always)]
    pub fn of(&self, bits: u64) -> f64 {
        self.sums[(bits & 0xFF) as usize]
    }
}

/// A key of the dense layout as [`Parts`]: its terms (`terms`; for two lists both slots, the
/// second +0.0 when only one list holds it, which changes no canonical sum), the lists holding
/// it and those whose value its mean keeps (bits by slot), every list read (`all`).
struct SlotParts<'a> {
    terms: &'a mut [f64],
    /// How many of `terms` are values (max, min, median: the others are +0.0 fillers).
    count: usize,
    present: u64,
    kept: u64,
    all: u64,
    /// The weight sums, for the methods that read them.
    sums: Option<&'a WeightSums>,
}

impl Parts for SlotParts<'_> {
    #[inline(always)]
    fn terms(&mut self) -> &mut [f64] {
        self.terms
    }

    #[inline(always)]
    fn values(&mut self) -> &mut [f64] {
        &mut self.terms[..self.count]
    }

    #[inline(always)]
    fn present(&self) -> usize {
        ones(self.present)
    }

    #[inline(always)]
    fn present_weights(&mut self) -> f64 {
        self.sums.map_or(f64::NAN, |s| s.of(self.present))
    }

    #[inline(always)]
    fn kept(&mut self, how: Combine) -> Kept {
        // The arithmetic mean is scored here only when no value is negative: every list read
        // is kept, holding the key (its terms are then all of the key's) or not (a zero); the
        // others keep their `kept` bits, and the terms of values not kept are 0.0.
        let terms = canonical_sum(self.terms);
        let bits = if how == Combine::ArithmeticMean {
            self.all
        } else {
            self.kept
        };
        Kept {
            weights: self.sums.map_or(f64::NAN, |s| s.of(bits)),
            terms,
            count: ones(bits),
        }
    }
}

/// The dense layout after its scan, untraced: key k's terms in `values[k * stride..]` — the
/// first `count(k)` slots in scan order (`by_slot` false; with two lists always both slots),
/// or slot s for the s-th list read (`by_slot`: a deferred scan's terms, made by
/// [`fill_slots`], every list read giving one); `seen(k)` the bits of the lists holding it
/// (slot s), with those whose value the key's mean keeps above them (bit 8 + s).
pub struct Dense<'a, S: Fn(usize) -> u64, F: Fn(usize) -> (u32, u32)> {
    pub plan: &'a Plan,
    pub read: &'a [usize],
    pub n_keys: usize,
    pub stride: usize,
    pub by_slot: bool,
    pub seen: S,
    pub first: F,
}

/// Every key's score of a [`Dense`] query into `out`, by [`combine`]: `PAIR`, two lists read
/// (two slots a key, no branch on how many hold it). The first key whose score is not finite
/// is the error.
pub fn score_slots<const PAIR: bool, S, F>(
    q: &Dense<'_, S, F>,
    values: &mut [f64],
    out: &mut Vec<f64>,
    cancel: &Cancel<'_>,
) -> Result<()>
where
    S: Fn(usize) -> u64,
    F: Fn(usize) -> (u32, u32),
{
    // One loop per combination, `how` a constant in each (`combine`'s match folds away): a
    // closure returning it, of its own type in each arm, so that the loop's own closure (which
    // `Vec::extend` may compile out of line) is a function of each arm too.
    macro_rules! with {
        ($how:expr) => {
            slots_with::<PAIR, S, F, _>(q, values, out, cancel, move || $how)
        };
    }
    match q.plan.fusion.method.combine() {
        Combine::Sum => with!(Combine::Sum),
        Combine::Times(f) => with!(Combine::Times(f)),
        Combine::PerList => with!(Combine::PerList),
        Combine::Max => with!(Combine::Max),
        Combine::Min => with!(Combine::Min),
        Combine::Median => with!(Combine::Median),
        Combine::ArithmeticMean => with!(Combine::ArithmeticMean),
        Combine::GeometricMean => with!(Combine::GeometricMean),
        Combine::HarmonicMean => with!(Combine::HarmonicMean),
        Combine::Copeland => with!(Combine::Copeland),
    }
}

#[inline(always)]
fn slots_with<const PAIR: bool, S, F, H>(
    q: &Dense<'_, S, F>,
    values: &mut [f64],
    out: &mut Vec<f64>,
    cancel: &Cancel<'_>,
    how_of: H,
) -> Result<()>
where
    S: Fn(usize) -> u64,
    F: Fn(usize) -> (u32, u32),
    H: Fn() -> Combine + Copy,
{
    let plan = q.plan;
    let how = how_of();
    let weighed = how.is_mean() || how == Combine::Times(Factor::PresentWeights);
    let sums = weighed.then(|| WeightSums::new(plan, q.read));
    let all = (1u64 << q.read.len()) - 1;
    // Only a plain sum of two slots reads neither the key's lists nor how many there are.
    let reads_seen = !PAIR || how != Combine::Sum;
    let stride = if PAIR { 2 } else { q.stride };
    let (fill, borda) = fills(plan);
    let base = out.len();
    out.reserve(q.n_keys);
    for block in (0..q.n_keys).step_by(POLL_KEYS) {
        cancel.check()?;
        let end = (block + POLL_KEYS).min(q.n_keys);
        let slots = &mut values[block * stride..end * stride];
        // Extended from an iterator of known length (room reserved once, no capacity check per
        // key, and a loop that can vectorise), not resized and indexed: no zeroing of the scores
        // first; the loop stays in this function, where `how` is a constant.
        let keys = (block..end).zip(slots.chunks_exact_mut(stride));
        out.extend(keys.map(|(key, terms)| {
            let how = how_of();
            let seen = if reads_seen { (q.seen)(key) } else { 0 };
            let (held, kept) = (seen & 0xFF, seen >> 8 & 0xFF);
            let count = if q.by_slot && fill {
                q.read.len()
            } else {
                ones(held)
            };
            let terms = if PAIR {
                // (Two slots: a length the compiler knows.)
                &mut terms[..2]
            } else if q.by_slot {
                if !fill {
                    // The lists holding the key first (their order changes no result).
                    let mut n = 0;
                    for slot in 0..terms.len() {
                        if held >> slot & 1 == 1 {
                            terms[n] = terms[slot];
                            n += 1;
                        }
                    }
                }
                &mut terms[..count]
            } else {
                &mut terms[..count]
            };
            let mut parts = SlotParts {
                terms,
                count,
                present: if borda { all } else { held },
                kept,
                all,
                sums: sums.as_ref(),
            };
            combine(plan, how, &mut parts).score
        }));
        if let Some(i) = out[base + block..base + end]
            .iter()
            .position(|s| !s.is_finite())
        {
            let (key, score) = (block + i, out[base + block + i]);
            out.truncate(base + key);
            return Err(fused_not_finite(plan, (q.first)(key), score));
        }
    }
    Ok(())
}

/// A deferred dense scan's slots (key k's position in slot s at `values[k * stride + s]` when
/// bit s of `seen(k)` is set) turned into terms, in place: every slot of a key gets a term, the
/// unranked one where the key is missing when the method fills (else +0.0). `term_of(s, p)` is
/// the term of the s-th list read's item at position p ([`UNRANKED`]: its fill-in's).
#[allow(clippy::too_many_arguments)]
pub fn fill_slots(
    plan: &Plan,
    read: &[usize],
    values: &mut [f64],
    n_keys: usize,
    stride: usize,
    seen: impl Fn(usize) -> u64,
    term_of: impl Fn(usize, u32) -> f64,
    cancel: &Cancel<'_>,
) -> Result<()> {
    let (fill, _) = fills(plan);
    let l = read.len();
    // The fill-in term of each list, once per query.
    let mut unranked = [0.0f64; DENSE_MAX];
    if fill {
        for (slot, fill_in) in unranked.iter_mut().enumerate().take(l) {
            *fill_in = term_of(slot, UNRANKED);
        }
    }
    for key in 0..n_keys {
        if key % POLL_KEYS == 0 {
            cancel.check()?;
        }
        let bits = seen(key);
        let at = key * stride;
        for slot in 0..l {
            values[at + slot] = if bits >> slot & 1 == 1 {
                term_of(slot, values[at + slot] as u32)
            } else {
                unranked[slot]
            };
        }
    }
    Ok(())
}

// --- the terms made before the scan ---------------------------------------------------------

/// The terms of a query's lists, each list normalised over its items that are not holes
/// *before* the scan, so that the scan adds terms as it adds RRF's rank terms (what
/// [`Terms::before_scan`] makes): right when the scan then skips no repeat (the caller checks).
#[derive(Default)]
pub struct Terms {
    /// Per slot (list read) `s`, the term of the item at position `p` of its window is
    /// `terms[starts[s] + p]`.
    pub terms: Vec<f64>,
    /// The geometric and harmonic means (else empty): whether the item's normalised value is
    /// kept (above 0), 1 or 0, beside its term.
    pub kept: Vec<u8>,
    pub starts: [usize; DENSE_MAX],
    /// Per slot, the holes of its window: the items a scan that finds no repeat skips.
    pub holes: [u32; DENSE_MAX],
    values: Vec<f64>,
    sums: Vec<f64>,
    /// The rank norm's values `1 - p / counted` by position p in 0..n, for lists of
    /// `rank_shape` (n, counted): kept from list to list and query to query while the shape is
    /// the same.
    rank: Vec<f64>,
    rank_shape: (usize, u32),
}

/// `f(norm)` with `norm` the same value, a constant of its variant in each arm: a loop over
/// [`ListNorm::apply`] inside `f` is compiled once per variant with no match in it.
#[inline(always)]
fn per_variant<R>(norm: ListNorm, f: impl FnOnce(ListNorm) -> R) -> R {
    match norm {
        ListNorm::Identity => f(ListNorm::Identity),
        ListNorm::Constant(c) => f(ListNorm::Constant(c)),
        ListNorm::Affine { sub, div } => f(ListNorm::Affine { sub, div }),
        ListNorm::Scale { div } => f(ListNorm::Scale { div }),
    }
}

/// `f(t)` with `t` a constant of its variant in each arm (see [`per_variant`]).
#[inline(always)]
fn per_term<R>(t: Term, f: impl FnOnce(Term) -> R) -> R {
    match t {
        Term::Value => f(Term::Value),
        Term::Weighted => f(Term::Weighted),
        Term::WeightedLog => f(Term::WeightedLog),
        Term::WeightedInverse => f(Term::WeightedInverse),
        other => f(other),
    }
}

/// A list's window, as [`Terms`] makes its terms.
enum Window<'a> {
    /// Its raw scores and their normalisation.
    Scores(&'a [f64], ListNorm),
    /// `n` items valued by the rank norm, `counted` of them counted.
    Rank { n: usize, counted: u32 },
}

impl Terms {
    /// Whether the scan can add terms made before it for `plan`: a score-based method summing
    /// terms, picking a value (max, min, med) or one of the means, over scores or the rank
    /// norm, at most [`DENSE_MAX`] lists read. (The borda norm and BordaFuse depend on the
    /// number of keys: deferred to after the scan; Condorcet compares keys.)
    pub fn apply(plan: &Plan, read: &[usize]) -> bool {
        let method = plan.fusion.method;
        !method.is_rank_based()
            && plan.norm != Norm::Borda
            && method.combine() != Combine::Copeland
            && read.len() <= DENSE_MAX
    }

    /// Every item's term `term(v)` of its normalised value `v`, each list normalised over the
    /// items of its window that are not holes; the same values, bit for bit, as the
    /// contributions' path computes after the scan, which sees the same items in the same order
    /// when the scan skips no repeat. `len(list)` is a list's length, holes included;
    /// `is_hole(list, p)` and `holes(list, n)` tell its holes. False (nothing decided: the caller
    /// scores after the scan, which reports whatever is wrong in its own order) when a list has
    /// no scores, a norm fails (`max` of negative scores, an interruption), a normalised value
    /// that is not finite, a term that overflows, or a negative value of the arithmetic mean.
    #[allow(clippy::too_many_arguments)]
    pub fn before_scan(
        &mut self,
        plan: &Plan,
        read: &[usize],
        scores: Scores<'_>,
        len: impl Fn(usize) -> usize,
        is_hole: impl Fn(usize, usize) -> bool,
        holes: impl Fn(usize, usize) -> u32,
        cancel: &Cancel<'_>,
    ) -> bool {
        let by_rank = plan.norm == Norm::Rank;
        self.terms.clear();
        self.kept.clear();
        // Qdrant's dbsf: every list's statistics at once (see `welford`).
        let mut dbsf_norms = [None; DENSE_MAX];
        if plan.norm == Norm::Dbsf && plan.reads_scores() {
            self.values.clear();
            let mut bounds = [0usize; DENSE_MAX + 1];
            for (slot, &list) in read.iter().enumerate() {
                let n = plan.read_len(list, len(list));
                let Some(row) = scores.get(list).copied().flatten() else {
                    return false;
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
                if n > 0 {
                    match dbsf(read[slot], n, stats[slot]) {
                        Ok(made) => *norm = Some(made),
                        Err(_) => return false,
                    }
                }
            }
        }
        for (slot, &list) in read.iter().enumerate() {
            let n = plan.read_len(list, len(list));
            let row = match scores.get(list).copied().flatten() {
                Some(row) if row.len() >= n => &row[..n],
                _ if by_rank => &[][..],
                _ => return false,
            };
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
                match list_norm(plan.norm, list, values, &mut self.sums, cancel) {
                    Ok(norm) => norm,
                    Err(_) => return false,
                }
            };
            self.starts[slot] = self.terms.len();
            let window = if by_rank {
                Window::Rank { n, counted }
            } else {
                Window::Scores(row, norm)
            };
            if !self.push_list(plan, list, window, |p| !is_hole(list, p)) {
                return false;
            }
            self.holes[slot] = holes;
        }
        true
    }

    /// Appends the terms of list `list`'s window for `plan`'s method and, for the geometric and
    /// harmonic means, whether each value is kept. True when every value read is finite (the
    /// arithmetic mean's not negative) and every term too: the contributions' path reports what
    /// is not. `read(p)` says whether position p is read (a hole is not); the means and the rank
    /// norm ask it of every position.
    fn push_list(
        &mut self,
        plan: &Plan,
        list: usize,
        window: Window<'_>,
        read: impl Fn(usize) -> bool,
    ) -> bool {
        let (n, row, rank, norm) = match window {
            Window::Scores(row, norm) => (row.len(), row, None, norm),
            Window::Rank { n, counted } => (n, &[][..], Some(counted), ListNorm::Identity),
        };
        let method = plan.fusion.method;
        let (t, how) = (method.term(), method.combine());
        let (w, s) = (plan.weights[list], sign(plan, list));
        let start = self.terms.len();
        if let Some(counted) = rank {
            // The rank norm's values depend only on (n, counted): computed once for every list
            // of that shape (a division each), kept from list to list and query to query.
            if self.rank_shape != (n, counted) {
                self.rank.clear();
                let r = |p: usize| rank_norm(Norm::Rank, 0.0, counted, p as u64 + 1);
                self.rank.extend((0..n).map(r));
                self.rank_shape = (n, counted);
            }
        }
        let value = |p: usize| match rank {
            Some(_) => self.rank[p],
            None => norm.apply(s * row[p]),
        };
        let mut values_ok = true;
        if how.is_mean() {
            // Each value once: its term, and whether the mean keeps it.
            let keeps = matches!(how, Combine::GeometricMean | Combine::HarmonicMean);
            for p in 0..n {
                let v = value(p);
                values_ok &= v.is_finite() && (how != Combine::ArithmeticMean || kept(how, v));
                if keeps {
                    self.kept.push(u8::from(kept(how, v)));
                }
                self.terms.push(value_term(t, w, v));
            }
            let made = &self.terms[start..];
            return values_ok && made.iter().all(|v| v.is_finite());
        }
        let terms = &mut self.terms;
        if rank.is_some() {
            let rank = &self.rank;
            per_term(t, |t| {
                terms.extend(rank.iter().map(|&v| value_term(t, w, v)))
            });
        } else {
            // One loop per norm and term, each simple enough to vectorise.
            per_variant(norm, |norm| {
                per_term(t, |t| {
                    terms.extend(row.iter().map(|&x| value_term(t, w, norm.apply(s * x))));
                });
            });
        }
        let made = &self.terms[start..];
        // Every term finite: one pass with no early exit, which vectorises.
        let terms_ok = made.iter().fold(true, |ok, v| ok & v.is_finite());
        // The values: the rank norm's are finite, and where a value that is not finite gives a
        // term that is not finite the terms have told; else each value made again.
        let values_ok = rank.is_some()
            || t.shows_non_finite()
            || row.iter().all(|&x| norm.apply(s * x).is_finite());
        if terms_ok && values_ok {
            return true;
        }
        // Something not finite: right only where it is never read, a value the scan skips.
        rank.is_none()
            && (0..made.len()).all(|p| !read(p) || (made[p].is_finite() && value(p).is_finite()))
    }

    /// The terms of every item of the windows of the lists read, each list normalised by its
    /// `norms` (of its counted items, [`Scored::normalise`]): for a scan that skipped a repeat,
    /// whose norms are only known after it. The same values, bit for bit, as [`Valuer::value`]
    /// and [`term`] of each item. False (each key's values are then made one by one, and the
    /// contributions' path reports what is wrong) when a list read has no scores, or a value
    /// or a term of its window — holes and repeats included — is not finite (the arithmetic
    /// mean's: negative).
    pub fn after_scan(
        &mut self,
        plan: &Plan,
        read: &[usize],
        scores: Scores<'_>,
        norms: &[ListNorm],
    ) -> bool {
        self.terms.clear();
        self.kept.clear();
        for (slot, &list) in read.iter().enumerate() {
            let Some(row) = scores.get(list).copied().flatten() else {
                return false;
            };
            let row = &row[..plan.read_len(list, row.len())];
            self.starts[slot] = self.terms.len();
            if !self.push_list(plan, list, Window::Scores(row, norms[list]), |_| true) {
                return false;
            }
        }
        true
    }

    /// The term of the item at `position` of the `slot`-th list read.
    #[inline(always)]
    pub fn term(&self, slot: usize, position: usize) -> f64 {
        self.terms
            .get(self.starts[slot] + position)
            .copied()
            .unwrap_or(f64::NAN)
    }

    /// Whether the mean keeps the value of the item at `position` of the `slot`-th list read.
    #[inline(always)]
    pub fn kept(&self, slot: usize, position: usize) -> bool {
        self.kept
            .get(self.starts[slot] + position)
            .is_some_and(|&k| k == 1)
    }
}
