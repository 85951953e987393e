//! Many settings of one fusion over the same rows, each scored from one traced fusion of the
//! rows: the grid search of `rankfusion.optimize` (docs/optimize.md).
//!
//! The rows are fused once, traced, with every list read ([`crate::batch`] with weight 1 for
//! every list): per hit and list, the hit's best rank there (0: absent) and its normalised value.
//! A setting (the method's weights, and its k, phi, gamma or sigma) then scores each hit as the
//! engine does, from those ranks and values alone: the same contributions (the engine's own rank
//! values, `w * v`, `v`), added as the canonical sum, times the same factor, over the lists of
//! non-zero weight that hold the hit (a hit that no such list holds is not a hit); then orders
//! the hits as the engine does (score descending, ties by first appearance in the scan among the
//! lists read) and keeps the plan's first `limit`. Each setting's rows are thus the engine's,
//! bit for bit and in order (the tests check it against [`crate::batch::fuse_batch`]).
//!
//! That needs what the engine computes per list not to depend on the setting: one counted
//! occurrence per key and list (`duplicates="first"`) and a normalisation of each list on its
//! own (every norm but `borda`, whose value for a missing key counts the keys of every list
//! read). [`check`] refuses the rest, and the methods whose score is not a function of those
//! per-list values and the setting alone.
//!
//! With a `cutoff` (an evaluation that reads the top `cutoff` documents of a row, as trec_eval's
//! measures at a cutoff), a row keeps only its hits whose score as a C float (trec_eval reads
//! scores into floats, and orders equal floats by doc id) is at least its `cutoff`-th hit's: its
//! first `cutoff` hits and every hit that trec_eval could put among them.

use crate::cancel::Cancel;
use crate::error::{At, Error, Key, KeyRef, Problem, Result, Stage};
use crate::fusion::engine::descending_bits;
use crate::fusion::methods::Combine;
use crate::fusion::{canonical_sum, kernel, Duplicates, Method, Norm, Plan, TieBreak};
use crate::pool;

/// A traced fusion of `rows` rows: per row `counts[r]` hits; hit j of row r is the key
/// `ids[r * width + j]`, with, per list l, `ranks[(r * width + j) * lists + l]` (its best
/// rank in list l, 1-based; 0 where the list does not hold it) and `values[...]` (its
/// normalised value there; score-based methods only).
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    rows: usize,
    width: usize,
    lists: usize,
    ids: Vec<i64>,
    counts: Vec<usize>,
    ranks: Vec<i32>,
    values: Option<Vec<f64>>,
    /// Per list, its largest rank in the trace.
    max_ranks: Vec<usize>,
}

/// The (rows, width, lists) of a trace given as arrays of these shapes: ids (Q, W), ranks
/// (Q, W, L) and normalized (Q, W, L); the message when they disagree.
pub fn trace_shape(
    ids: &[usize],
    ranks: &[usize],
    normalized: Option<&[usize]>,
) -> std::result::Result<(usize, usize, usize), String> {
    let (&[rows, width], &[_, _, lists]) = (ids, ranks) else {
        return Err(format!(
            "ids and ranks must have shapes (Q, W) and (Q, W, L), got {ids:?} and {ranks:?}"
        ));
    };
    let same = |s: &[usize]| s.get(..2) == Some(&[rows, width][..]);
    if !same(ranks) || normalized.is_some_and(|s| !same(s)) {
        return Err(format!(
            "ranks and normalized must have the shape ({rows}, {width}, lists)"
        ));
    }
    Ok((rows, width, lists))
}

