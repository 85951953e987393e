//! Reciprocal Rank Fusion over dense key ids, as SPEC.md defines it.
//!
//! The work is split in three steps so that every key type shares one algorithm:
//! 1. [`scan`]: the interleaved scan (rank 1 of every list, then rank 2, ...). A caller-supplied
//!    interner turns the item at (list, position) into a dense key id, new ids being handed out in
//!    scan order, so *id order is first-appearance order*: the default tie break is "smaller id".
//!    Duplicates inside a list are resolved here.
//! 2. [`score`]: each key's contributions `w / (k + rank)` added in ascending order of value from
//!    0.0 (the canonical sum), checked finite, optionally normalised.
//! 3. [`rank`]: `min_score` filter, order (score descending, then a tie comparator), offset/limit.
//!
//! [`rrf`] composes them for any `K: Hash + Eq` (and `rrf_key_ties` for `K: Ord`).

use std::cmp::Ordering;
use std::hash::Hash;

use hashbrown::{HashMap, HashSet};

use crate::error::{Error, Result};

pub type Hasher = foldhash::fast::RandomState;

/// What a key that repeats inside one list does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplicates {
    /// Only the first (best) occurrence counts.
    First,
    /// Every occurrence counts at its own rank.
    Sum,
    /// A repeat is an error.
    Error,
}

impl Duplicates {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "first" => Some(Self::First),
            "sum" => Some(Self::Sum),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// How hits with bit-equal scores are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TieBreak {
    /// First appearance in the interleaved scan.
    BestRank,
    /// The key itself, ascending.
    Key,
}

impl TieBreak {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "best_rank" => Some(Self::BestRank),
            "key" => Some(Self::Key),
            _ => None,
        }
    }
}

/// The parameters of one fusion, already type-checked. [`Params::check`] checks the values.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub k: f64,
    /// One weight per list; `None` means every list weighs 1.0.
    pub weights: Option<Vec<f64>>,
    pub window: Option<usize>,
    pub duplicates: Duplicates,
    pub tie_break: TieBreak,
    pub offset: usize,
    pub limit: Option<usize>,
    pub min_score: Option<f64>,
    pub normalize: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            k: 60.0,
            weights: None,
            window: None,
            duplicates: Duplicates::First,
            tie_break: TieBreak::BestRank,
            offset: 0,
            limit: None,
            min_score: None,
            normalize: false,
        }
    }
}

// --- value checks, one per argument, shared by `Params::check` and the Python binding ----------

pub fn check_k(k: f64) -> Result<f64> {
    if !k.is_finite() {
        return Err(Error::value("k", format!("k must be finite, got {k}")));
    }
    if k < 0.0 {
        return Err(Error::value("k", format!("k must be >= 0, got {k}")));
    }
    Ok(k)
}

pub fn check_weights_len(n_weights: usize, n_lists: usize) -> Result<()> {
    if n_weights != n_lists {
        return Err(Error::value(
            "weights",
            format!("weights has {n_weights} values for {n_lists} lists"),
        ));
    }
    Ok(())
}

pub fn check_finite(name: &str, x: f64) -> Result<f64> {
    if !x.is_finite() {
        return Err(Error::value(
            name,
            format!("{name} must be finite, got {x}"),
        ));
    }
    Ok(x)
}

pub fn check_window(window: usize) -> Result<usize> {
    if window < 1 {
        return Err(Error::value("window", "window must be >= 1, got 0"));
    }
    Ok(window)
}

impl Params {
    /// Checks every value as the reference does and returns the weights resolved for `n_lists`.
    pub fn check(&self, n_lists: usize) -> Result<Vec<f64>> {
        check_k(self.k)?;
        let weights = match &self.weights {
            None => vec![1.0; n_lists],
            Some(w) => {
                check_weights_len(w.len(), n_lists)?;
                for (i, &x) in w.iter().enumerate() {
                    check_finite(&format!("weights[{i}]"), x)?;
                }
                w.clone()
            }
        };
        if let Some(window) = self.window {
            check_window(window)?;
        }
        if let Some(m) = self.min_score {
            check_finite("min_score", m)?;
        }
        Ok(weights)
    }
}

/// The canonical sum: ascending order of value, from 0.0, one f64 addition at a time. Sorts
/// `values` in place. All values must be finite (contributions always are).
#[inline]
pub fn canonical_sum(values: &mut [f64]) -> f64 {
    match values.len() {
        0 => 0.0,
        1 => 0.0 + values[0],
        2 => {
            let (a, b) = (values[0], values[1]);
            let (lo, hi) = if b < a { (b, a) } else { (a, b) };
            0.0 + lo + hi
        }
        _ => {
            values.sort_unstable_by(f64::total_cmp);
            values.iter().fold(0.0, |acc, &v| acc + v)
        }
    }
}

/// The normaliser of `normalize=True`: the canonical sum of `w / (k + 1)` over positive weights.
/// `None` when no weight is positive.
pub fn best_possible_score(weights: &[f64], k: f64) -> Option<f64> {
    let mut tops: Vec<f64> = weights
        .iter()
        .filter(|&&w| w > 0.0)
        .map(|&w| w / (k + 1.0))
        .collect();
    if tops.is_empty() {
        None
    } else {
        Some(canonical_sum(&mut tops))
    }
}

/// The normaliser of `normalize=True`, or the reference's error when there is none: no positive
/// weight, or an under- or overflow of extreme weights.
pub fn normalizer(weights: &[f64], k: f64) -> Result<f64> {
    let top = best_possible_score(weights, k).ok_or_else(normalize_without_positive_weight)?;
    if !(top > 0.0 && top.is_finite()) {
        // Python's str() of the float: 0.0 or inf, never Rust's "0".
        let shown = if top == 0.0 {
            "0.0".to_owned()
        } else {
            top.to_string()
        };
        return Err(Error::value(
            "normalize",
            format!("normalize=True: the largest possible score is {shown}"),
        ));
    }
    Ok(top)
}

pub fn normalize_without_positive_weight() -> Error {
    Error::value(
        "normalize",
        "normalize=True needs at least one list with a positive weight",
    )
}

/// One counted occurrence of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occurrence {
    pub key: u32,
    pub list: u32,
    /// 0-based position in the list as given (rank = position + 1).
    pub position: u32,
}

/// The result of the interleaved scan.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Key id -> (list, position) of the key's first occurrence in scan order.
    pub first_seen: Vec<(u32, u32)>,
    /// Counted occurrences, in scan order.
    pub occurrences: Vec<Occurrence>,
}

impl Scan {
    pub fn n_keys(&self) -> usize {
        self.first_seen.len()
    }
}

/// Remembers which lists a key has been counted in, for `duplicates` "first" and "error".
enum SeenLists {
    /// One bit per list, when there are at most 64 lists to read.
    Bits(Vec<u64>),
    Set(HashSet<(u32, u32), Hasher>),
}

impl SeenLists {
    /// `max_keys` bounds the number of distinct keys (the number of items read).
    fn new(n_read_lists: usize, max_keys: usize) -> Self {
        if n_read_lists <= 64 {
            SeenLists::Bits(vec![0; max_keys])
        } else {
            SeenLists::Set(HashSet::default())
        }
    }

    /// Marks (key, slot) and returns whether it was already marked. `slot` is the list's index
    /// among the lists that are read.
    #[inline]
    fn insert(&mut self, key: u32, slot: usize) -> bool {
        match self {
            SeenLists::Bits(bits) => {
                let key = key as usize;
                if key >= bits.len() {
                    bits.resize(key + 1, 0);
                }
                let mask = 1u64 << slot;
                let seen = bits[key] & mask != 0;
                bits[key] |= mask;
                seen
            }
            SeenLists::Set(set) => !set.insert((key, slot as u32)),
        }
    }
}