impl Trace {
    /// The trace of a batch fused with `trace=true` (as [`crate::batch::BatchOutput`] holds
    /// it). Errors (argument `trace`): arrays whose sizes do not match the shape, a count outside
    /// `0..=width`, a negative rank.
    pub fn new(
        (rows, width, lists): (usize, usize, usize),
        ids: Vec<i64>,
        counts: &[i64],
        ranks: Vec<i32>,
        values: Option<Vec<f64>>,
    ) -> Result<Self> {
        let bad = |message: String| Err(Error::invalid("trace", message));
        let cells = rows.checked_mul(width);
        let cells3 = cells.and_then(|c| c.checked_mul(lists));
        if u32::try_from(width).is_err() || u32::try_from(lists).is_err() {
            return bad(format!(
                "a trace of width {width} and {lists} lists is too large"
            ));
        }
        if cells != Some(ids.len()) || counts.len() != rows {
            return bad(format!(
                "ids has {} entries and counts {} for {rows} rows of width {width}",
                ids.len(),
                counts.len()
            ));
        }
        let lens = [Some(ranks.len()), values.as_ref().map(Vec::len)];
        if lens.iter().flatten().any(|&n| Some(n) != cells3) {
            return bad(format!(
                "ranks and values must have {rows} x {width} x {lists} entries"
            ));
        }
        let mut checked = Vec::with_capacity(rows);
        for (r, &n) in counts.iter().enumerate() {
            match usize::try_from(n) {
                Ok(n) if n <= width => checked.push(n),
                _ => return bad(format!("counts[{r}] is {n}, outside 0..={width}")),
            }
        }
        if let Some(at) = ranks.iter().position(|&r| r < 0) {
            return bad(format!("ranks[{at}] is {}, below 0", ranks[at]));
        }
        let mut max_ranks = vec![0; lists];
        for hit in ranks.chunks_exact(lists.max(1)) {
            for (top, &r) in max_ranks.iter_mut().zip(hit) {
                *top = (*top).max(r as usize);
            }
        }
        Ok(Trace {
            rows,
            width,
            lists,
            ids,
            counts: checked,
            ranks,
            values,
            max_ranks,
        })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn lists(&self) -> usize {
        self.lists
    }
}

/// Whether [`combine`] scores `plan` from a trace, bit for bit as the engine: a method whose
/// score is a function of the per-list ranks or normalised values and of the setting
/// ([`Method::scored_from_trace`]), one counted occurrence per key and
/// list, a norm of each list on its own (not `borda`), and nothing applied after the score
/// (no `normalize`, boost, `min_score`, `offset` or ties by key). Errors name the argument.
pub fn check(plan: &Plan) -> Result<()> {
    let p = &plan.fusion;
    let method = p.method;
    let supported = method.scored_from_trace();
    let refuse = |argument: &str, what: &str| {
        Err(Error::invalid(
            argument,
            format!("{what} is not scored from a trace"),
        ))
    };
    if !supported {
        return refuse("method", &format!("method '{}'", method.name()));
    }
    if p.duplicates != Duplicates::First {
        return refuse("duplicates", &format!("duplicates='{:?}'", p.duplicates));
    }
    if plan.norm == Norm::Borda {
        return refuse("norm", "norm 'borda'");
    }
    if p.normalize || p.boost_weight.is_some() || p.min_score.is_some() || p.offset != 0 {
        return refuse(
            "normalize",
            "a score normalised, boosted, filtered or paged",
        );
    }
    if p.tie_break != TieBreak::BestRank {
        return refuse("tie_break", "tie_break='key'");
    }
    Ok(())
}

/// What a batch of settings keeps, setting after setting, row after row: `counts[s * rows +
/// r]` hits for setting s and row r, their ids and scores in the engine's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Combined {
    pub counts: Vec<i64>,
    pub ids: Vec<i64>,
    pub scores: Vec<f64>,
}

/// The first setting (in order) that could not be scored, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingError {
    pub setting: usize,
    pub error: Error,
}

/// A thread's buffers, reused from setting to setting.
#[derive(Default)]
struct Scratch {
    /// (sort key: score descending then first appearance, score, hit)
    candidates: Vec<(u128, f64, u32)>,
    values: Vec<f64>,
    weights: Vec<f64>,
}

/// Every setting of `plans` (each checked by [`check`], for `trace.lists()` lists) scored from
/// `trace`, on up to `n_threads` threads, each row cut at `cutoff` (see the module's docs) when
/// given. Errors: the first setting whose plan [`check`] refuses, or which gives a row a score
/// that is not finite (the engine's error: the row's first such key in the scan, `At::Row`).
pub fn combine(
    trace: &Trace,
    plans: &[Plan],
    cutoff: Option<usize>,
    n_threads: usize,
) -> std::result::Result<Combined, SettingError> {
    if cutoff == Some(0) {
        return Err(SettingError {
            setting: 0,
            error: Error::invalid("cutoff", "cutoff must be >= 1, got 0"),
        });
    }
    // Not cancellable here: a call fuses a few settings, and the caller (Python) checks for
    // signals between calls.
    let parts = pool::map_indices(
        n_threads,
        plans.len(),
        &Cancel::none(),
        Scratch::default,
        |scratch, s| setting(trace, &plans[s], cutoff, scratch),
    )
    .map_err(|error| SettingError { setting: 0, error })?;
    let mut out = Combined::default();
    for (s, part) in parts.into_iter().enumerate() {
        let part = part.map_err(|error| SettingError { setting: s, error })?;
        out.counts.extend(part.counts);
        out.ids.extend(part.ids);
        out.scores.extend(part.scores);
    }
    Ok(out)
}

/// One setting over every row.
fn setting(
    trace: &Trace,
    plan: &Plan,
    cutoff: Option<usize>,
    scratch: &mut Scratch,
) -> Result<Combined> {
    check(plan)?;
    let method = plan.fusion.method;
    if plan.n_lists() != trace.lists {
        return Err(Error::invalid(
            "weights",
            format!(
                "the plan has {} lists, the trace {}",
                plan.n_lists(),
                trace.lists
            ),
        ));
    }
    let values = match (&trace.values, method.is_rank_based()) {
        (_, true) => &[][..],
        (Some(v), false) => v.as_slice(),
        (None, false) => {
            return Err(Error::invalid(
                "trace",
                format!(
                    "method '{}' needs the trace's normalised values",
                    method.name()
                ),
            ))
        }
    };
    // the rank values of every rank in the trace, computed once (`Plan::contribution`)
    let plan = &if method.is_rank_based() {
        plan.clone().with_rank_terms(&trace.max_ranks)
    } else {
        plan.clone()
    };
    let mut out = Combined {
        counts: Vec::with_capacity(trace.rows),
        ..Combined::default()
    };
    for row in 0..trace.rows {
        score_row(trace, values, plan, row, scratch).map_err(|e| e.at(At::Row(row)))?;
        let kept = &mut scratch.candidates;
        if let Some(n) = plan.fusion.limit {
            if kept.len() > n {
                if n > 0 {
                    kept.select_nth_unstable_by_key(n - 1, |c| c.0);
                }
                kept.truncate(n);
            }
        }
        if let Some(c) = cutoff {
            if kept.len() > c {
                kept.select_nth_unstable_by_key(c - 1, |c| c.0);
                let threshold = kept[c - 1].1 as f32;
                kept.retain(|x| x.1 as f32 >= threshold);
            }
        }
        kept.sort_unstable_by_key(|c| c.0);
        let base = row * trace.width;
        out.counts.push(kept.len() as i64);
        out.ids
            .extend(kept.iter().map(|c| trace.ids[base + c.2 as usize]));
        out.scores.extend(kept.iter().map(|c| c.1));
    }
    Ok(out)
}