/// The interleaved scan. `lens[i]` is the length of list i; lists whose weight is 0 are skipped
/// entirely and only the first `window` items of each list are read. `intern(list, position)`
/// must return the key id of that item: an existing id for a key already met, or exactly the
/// number of distinct keys met so far for a new key. Its errors (`E: From<Error>`) stop the scan
/// at once, so errors are raised in scan order whoever detects them.
pub fn scan<E: From<Error>>(
    lens: &[usize],
    weights: &[f64],
    window: Option<usize>,
    duplicates: Duplicates,
    mut intern: impl FnMut(usize, usize) -> std::result::Result<u32, E>,
) -> std::result::Result<Scan, E> {
    let read: Vec<usize> = (0..lens.len()).filter(|&i| weights[i] != 0.0).collect();
    let mut depth = read.iter().map(|&i| lens[i]).max().unwrap_or(0);
    if let Some(w) = window {
        depth = depth.min(w);
    }
    let total: usize = read.iter().map(|&i| lens[i].min(depth)).sum();
    let mut out = Scan {
        first_seen: Vec::with_capacity(total),
        occurrences: Vec::with_capacity(total),
    };
    let mut seen = match duplicates {
        Duplicates::Sum => None,
        _ => Some(SeenLists::new(read.len(), total)),
    };
    for position in 0..depth {
        for (slot, &list) in read.iter().enumerate() {
            if position >= lens[list] {
                continue;
            }
            let key = intern(list, position)?;
            if key as usize == out.first_seen.len() {
                out.first_seen.push((list as u32, position as u32));
            }
            if let Some(seen) = seen.as_mut() {
                if seen.insert(key, slot) {
                    if duplicates == Duplicates::Error {
                        return Err(Error::DuplicateKey {
                            list_index: list,
                            position,
                        }
                        .into());
                    }
                    continue;
                }
            }
            out.occurrences.push(Occurrence {
                key,
                list: list as u32,
                position: position as u32,
            });
        }
    }
    Ok(out)
}

/// The score returned for a key's canonical `sum`: checked finite, then divided by the
/// normaliser when there is one and checked again. `first` locates the key for the error.
#[inline]
pub fn returned_score(sum: f64, first: (u32, u32), normalizer: Option<f64>) -> Result<f64> {
    let error = |score: f64, normalized: bool| Error::NonFiniteScore {
        list_index: first.0 as usize,
        position: first.1 as usize,
        score,
        normalized,
    };
    if !sum.is_finite() {
        return Err(error(sum, false));
    }
    match normalizer {
        None => Ok(sum),
        Some(top) => {
            let s = sum / top;
            if s.is_finite() {
                Ok(s)
            } else {
                Err(error(s, true))
            }
        }
    }
}

/// Per-key scores and, grouped by key, the occurrences behind them.
#[derive(Clone, Debug, Default)]
pub struct Scores {
    /// Key id -> score as returned (normalised when asked).
    pub scores: Vec<f64>,
    /// Key id -> the canonical sum before normalisation; empty when not normalising (then it
    /// equals `scores`). Hits are ordered by the sum, so normalising never reorders them.
    pub sums: Vec<f64>,
    /// `occurrences[offsets[key]..offsets[key + 1]]` are the key's counted occurrences, in scan
    /// order.
    pub offsets: Vec<u32>,
    pub occurrences: Vec<Occurrence>,
}

impl Scores {
    /// The values hits are ordered by: the canonical sums.
    pub fn order(&self) -> &[f64] {
        if self.sums.is_empty() {
            &self.scores
        } else {
            &self.sums
        }
    }
}

#[inline]
pub fn contribution(weight: f64, k: f64, position: u32) -> f64 {
    weight / (k + (position as f64 + 1.0))
}

/// Scores every key of `scan`: the canonical sum of its contributions, checked finite, then
/// divided by `normalizer` when given (and checked again).
pub fn score(scan: &Scan, weights: &[f64], k: f64, normalizer: Option<f64>) -> Result<Scores> {
    let n_keys = scan.n_keys();
    // Group occurrences by key with a counting sort (stable: scan order within a key).
    let mut offsets = vec![0u32; n_keys + 1];
    for occ in &scan.occurrences {
        offsets[occ.key as usize + 1] += 1;
    }
    for i in 0..n_keys {
        offsets[i + 1] += offsets[i];
    }
    let mut cursor: Vec<u32> = offsets[..n_keys].to_vec();
    let mut grouped = vec![
        Occurrence {
            key: 0,
            list: 0,
            position: 0
        };
        scan.occurrences.len()
    ];
    for occ in &scan.occurrences {
        let c = &mut cursor[occ.key as usize];
        grouped[*c as usize] = *occ;
        *c += 1;
    }
    let mut scores = Vec::with_capacity(n_keys);
    let mut sums = Vec::with_capacity(if normalizer.is_some() { n_keys } else { 0 });
    let mut values: Vec<f64> = Vec::new();
    for key in 0..n_keys {
        let occs = &grouped[offsets[key] as usize..offsets[key + 1] as usize];
        values.clear();
        values.extend(
            occs.iter()
                .map(|o| contribution(weights[o.list as usize], k, o.position)),
        );
        let sum = canonical_sum(&mut values);
        let s = returned_score(sum, scan.first_seen[key], normalizer)?;
        if normalizer.is_some() {
            sums.push(sum);
        }
        scores.push(s);
    }
    Ok(Scores {
        scores,
        sums,
        offsets,
        occurrences: grouped,
    })
}