/// Scores the hits of `row` into `scratch.candidates`; a score that is not finite is the
/// engine's error for the first such key in the scan.
fn score_row(
    trace: &Trace,
    values: &[f64],
    plan: &Plan,
    row: usize,
    scratch: &mut Scratch,
) -> Result<()> {
    let method = plan.fusion.method;
    let rank_based = method.is_rank_based();
    let lists = trace.lists;
    let Scratch {
        candidates,
        values: terms,
        weights,
    } = scratch;
    candidates.clear();
    // the first key whose score is not finite: (first appearance, hit, score)
    let mut bad: Option<(u64, usize, f64)> = None;
    for hit in 0..trace.counts[row] {
        let at = (row * trace.width + hit) * lists;
        terms.clear();
        weights.clear();
        // the first appearance in the scan: position, then list
        let mut first = u64::MAX;
        for list in 0..lists {
            let (rank, w) = (trace.ranks[at + list], plan.weights[list]);
            if rank == 0 || w == 0.0 {
                continue; // not held, or a list of weight 0: not read
            }
            let position = (rank - 1) as u32;
            let v = if rank_based {
                f64::NAN
            } else {
                values[at + list]
            };
            terms.push(kernel::term(plan, list, position, v));
            weights.push(w);
            first = first.min(u64::from(position) << 32 | list as u64);
        }
        if terms.is_empty() {
            continue; // only lists of weight 0 hold it: not a hit
        }
        let score = score_of(plan, terms, weights);
        if !score.is_finite() {
            if bad.is_none_or(|(f, _, _)| first < f) {
                bad = Some((first, hit, score));
            }
            continue;
        }
        candidates.push((
            (descending_bits(score) as u128) << 64 | first as u128,
            score,
            hit as u32,
        ));
    }
    match bad {
        None => Ok(()),
        Some((first, hit, score)) => Err(Problem::NonFiniteScore {
            key: KeyRef {
                list: (first & u64::from(u32::MAX)) as usize,
                position: (first >> 32) as usize,
                key: Some(Key::Int(trace.ids[row * trace.width + hit])),
            },
            score,
            stage: if method == Method::Rrf {
                Stage::Rrf
            } else {
                Stage::Fused
            },
        }
        .into()),
    }
}

/// A hit's score from its terms (one per list read that holds it) and those lists' weights:
/// the kernel's [`kernel::combine`], as the engine scores it.
fn score_of(plan: &Plan, terms: &mut [f64], weights: &mut [f64]) -> f64 {
    let mut parts = HitParts { terms, weights };
    kernel::combine(plan, plan.fusion.method.combine(), &mut parts).score
}

/// A traced hit as the kernel's [`kernel::Parts`]: one term and weight per list holding it (the
/// methods scored from a trace sum their terms, times a factor of those lists).
struct HitParts<'a> {
    terms: &'a mut [f64],
    weights: &'a mut [f64],
}