/// Orders keys by their canonical sum descending (the score itself unless normalised), then by
/// `ties` (a total order on key ids). Keys whose returned score is below `min_score` are dropped
/// first; then the page `[offset, offset + limit)` is returned. Only the page is sorted fully
/// when a limit is given.
pub fn rank(
    scores: &Scores,
    min_score: Option<f64>,
    offset: usize,
    limit: Option<usize>,
    ties: impl Fn(u32, u32) -> Ordering,
) -> Vec<u32> {
    let shown = &scores.scores;
    let order = scores.order();
    let mut ids: Vec<u32> = match min_score {
        None => (0..shown.len() as u32).collect(),
        Some(m) => (0..shown.len() as u32)
            .filter(|&i| shown[i as usize] >= m)
            .collect(),
    };
    let cmp = |a: &u32, b: &u32| {
        // Sums are finite: partial_cmp never fails; reversed for descending order.
        match order[*b as usize].partial_cmp(&order[*a as usize]) {
            Some(Ordering::Equal) | None => ties(*a, *b),
            Some(o) => o,
        }
    };
    let end = match limit {
        Some(l) => offset.saturating_add(l).min(ids.len()),
        None => ids.len(),
    };
    if offset >= end {
        return Vec::new();
    }
    if end < ids.len() {
        ids.select_nth_unstable_by(end - 1, cmp);
        ids.truncate(end);
    }
    ids.sort_unstable_by(cmp);
    ids.drain(..offset);
    ids
}

/// What a fusion needs once the arguments are checked: the resolved weights and the normaliser.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub weights: Vec<f64>,
    pub normalizer: Option<f64>,
}

/// Checks `params` for lists of lengths `lens` (normalize=True needs a positive weight whether or
/// not the lists hold any item). `Ok(None)` for empty input (no lists, or only empty lists): no
/// hits.
pub fn plan(lens: &[usize], params: &Params) -> Result<Option<Plan>> {
    let weights = params.check(lens.len())?;
    let normalizer = if params.normalize {
        Some(normalizer(&weights, params.k)?)
    } else {
        None
    };
    if lens.iter().all(|&n| n == 0) {
        return Ok(None);
    }
    Ok(Some(Plan {
        weights,
        normalizer,
    }))
}

/// One fused hit of [`rrf`]: where its key was first met, and its score.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub list_index: usize,
    pub position: usize,
    pub score: f64,
}

/// An interner for plain Rust keys: equal keys get one id, new ids in order of first sight.
pub fn interner<'a, K: Hash + Eq>(
    lists: &'a [&'a [K]],
) -> impl FnMut(usize, usize) -> Result<u32> + 'a {
    let total = lists.iter().map(|l| l.len()).sum();
    let mut ids: HashMap<&'a K, u32, Hasher> =
        HashMap::with_capacity_and_hasher(total, Hasher::default());
    move |list, position| {
        let next = ids.len() as u32;
        Ok(*ids.entry(&lists[list][position]).or_insert(next))
    }
}

fn fuse<K: Hash + Eq>(
    lists: &[&[K]],
    params: &Params,
    ties: impl Fn(&Scan, u32, u32) -> Ordering,
) -> Result<Vec<Hit>> {
    let lens: Vec<usize> = lists.iter().map(|l| l.len()).collect();
    let Some(plan) = plan(&lens, params)? else {
        return Ok(Vec::new());
    };
    let scan = scan(
        &lens,
        &plan.weights,
        params.window,
        params.duplicates,
        interner(lists),
    )?;
    let scores = score(&scan, &plan.weights, params.k, plan.normalizer)?;
    let ids = rank(
        &scores,
        params.min_score,
        params.offset,
        params.limit,
        |a, b| ties(&scan, a, b),
    );
    Ok(ids
        .into_iter()
        .map(|id| {
            let (list_index, position) = scan.first_seen[id as usize];
            Hit {
                list_index: list_index as usize,
                position: position as usize,
                score: scores.scores[id as usize],
            }
        })
        .collect())
}

/// RRF of `lists` for any hashable key type, ties in first-appearance order.
/// `TieBreak::Key` needs ordered keys: use [`rrf_ord`].
pub fn rrf<K: Hash + Eq>(lists: &[&[K]], params: &Params) -> Result<Vec<Hit>> {
    if params.tie_break == TieBreak::Key {
        return Err(Error::value(
            "tie_break",
            "tie_break=\"key\" needs ordered keys: use rrf_ord",
        ));
    }
    fuse(lists, params, |_, a, b| a.cmp(&b))
}

/// RRF of `lists` for ordered keys; honours both tie breaks.
pub fn rrf_ord<K: Hash + Eq + Ord>(lists: &[&[K]], params: &Params) -> Result<Vec<Hit>> {
    match params.tie_break {
        TieBreak::BestRank => fuse(lists, params, |_, a, b| a.cmp(&b)),
        TieBreak::Key => fuse(lists, params, |scan, a, b| {
            let key = |id: u32| {
                let (l, p) = scan.first_seen[id as usize];
                &lists[l as usize][p as usize]
            };
            key(a).cmp(key(b))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params::default()
    }

    fn keys<'a>(lists: &[&[&'a str]], hits: &[Hit]) -> Vec<&'a str> {
        hits.iter()
            .map(|h| lists[h.list_index][h.position])
            .collect()
    }

    #[test]
    fn weighted_example_from_the_issue() {
        let lists: [&[&str]; 2] = [&["c1", "c2"], &["c2", "c3"]];
        let p = Params {
            k: 10.0,
            weights: Some(vec![1.0, 2.0]),
            ..params()
        };
        let hits = rrf(&lists, &p).unwrap();
        assert_eq!(keys(&lists, &hits), ["c2", "c3", "c1"]);
        assert_eq!(hits[0].score, 0.0 + 1.0 / 12.0 + 2.0 / 11.0);
        assert_eq!(hits[1].score, 2.0 / 12.0);
        assert_eq!(hits[2].score, 1.0 / 11.0);
    }

    #[test]
    fn zero_weight_skips_the_list() {
        let lists: [&[&str]; 2] = [&["a", "b"], &["b", "c"]];
        let p = Params {
            k: 1.0,
            weights: Some(vec![1.0, 0.0]),
            ..params()
        };
        let hits = rrf(&lists, &p).unwrap();
        assert_eq!(keys(&lists, &hits), ["a", "b"]);
        assert_eq!(hits[0].score, 0.5);
        assert_eq!(hits[1].score, 1.0 / 3.0);
        let none = Params {
            weights: Some(vec![0.0, 0.0]),
            ..p
        };
        assert!(rrf(&lists, &none).unwrap().is_empty());
    }

    #[test]
    fn interleaved_tie_order_and_overlap() {
        let lists: [&[&str]; 2] = [&["a", "b", "x"], &["c", "d", "x"]];
        let hits = rrf(&lists, &params()).unwrap();
        assert_eq!(keys(&lists, &hits), ["x", "a", "c", "b", "d"]);
        assert_eq!(hits[1].score, 1.0 / 61.0);
        assert_eq!(hits[1].score, hits[2].score);
    }

    #[test]
    fn list_order_never_changes_score_bits() {
        let a: &[u32] = &[1, 2, 3, 4, 5, 6, 7];
        let b: &[u32] = &[7, 6, 5, 4, 3, 2, 1];
        let c: &[u32] = &[4, 1, 7];
        let w = |ws: [f64; 3]| Params {
            k: 0.5,
            weights: Some(ws.to_vec()),
            ..params()
        };
        let forward = rrf(&[a, b, c], &w([1.0, 0.3, 1e-3])).unwrap();
        let backward = rrf(&[c, b, a], &w([1e-3, 0.3, 1.0])).unwrap();
        let by_key = |lists: [&[u32]; 3], hits: Vec<Hit>| {
            let mut v: Vec<(u32, u64)> = hits
                .iter()
                .map(|h| (lists[h.list_index][h.position], h.score.to_bits()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(by_key([a, b, c], forward), by_key([c, b, a], backward));
    }

    #[test]
    fn duplicates_policies() {
        let lists: [&[&str]; 1] = [&["a", "b", "a"]];
        let first = rrf(&lists, &params()).unwrap();
        assert_eq!(first[0].score, 1.0 / 61.0);
        let sum = rrf(
            &lists,
            &Params {
                duplicates: Duplicates::Sum,
                ..params()
            },
        )
        .unwrap();
        assert_eq!(sum[0].score, 0.0 + 1.0 / 63.0 + 1.0 / 61.0);
        let err = rrf(
            &lists,
            &Params {
                duplicates: Duplicates::Error,
                ..params()
            },
        )
        .unwrap_err();
        assert_eq!(
            err,
            Error::DuplicateKey {
                list_index: 0,
                position: 2
            }
        );
    }

    #[test]
    fn window_paging_and_min_score() {
        let lists: [&[i64]; 2] = [&[1, 2, 3, 4], &[4, 3, 9, 8]];
        let p = Params {
            window: Some(2),
            ..params()
        };
        let hits = rrf(&lists, &p).unwrap();
        let got: Vec<i64> = hits
            .iter()
            .map(|h| lists[h.list_index][h.position])
            .collect();
        assert_eq!(got, [1, 4, 2, 3]);
        let page = Params {
            offset: 1,
            limit: Some(2),
            ..p.clone()
        };
        let hits = rrf(&lists, &page).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(lists[hits[0].list_index][hits[0].position], 4);
        let high = Params {
            min_score: Some(1.0 / 61.0),
            ..p
        };
        assert_eq!(rrf(&lists, &high).unwrap().len(), 2);
    }

    #[test]
    fn key_tie_break_and_normalize() {
        let lists: [&[&str]; 2] = [&["b", "a"], &["a", "b"]];
        let p = Params {
            tie_break: TieBreak::Key,
            normalize: true,
            ..params()
        };
        let hits = rrf_ord(&lists, &p).unwrap();
        assert_eq!(keys(&lists, &hits), ["a", "b"]);
        let top = 0.0 + 1.0 / 61.0 + 1.0 / 61.0;
        assert_eq!(hits[0].score, (0.0 + 1.0 / 62.0 + 1.0 / 61.0) / top);
        assert!(rrf(&lists, &p).is_err());
    }

    #[test]
    fn bad_values_are_errors_not_panics() {
        let lists: [&[&str]; 1] = [&["a"]];
        for p in [
            Params {
                k: -1.0,
                ..params()
            },
            Params {
                k: f64::NAN,
                ..params()
            },
            Params {
                weights: Some(vec![1.0, 2.0]),
                ..params()
            },
            Params {
                weights: Some(vec![f64::INFINITY]),
                ..params()
            },
            Params {
                window: Some(0),
                ..params()
            },
            Params {
                min_score: Some(f64::NAN),
                ..params()
            },
            Params {
                normalize: true,
                weights: Some(vec![-1.0]),
                ..params()
            },
            Params {
                k: 0.0,
                weights: Some(vec![f64::MAX]),
                duplicates: Duplicates::Sum,
                ..params()
            },
        ] {
            let lists2: [&[&str]; 1] = [&["a", "a"]];
            let r1 = rrf(&lists, &p);
            let r2 = rrf(&lists2, &p);
            assert!(r1.is_err() || r2.is_err(), "{p:?}");
        }
    }

    #[test]
    fn empty_input_gives_no_hits() {
        let none: [&[&str]; 0] = [];
        assert!(rrf(&none, &params()).unwrap().is_empty());
        let empty: [&[&str]; 2] = [&[], &[]];
        let p = Params {
            normalize: true,
            weights: Some(vec![1.0, 0.0]),
            ..params()
        };
        assert!(rrf(&empty, &p).unwrap().is_empty());
        let no_positive = Params {
            weights: Some(vec![-1.0, 0.0]),
            ..p
        };
        assert!(rrf(&empty, &no_positive).is_err());
    }

    #[test]
    fn canonical_sum_is_ascending() {
        let mut v = [1e16, 1.0, -1e16, 1.0];
        // ascending: -1e16, 1, 1, 1e16 -> (-1e16 + 1) + 1 = -1e16 (rounding), + 1e16 = 0
        assert_eq!(canonical_sum(&mut v), 0.0 + -1e16 + 1.0 + 1.0 + 1e16);
    }
}