impl kernel::Parts for HitParts<'_> {
    fn terms(&mut self) -> &mut [f64] {
        self.terms
    }

    fn values(&mut self) -> &mut [f64] {
        self.terms
    }

    fn present(&self) -> usize {
        self.terms.len()
    }

    fn present_weights(&mut self) -> f64 {
        canonical_sum(self.weights)
    }

    fn kept(&mut self, _: Combine) -> kernel::Kept {
        // (No mean is scored from a trace: `check` refuses them.)
        kernel::Kept {
            weights: f64::NAN,
            terms: f64::NAN,
            count: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{fuse_batch_into_vecs, BatchOutput, Extra, IdMatrix};
    use crate::fusion::Fusion;

    #[test]
    fn trace_shapes() {
        assert_eq!(trace_shape(&[2, 3], &[2, 3, 4], None), Ok((2, 3, 4)));
        assert_eq!(
            trace_shape(&[2, 3], &[2, 3, 4], Some(&[2, 3, 4])),
            Ok((2, 3, 4))
        );
        assert_eq!(
            trace_shape(&[2, 3], &[2, 3, 4], Some(&[2, 2, 4])),
            Err("ranks and normalized must have the shape (2, 3, lists)".into())
        );
        assert_eq!(
            trace_shape(&[2, 3], &[1, 3, 4], None),
            Err("ranks and normalized must have the shape (2, 3, lists)".into())
        );
        assert!(trace_shape(&[2], &[2, 3, 4], None).is_err());
    }

    use crate::testing::Rng;

    struct Batch {
        ids: Vec<Vec<i64>>,
        scores: Vec<Vec<f64>>,
        rows: usize,
        cols: Vec<usize>,
    }

    /// Rows of 0..12 items per list from 15 keys: repeats within a list, holes (-1) anywhere,
    /// few distinct scores (ties in the lists and in the sums).
    fn random_batch(rng: &mut Rng, lists: usize) -> Batch {
        let rows = 1 + rng.below(6) as usize;
        let cols: Vec<usize> = (0..lists).map(|_| rng.below(13) as usize).collect();
        let mut ids = Vec::new();
        let mut scores = Vec::new();
        for &c in &cols {
            let mut l_ids = vec![-1i64; rows * c];
            let mut l_scores = vec![f64::NAN; rows * c];
            for r in 0..rows {
                let n = rng.below(c as u64 + 1) as usize;
                for j in 0..n {
                    if rng.below(8) > 0 {
                        l_ids[r * c + j] = rng.below(15) as i64;
                        l_scores[r * c + j] = rng.pick(&[0.5, 1.0, 2.0, 3.25, -1.0, 0.0]);
                    }
                }
            }
            ids.push(l_ids);
            scores.push(l_scores);
        }
        Batch {
            ids,
            scores,
            rows,
            cols,
        }
    }

    fn fused(b: &Batch, params: &Fusion, trace: bool) -> Result<BatchOutput> {
        let mats: Vec<IdMatrix<'_>> = b
            .ids
            .iter()
            .zip(&b.cols)
            .map(|(d, &c)| IdMatrix::new(d, b.rows, c).expect("shape"))
            .collect();
        let scores: Vec<Option<&[f64]>> = b.scores.iter().map(|s| Some(&s[..])).collect();
        let extra = Extra {
            scores: &scores,
            boost: None,
        };
        let plan = params.check_plan(mats.len())?;
        fuse_batch_into_vecs(&mats, extra, &plan, -1, trace, 1)
    }

    fn trace_of(out: &BatchOutput, lists: usize) -> Trace {
        Trace::new(
            (out.rows, out.width, lists),
            out.ids.clone(),
            &out.counts,
            out.ranks.clone().expect("traced"),
            out.normalized.clone(),
        )
        .expect("a consistent trace")
    }

    /// The methods scored from a trace, from the method table.
    fn traced_methods() -> Vec<Method> {
        crate::fusion::methods::METHODS
            .iter()
            .map(|m| m.method)
            .filter(|m| m.scored_from_trace())
            .collect()
    }

    /// The traced fusion's parameters: every list read (weight 1), the method's parameter at
    /// any valid value.
    fn traced_params(rng: &mut Rng, method: Method, lists: usize) -> Fusion {
        let mut p = Fusion {
            method,
            ..Fusion::default()
        };
        if method.is_weighted() {
            p.weights = Some(vec![1.0; lists]);
        }
        match method {
            Method::Rbc => p.phi = Some(0.5),
            Method::Gmnz => p.gamma = Some(1.0),
            _ => {}
        }
        if !method.is_rank_based() && method.info().own_norm.is_none() {
            p.norm = Some(rng.pick(&[
                Norm::None,
                Norm::MinMax,
                Norm::ZScore,
                Norm::Rank,
                Norm::Sum,
                Norm::L2,
                Norm::Max,
            ]));
        }
        if !method.is_rank_based() && rng.below(3) == 0 {
            p.lower_is_better = Some((0..lists).map(|_| rng.below(2) == 0).collect());
        }
        if rng.below(4) == 0 {
            p.window = Some(1 + rng.below(6) as usize);
        }
        p
    }

    /// A setting of the traced parameters: weights (some 0, some negative), the method's
    /// parameter, a limit.
    fn random_setting(rng: &mut Rng, base: &Fusion, lists: usize) -> Fusion {
        let mut p = base.clone();
        if p.method.is_weighted() {
            p.weights = Some(
                (0..lists)
                    .map(|_| rng.pick(&[0.0, 0.1, 0.3, 0.7, 1.0, 0.5, -1.0, 2.5]))
                    .collect(),
            );
        }
        match p.method {
            Method::Rrf => p.k = Some(rng.pick(&[0.0, 1.0, 60.0, 2.5])),
            Method::Rbc => p.phi = Some(rng.pick(&[0.0, 0.1, 0.5, 0.9, 0.99])),
            Method::LognIsr => p.sigma = rng.pick(&[None, Some(0.0), Some(0.5), Some(1.0)]),
            Method::Gmnz => p.gamma = Some(rng.pick(&[-1.0, 0.0, 0.5, 1.0, 2.0])),
            _ => {}
        }
        p.limit = rng.pick(&[None, None, Some(0), Some(2), Some(5)]);
        p
    }

    /// Every setting scored from one traced fusion equals the engine's fusion with that
    /// setting: the same hits in the same order with the same score bits; with a cutoff, the
    /// engine's first hits as large (as C floats) as its c-th.
    #[test]
    fn settings_equal_the_engine() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let methods = traced_methods();
        let mut compared = vec![0usize; methods.len()];
        for case in 0..60 * methods.len() {
            let m = case % methods.len();
            let method = methods[m];
            let lists = 1 + rng.below(4) as usize;
            let b = random_batch(&mut rng, lists);
            let base = traced_params(&mut rng, method, lists);
            let Ok(traced) = fused(&b, &base, true) else {
                continue; // norm 'max' of a list whose best score is negative
            };
            let trace = trace_of(&traced, lists);
            let settings: Vec<Fusion> = (0..4)
                .map(|_| random_setting(&mut rng, &base, lists))
                .collect();
            let plans: Vec<Plan> = settings
                .iter()
                .map(|p| p.check_plan(lists).unwrap())
                .collect();
            let cutoff = rng.pick(&[None, Some(1), Some(3)]);
            let got = combine(&trace, &plans, cutoff, 1 + case % 2).unwrap();
            let (mut at, mut hit) = (0, 0);
            for p in &settings {
                let want = fused(&b, p, false).unwrap();
                for r in 0..b.rows {
                    let n = want.counts[r] as usize;
                    let row = r * want.width..r * want.width + n;
                    let (ids, scores) = (&want.ids[row.clone()], &want.scores[row]);
                    let keep = match cutoff {
                        Some(c) if n > c => {
                            let t = scores[c - 1] as f32;
                            scores.iter().take_while(|&&s| s as f32 >= t).count()
                        }
                        _ => n,
                    };
                    let have = got.counts[at] as usize;
                    assert_eq!(have, keep, "case {case}, {p:?}, row {r}");
                    assert_eq!(&got.ids[hit..hit + have], &ids[..keep]);
                    let bits = |s: &[f64]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got.scores[hit..hit + have]), bits(&scores[..keep]));
                    at += 1;
                    hit += have;
                    compared[m] += keep;
                }
            }
            assert_eq!((at, hit), (got.counts.len(), got.ids.len()));
        }
        assert!(compared.iter().all(|&n| n > 100), "{compared:?}");
    }

    /// A setting whose score overflows is the engine's error, for the same row and key.
    #[test]
    fn an_overflowing_setting_is_the_engines_error() {
        let b = Batch {
            ids: vec![vec![1, 2, 3, 4, 5, 6], vec![2, 1, -1, 5, 4, 6]],
            scores: vec![
                vec![3.0, 2.0, 1.0, 3.0, 2.0, 1.0],
                vec![1.0, 0.5, 0.0, 1.0, 0.5, 0.0],
            ],
            rows: 2,
            cols: vec![3, 3],
        };
        for method in [Method::Rrf, Method::Wsum, Method::Wmnz, Method::Mixed] {
            let mut base = Fusion {
                method,
                weights: Some(vec![1.0, 1.0]),
                ..Fusion::default()
            };
            if method != Method::Rrf {
                base.norm = Some(Norm::None);
            }
            let trace = trace_of(&fused(&b, &base, true).unwrap(), 2);
            let fine = Fusion {
                weights: Some(vec![0.5, 2.0]),
                ..base.clone()
            };
            let huge = Fusion {
                weights: Some(vec![1.5e308, 1.5e308]),
                k: (method == Method::Rrf).then_some(0.0),
                ..base.clone()
            };
            let want = fused(&b, &huge, false).unwrap_err();
            let plans = [fine.check_plan(2).unwrap(), huge.check_plan(2).unwrap()];
            let got = combine(&trace, &plans, None, 2).unwrap_err();
            assert_eq!(got.setting, 1);
            assert_eq!(got.error, want, "{method:?}");
            assert!(matches!(got.error.at, At::Row(_)));
        }
    }

    #[test]
    fn plans_it_cannot_score_are_refused() {
        let trace = Trace::new((1, 1, 1), vec![7], &[1], vec![1], None).unwrap();
        let refused = |p: Fusion| {
            let plan = p.check_plan(1).unwrap();
            combine(&trace, &[plan], None, 1).unwrap_err().error
        };
        let rrf = Fusion::default();
        for (p, argument) in [
            (
                Fusion {
                    duplicates: Duplicates::Sum,
                    ..rrf.clone()
                },
                "duplicates",
            ),
            (
                Fusion {
                    normalize: true,
                    ..rrf.clone()
                },
                "normalize",
            ),
            (
                Fusion {
                    tie_break: TieBreak::Key,
                    ..rrf.clone()
                },
                "tie_break",
            ),
            (
                Fusion {
                    method: Method::Condorcet,
                    ..rrf.clone()
                },
                "method",
            ),
            (
                Fusion {
                    method: Method::Max,
                    norm: Some(Norm::Borda),
                    ..rrf.clone()
                },
                "method",
            ),
            (
                Fusion {
                    method: Method::Wsum,
                    norm: Some(Norm::Borda),
                    ..rrf.clone()
                },
                "norm",
            ),
            (
                Fusion {
                    method: Method::Wsum,
                    ..rrf.clone()
                },
                "trace", // no normalised values in this trace
            ),
        ] {
            match refused(p).problem {
                Problem::Invalid { argument: a, .. } => assert_eq!(a, argument),
                other => panic!("{other:?}"),
            }
        }
        let two = Fusion {
            weights: Some(vec![1.0, 1.0]),
            ..rrf.clone()
        };
        assert!(combine(&trace, &[two.check_plan(2).unwrap()], None, 1).is_err());
        assert!(combine(&trace, &[rrf.check_plan(1).unwrap()], Some(0), 1).is_err());
        let ok = combine(&trace, &[rrf.check_plan(1).unwrap()], Some(1), 1).unwrap();
        assert_eq!(
            (ok.counts, ok.ids, ok.scores),
            (vec![1], vec![7], vec![1.0 / 61.0])
        );
    }

    #[test]
    fn inconsistent_traces_are_refused() {
        let t = |counts: &[i64], ranks: Vec<i32>, values: Option<Vec<f64>>| {
            Trace::new((1, 2, 1), vec![1, 2], counts, ranks, values)
        };
        assert!(t(&[2], vec![1, 2], Some(vec![0.5, 0.25])).is_ok());
        assert!(t(&[3], vec![1, 2], None).is_err()); // a count beyond the width
        assert!(t(&[-1], vec![1, 2], None).is_err());
        assert!(t(&[2], vec![1], None).is_err()); // ranks too short
        assert!(t(&[2], vec![1, -2], None).is_err());
        assert!(t(&[2], vec![1, 2], Some(vec![0.5])).is_err());
        assert!(t(&[2, 2], vec![1, 2], None).is_err()); // a count per row
        assert!(Trace::new((2, 2, 1), vec![1, 2], &[1, 1], vec![1, 2], None).is_err());
        assert!(Trace::new((usize::MAX, 2, 1), vec![], &[], vec![], None).is_err());
    }
}
