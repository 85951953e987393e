//! Every fusion method and normalisation on small cases worked out by hand from the formulas of
//! docs/semantics.md ("Fusion methods"); each expected value is written as its arithmetic, in the
//! order of operations the formula states (sums ascending from 0.0), and compared bit for bit.

use std::collections::HashMap;

use super::methods::{Combine, Factor};
use super::*;
use crate::error::{Error, Problem, Stage};

const NAN: f64 = f64::NAN;

/// The page and its trace.
struct Fused {
    hits: Vec<(i64, f64)>,
    trace: Trace,
}

impl Fused {
    fn keys(&self) -> Vec<i64> {
        self.hits.iter().map(|&(k, _)| k).collect()
    }

    fn score(&self, key: i64) -> f64 {
        self.at(key).1
    }

    fn at(&self, key: i64) -> (usize, f64) {
        let j = self.hits.iter().position(|&(k, _)| k == key);
        let j = j.unwrap_or_else(|| panic!("no hit {key} in {:?}", self.hits));
        (j, self.hits[j].1)
    }

    /// Key `key`'s contributions: (list, rank, value, raw, normalized).
    fn contributions(&self, key: i64) -> Vec<(u32, usize, f64, f64, f64)> {
        let (j, _) = self.at(key);
        self.trace
            .hit(j)
            .iter()
            .map(|c| (c.list, c.rank(), c.value, c.raw, c.normalized))
            .collect()
    }

    fn factor(&self, key: i64) -> f64 {
        self.trace.factors[self.at(key).0]
    }

    fn divisor(&self, key: i64) -> f64 {
        self.trace.divisors[self.at(key).0]
    }

    fn boost(&self, key: i64) -> f64 {
        self.trace.boosts[self.at(key).0]
    }
}

/// Fuses i64 `lists` (entries equal to `pad` are holes) with per-list `scores` and `params`,
/// then the boost `boost` (key -> value) when given; traced.
fn fuse_with(
    lists: &[&[i64]],
    pad: Option<i64>,
    scores: &[Option<&[f64]>],
    params: Fusion,
    boost: Option<&[(i64, f64)]>,
) -> Result<Fused> {
    let plan = params.check_plan(lists.len())?;
    let mut table = IdTable::default();
    let mut ws = Workspace::new(true);
    ws.fuse(&mut Rows::new(lists, pad, &mut table), scores, &plan)?;
    if let Some(boost) = boost {
        let values: HashMap<i64, f64> = boost.iter().copied().collect();
        ws.boost(&plan, |_, key, _| Ok::<_, Error>(values.get(&key).copied()))?;
    }
    ws.rank(&plan);
    let hits = ws
        .page()
        .iter()
        .map(|&id| (ws.key(id), ws.score(id)))
        .collect();
    let mut trace = Trace::default();
    ws.trace(&plan, scores, &mut trace);
    Ok(Fused { hits, trace })
}

fn fuse(lists: &[&[i64]], scores: &[Option<&[f64]>], params: Fusion) -> Fused {
    match fuse_with(lists, None, scores, params, None) {
        Ok(fused) => fused,
        Err(e) => panic!("{e}"),
    }
}

fn method(method: Method) -> Fusion {
    Fusion {
        method,
        ..Fusion::default()
    }
}

fn scored(m: Method, norm: Norm) -> Fusion {
    Fusion {
        method: m,
        norm: Some(norm),
        ..Fusion::default()
    }
}

/// The value list `scores` gets by `norm` (one list, method sum: its score is the value).
fn normalized(norm: Norm, scores: &[f64]) -> Vec<f64> {
    let keys: Vec<i64> = (1..=scores.len() as i64).collect();
    let fused = fuse(&[&keys], &[Some(scores)], scored(Method::Sum, norm));
    keys.iter().map(|&k| fused.score(k)).collect()
}

fn assert_bits(got: &[f64], want: &[f64]) {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
    assert_eq!(bits(got), bits(want), "{got:?} != {want:?}");
}

fn assert_same(got: f64, want: f64) {
    assert_eq!(got.to_bits(), want.to_bits(), "{got:?} != {want:?}");
}

fn invalid_argument(e: &Error) -> &str {
    match &e.problem {
        Problem::Invalid { argument, .. } => argument,
        other => panic!("not an argument error: {other:?}"),
    }
}

// --- normalisations ---------------------------------------------------------------------------

#[test]
fn norm_none_is_the_raw_score() {
    assert_bits(&normalized(Norm::None, &[2.5, -1.0]), &[2.5, -1.0]);
}

#[test]
fn norm_min_max() {
    // min 1, max 5: (5-1)/(5-1) = 1, (3-1)/(5-1) = 0.5, (1-1)/(5-1) = 0
    assert_bits(
        &normalized(Norm::MinMax, &[5.0, 3.0, 1.0]),
        &[1.0, 0.5, 0.0],
    );
    // negative scores: min -3, max -1: (-1+3)/2 = 1, (-3+3)/2 = 0
    assert_bits(&normalized(Norm::MinMax, &[-1.0, -3.0]), &[1.0, 0.0]);
}

#[test]
fn norm_min_max_of_an_all_equal_or_one_key_list_is_one() {
    // max == min: every item is the best, 1.0
    assert_bits(
        &normalized(Norm::MinMax, &[2.0, 2.0, 2.0]),
        &[1.0, 1.0, 1.0],
    );
    assert_bits(&normalized(Norm::MinMax, &[7.0]), &[1.0]);
    assert_bits(&normalized(Norm::MinMax, &[-4.0]), &[1.0]);
}

#[test]
fn norm_max() {
    // max 4: 4/4 = 1, 2/4 = 0.5, 1/4 = 0.25, -2/4 = -0.5
    assert_bits(
        &normalized(Norm::Max, &[4.0, 2.0, 1.0, -2.0]),
        &[1.0, 0.5, 0.25, -0.5],
    );
}

#[test]
fn norm_max_with_max_zero_is_zero_and_negative_max_is_an_error() {
    // max == 0: every value 0.0 (negative scores included)
    assert_bits(&normalized(Norm::Max, &[0.0, -2.0]), &[0.0, 0.0]);
    // max -1 < 0: an error naming the norm
    let keys: &[i64] = &[1, 2];
    let scores: &[f64] = &[-1.0, -2.0];
    let e = fuse_with(
        &[keys],
        None,
        &[Some(scores)],
        scored(Method::Sum, Norm::Max),
        None,
    )
    .err()
    .expect("max < 0 is an error");
    assert_eq!(invalid_argument(&e), "norm");
    assert_eq!(
        e.to_string(),
        "norm='max' needs a list's largest score to be >= 0, got -1.0 (use 'min-max' for \
         negative scores)"
    );
}

#[test]
fn norm_sum() {
    // min 1; shifted 3, 1, 0, 0; total 0+0+1+3 = 4: 3/4, 1/4, 0/4, 0/4
    assert_bits(
        &normalized(Norm::Sum, &[4.0, 2.0, 1.0, 1.0]),
        &[0.75, 0.25, 0.0, 0.0],
    );
    // all equal: the total is 0, equal shares 1/n = 1/2
    assert_bits(&normalized(Norm::Sum, &[5.0, 5.0]), &[0.5, 0.5]);
    assert_bits(&normalized(Norm::Sum, &[3.0]), &[1.0]);
}

#[test]
fn norm_z_score_uses_the_population_deviation() {
    // mean (2+4+4+4+5+5+7+9)/8 = 40/8 = 5; squares 9,1,1,1,0,0,4,16 sum 32; 32/8 = 4; sd 2
    // (2-5)/2 = -1.5, (4-5)/2 = -0.5, (5-5)/2 = 0, (7-5)/2 = 1, (9-5)/2 = 2
    assert_bits(
        &normalized(Norm::ZScore, &[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
        &[-1.5, -0.5, -0.5, -0.5, 0.0, 0.0, 1.0, 2.0],
    );
}

#[test]
fn norm_z_score_with_sigma_zero_is_zero() {
    // sd 0 (a constant list, or one item): 0.0
    assert_bits(&normalized(Norm::ZScore, &[3.0, 3.0]), &[0.0, 0.0]);
    assert_bits(&normalized(Norm::ZScore, &[-8.0]), &[0.0]);
}

#[test]
fn norm_l2() {
    // length sqrt(3*3 + 4*4) = sqrt(25) = 5: 3/5, 4/5
    assert_bits(&normalized(Norm::L2, &[3.0, 4.0]), &[3.0 / 5.0, 4.0 / 5.0]);
    // length 0: 0.0
    assert_bits(&normalized(Norm::L2, &[0.0, 0.0]), &[0.0, 0.0]);
}

#[test]
fn norm_rank() {
    // n = 4: 1 - (r-1)/4 = 1, 0.75, 0.5, 0.25; no scores needed
    let keys: &[i64] = &[1, 2, 3, 4];
    let fused = fuse(&[keys], &[], scored(Method::Sum, Norm::Rank));
    assert_eq!(fused.keys(), [1, 2, 3, 4]);
    let scores: Vec<f64> = fused.hits.iter().map(|&(_, s)| s).collect();
    assert_bits(&scores, &[1.0, 0.75, 0.5, 0.25]);
}

#[test]
fn norm_rank_counts_items_read_but_keeps_positions() {
    // [1, pad, 2]: 2 items read (n = 2), key 2 keeps rank 3: 1 - (3-1)/2 = 0
    let keys: &[i64] = &[1, -1, 2];
    let fused = fuse_with(
        &[keys],
        Some(-1),
        &[],
        scored(Method::Sum, Norm::Rank),
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_same(fused.score(1), 1.0);
    assert_same(fused.score(2), 1.0 - 2.0 / 2.0);
    assert_eq!(fused.contributions(2)[0].1, 3);
}

#[test]
fn norm_borda_gives_unranked_keys_their_share() {
    // A = [1, 2], B = [3]; C = {1, 2, 3}, |C| = 3.
    // ranked: 1 - (r-1)/3; unranked in a list of n items: 0.5 - (n-1)/(2*3)
    // key 1: A 1 - 0/3 = 1;   B unranked 0.5 - 0/6 = 0.5;  sum 0.5 + 1 = 1.5
    // key 2: A 1 - 1/3;       B 0.5;                       sum 0.5 + (1 - 1/3)
    // key 3: A 0.5 - 1/6;     B 1;                         sum (0.5 - 1/6) + 1
    let a: &[i64] = &[1, 2];
    let b: &[i64] = &[3];
    let fused = fuse(&[a, b], &[], scored(Method::Sum, Norm::Borda));
    assert_same(fused.score(1), 0.0 + 0.5 + 1.0);
    assert_same(fused.score(2), 0.0 + 0.5 + (1.0 - 1.0 / 3.0));
    assert_same(fused.score(3), 0.0 + (0.5 - 1.0 / 6.0) + 1.0);
    assert_eq!(fused.keys(), [1, 3, 2]);
    // key 3's contribution from A has rank 0 (unranked) and the unranked share
    let c = fused.contributions(3);
    assert_eq!((c[0].0, c[0].1), (0, 0));
    assert_same(c[0].4, 0.5 - 1.0 / 6.0);
}

#[test]
fn norm_borda_counts_every_list_read_as_present() {
    // mnz over borda: every list read gives every key a value, |present| = 2 for all.
    // key 1: (0.5 + 1) * 2 = 3
    let a: &[i64] = &[1, 2];
    let b: &[i64] = &[3];
    let fused = fuse(&[a, b], &[], scored(Method::Mnz, Norm::Borda));
    assert_same(fused.score(1), (0.0 + 0.5 + 1.0) * 2.0);
    assert_same(fused.factor(3), 2.0);
}

#[test]
fn norm_dbsf_uses_the_sample_deviation_and_three_sigmas() {
    // [1, 2, 3]: Welford mean 1, 1 + (2-1)/2 = 1.5, 1.5 + (3-1.5)/3 = 2;
    // m2 = 0 + 1*(2-1.5) + 1.5*(3-2) = 2; sample sd sqrt(2/2) = 1; lo = 2-3 = -1, hi = 2+3 = 5
    // (1+1)/6, (2+1)/6, (3+1)/6
    assert_bits(
        &normalized(Norm::Dbsf, &[1.0, 2.0, 3.0]),
        &[
            (1.0 - -1.0) / (5.0 - -1.0),
            (2.0 - -1.0) / (5.0 - -1.0),
            (3.0 - -1.0) / (5.0 - -1.0),
        ],
    );
}

#[test]
fn norm_dbsf_of_one_item_or_sigma_zero_is_one_half() {
    assert_bits(&normalized(Norm::Dbsf, &[42.0]), &[0.5]);
    assert_bits(&normalized(Norm::Dbsf, &[4.0, 4.0, 4.0]), &[0.5, 0.5, 0.5]);
}

#[test]
fn norm_dbsf_is_not_clipped() {
    // ten 0s then 11: Welford mean stays 0, then 0 + (11-0)/11 = 1; m2 = 0 + 11*(11-1) = 110;
    // sample sd sqrt(110/10) = sqrt(11); lo = 1 - 3 sqrt(11), hi = 1 + 3 sqrt(11);
    // 11 -> (11 - lo)/(hi - lo) = (10 + 3 sqrt(11)) / (6 sqrt(11)) ~ 1.0025 > 1
    let mut scores = vec![0.0; 10];
    scores.push(11.0);
    let values = normalized(Norm::Dbsf, &scores);
    let sd = (110.0f64 / 10.0).sqrt();
    let (lo, hi) = (1.0 - 3.0 * sd, 1.0 + 3.0 * sd);
    assert_same(values[10], (11.0 - lo) / (hi - lo));
    assert!(values[10] > 1.0);
    assert_same(values[0], (0.0 - lo) / (hi - lo));
}

#[test]
fn lower_is_better_negates_before_normalising() {
    // distances [1, 2, 3] -> [-1, -2, -3]; min-max: (-1+3)/2 = 1, (-2+3)/2 = 0.5, 0
    let keys: &[i64] = &[1, 2, 3];
    let scores: &[f64] = &[1.0, 2.0, 3.0];
    let p = Fusion {
        lower_is_better: Some(vec![true]),
        ..scored(Method::Sum, Norm::MinMax)
    };
    let fused = fuse(&[keys], &[Some(scores)], p);
    assert_bits(
        &[fused.score(1), fused.score(2), fused.score(3)],
        &[1.0, 0.5, 0.0],
    );
    // the trace keeps the raw score as given
    assert_same(fused.contributions(3)[0].3, 3.0);
}

#[test]
fn a_list_is_normalised_over_its_counted_items() {
    // A = [1, 2, 1] scores [5, 3, 1], min-max.
    // duplicates "first": counted 5 and 3 (1's repeat is not): key 1: (5-3)/(5-3) = 1, key 2: 0
    // duplicates "sum": counted 5, 3 and 1: key 1: (5-1)/4 + (1-1)/4 = 0 + 1; key 2: (3-1)/4
    let a: &[i64] = &[1, 2, 1];
    let scores: &[f64] = &[5.0, 3.0, 1.0];
    let first = fuse(&[a], &[Some(scores)], scored(Method::Sum, Norm::MinMax));
    assert_bits(&[first.score(1), first.score(2)], &[1.0, 0.0]);
    let sum = fuse(
        &[a],
        &[Some(scores)],
        Fusion {
            duplicates: Duplicates::Sum,
            ..scored(Method::Sum, Norm::MinMax)
        },
    );
    assert_bits(&[sum.score(1), sum.score(2)], &[0.0 + 0.0 + 1.0, 0.5]);
    // both occurrences traced, each with its own rank, raw and normalised value
    let c = sum.contributions(1);
    assert_eq!((c[0].1, c[1].1), (1, 3));
    assert_bits(&[c[0].3, c[0].4, c[1].3, c[1].4], &[5.0, 1.0, 1.0, 0.0]);
    // mnz counts lists, not occurrences: factor 1
    let mnz = fuse(
        &[a],
        &[Some(scores)],
        Fusion {
            duplicates: Duplicates::Sum,
            ..scored(Method::Mnz, Norm::MinMax)
        },
    );
    assert_same(mnz.factor(1), 1.0);
}

// --- score-based combinations -----------------------------------------------------------------
// A = [1, 2, 3] with scores [5, 3, 1], B = [2, 4] with scores [8, 2]; norm "none".

const A: &[i64] = &[1, 2, 3];
const A_SCORES: &[f64] = &[5.0, 3.0, 1.0];
const B: &[i64] = &[2, 4];
const B_SCORES: &[f64] = &[8.0, 2.0];

fn two_lists(p: Fusion) -> Fused {
    fuse(&[A, B], &[Some(A_SCORES), Some(B_SCORES)], p)
}

fn weighted(m: Method, weights: &[f64]) -> Fusion {
    Fusion {
        weights: Some(weights.to_vec()),
        ..method(m)
    }
}

#[test]
fn sum() {
    // key 2: 3 + 8 = 11; key 1: 5; key 4: 2; key 3: 1
    let fused = two_lists(method(Method::Sum));
    assert_eq!(fused.keys(), [2, 1, 4, 3]);
    assert_same(fused.score(2), 0.0 + 3.0 + 8.0);
    assert_same(fused.score(1), 5.0);
    let c = fused.contributions(2);
    // (list, rank, value, raw, normalized)
    assert_eq!((c[0].0, c[0].1, c[1].0, c[1].1), (0, 2, 1, 1));
    assert_bits(&[c[0].2, c[0].3, c[0].4], &[3.0, 3.0, 3.0]);
    assert!(fused.factor(2).is_nan() && fused.divisor(2).is_nan() && fused.boost(2).is_nan());
}

#[test]
fn wsum_with_positive_zero_and_negative_weights() {
    // weights [0.5, 2]: key 2: 0.5*3 + 2*8 = 1.5 + 16 = 17.5; key 4: 2*2 = 4; key 1: 2.5; key 3: 0.5
    let fused = two_lists(weighted(Method::Wsum, &[0.5, 2.0]));
    assert_eq!(fused.keys(), [2, 4, 1, 3]);
    assert_same(fused.score(2), 0.0 + 0.5 * 3.0 + 2.0 * 8.0);
    assert_same(fused.score(4), 2.0 * 2.0);
    let c = fused.contributions(2);
    assert_bits(&[c[0].2, c[0].4, c[1].2, c[1].4], &[1.5, 3.0, 16.0, 8.0]);
    // weights [-1, 1]: key 2: -3 + 8 = 5; key 4: 2; key 3: -1; key 1: -5
    let fused = two_lists(weighted(Method::Wsum, &[-1.0, 1.0]));
    assert_eq!(fused.keys(), [2, 4, 3, 1]);
    assert_same(fused.score(2), 0.0 + -3.0 + 8.0);
    assert_same(fused.score(1), -5.0);
    // weight 0: list A is not read at all; keys 1 and 3 are gone
    let fused = two_lists(weighted(Method::Wsum, &[0.0, 1.0]));
    assert_eq!(fused.keys(), [2, 4]);
    assert_same(fused.score(2), 8.0);
}

#[test]
fn mnz_multiplies_by_the_number_of_lists() {
    // key 2: (3 + 8) * 2 = 22; key 1: 5 * 1
    let fused = two_lists(method(Method::Mnz));
    assert_same(fused.score(2), (0.0 + 3.0 + 8.0) * 2.0);
    assert_same(fused.score(1), 5.0 * 1.0);
    assert_same(fused.factor(2), 2.0);
    assert_same(fused.factor(1), 1.0);
}

#[test]
fn anz_divides_by_the_number_of_lists() {
    // key 2: (3 + 8) / 2 = 5.5
    let fused = two_lists(method(Method::Anz));
    assert_same(fused.score(2), (0.0 + 3.0 + 8.0) / 2.0);
    assert_same(fused.divisor(2), 2.0);
    assert_same(fused.score(4), 2.0 / 1.0);
}

#[test]
fn gmnz_multiplies_by_the_number_of_lists_to_the_gamma() {
    let gmnz = |gamma: f64| Fusion {
        gamma: Some(gamma),
        ..method(Method::Gmnz)
    };
    // gamma 2: 11 * 2^2 = 44; gamma 0: 11 * 1; gamma -1: 11 * 0.5 = 5.5
    assert_same(two_lists(gmnz(2.0)).score(2), 11.0 * 4.0);
    assert_same(two_lists(gmnz(0.0)).score(2), 11.0 * 1.0);
    assert_same(two_lists(gmnz(-1.0)).score(2), 11.0 * 0.5);
    assert_same(two_lists(gmnz(2.0)).factor(2), 4.0);
    // one list: 1^gamma = 1
    assert_same(two_lists(gmnz(2.0)).score(1), 5.0);
}

#[test]
fn max_min_and_median_over_the_lists_holding_the_key() {
    // key 2: values [3, 8]
    assert_same(two_lists(method(Method::Max)).score(2), 8.0);
    assert_same(two_lists(method(Method::Min)).score(2), 3.0);
    assert_same(two_lists(method(Method::Med)).score(2), (3.0 + 8.0) / 2.0);
    // three lists, key 2: values [3, 8, 4] -> median 4; key 1: [5] -> 5
    let c: &[i64] = &[2];
    let c_scores: &[f64] = &[4.0];
    let fused = fuse(
        &[A, B, c],
        &[Some(A_SCORES), Some(B_SCORES), Some(c_scores)],
        method(Method::Med),
    );
    assert_same(fused.score(2), 4.0);
    assert_same(fused.score(1), 5.0);
}

#[test]
fn wmnz_multiplies_by_the_weights_of_the_lists_holding_the_key() {
    // weights [0.5, 2]: key 2: (3 + 8) * (0.5 + 2) = 27.5; key 1: 5 * 0.5; key 4: 2 * 2
    let fused = two_lists(weighted(Method::Wmnz, &[0.5, 2.0]));
    assert_same(fused.score(2), (0.0 + 3.0 + 8.0) * (0.0 + 0.5 + 2.0));
    assert_same(fused.factor(2), 2.5);
    assert_same(fused.score(1), 5.0 * 0.5);
    assert_same(fused.score(4), 2.0 * 2.0);
}

#[test]
fn mixed_multiplies_the_weighted_sum_by_the_root_of_the_number_of_lists() {
    // weights [0.5, 2]: key 2: (0.5*3 + 2*8) * sqrt(2) = 17.5 * sqrt(2); key 1: 2.5 * sqrt(1)
    let fused = two_lists(weighted(Method::Mixed, &[0.5, 2.0]));
    assert_same(fused.score(2), (0.0 + 1.5 + 16.0) * 2.0f64.sqrt());
    assert_same(fused.factor(2), 2.0f64.sqrt());
    assert_same(fused.score(1), 2.5 * 1.0);
}

#[test]
fn dbsf_normalises_each_list_then_adds() {
    // A = [1, 2, 3] scores [1, 2, 3]: (s+1)/6 (see norm_dbsf...); C = [3, 4] scores [10, 10]:
    // sigma 0 -> 0.5 each. key 3: 0.5 + 4/6 (ascending); key 4: 0.5
    let a_scores: &[f64] = &[1.0, 2.0, 3.0];
    let c: &[i64] = &[3, 4];
    let c_scores: &[f64] = &[10.0, 10.0];
    let fused = fuse(
        &[A, c],
        &[Some(a_scores), Some(c_scores)],
        method(Method::Dbsf),
    );
    assert_same(fused.score(3), 0.0 + 0.5 + (3.0 - -1.0) / (5.0 - -1.0));
    assert_same(fused.score(4), 0.5);
    assert_same(fused.score(1), (1.0 - -1.0) / (5.0 - -1.0));
    assert_eq!(fused.keys(), [3, 2, 4, 1]);
}

#[test]
fn relative_score_is_min_max_then_a_weighted_sum() {
    // A scores [5, 3, 1] -> 1, 0.5, 0; C = [2, 4] scores [7, 7] all equal -> 1, 1.
    // weights [1, 0.5]: key 2: 1*0.5 + 0.5*1 = 1; key 1: 1; key 4: 0.5; key 3: 0.
    // keys 1 and 2 tie at 1.0: first appearance (A rank 1 before C rank 1).
    let c: &[i64] = &[2, 4];
    let c_scores: &[f64] = &[7.0, 7.0];
    let fused = fuse(
        &[A, c],
        &[Some(A_SCORES), Some(c_scores)],
        weighted(Method::RelativeScore, &[1.0, 0.5]),
    );
    assert_eq!(fused.keys(), [1, 2, 4, 3]);
    assert_same(fused.score(2), 0.0 + 1.0 * 0.5 + 0.5 * 1.0);
    assert_same(fused.score(1), 1.0 * 1.0);
    assert_same(fused.score(4), 0.5 * 1.0);
    assert_same(fused.score(3), 1.0 * 0.0);
}

#[test]
fn arithmetic_mean_counts_a_missing_key_as_zero() {
    // min-max: A [5, 3, 1] -> 1, 0.5, 0; B [8, 2] -> 1, 0.
    // key 2: (0.5 + 1) / 2 = 0.75; key 1: (1 + 0 [missing from B]) / 2 = 0.5; key 3, 4: 0
    let p = scored(Method::ArithmeticMean, Norm::MinMax);
    let fused = two_lists(p.clone());
    assert_same(fused.score(2), (0.0 + 0.5 + 1.0) / (0.0 + 1.0 + 1.0));
    assert_same(fused.score(1), (0.0 + 0.0 + 1.0) / 2.0);
    assert_same(fused.score(4), 0.0);
    assert_same(fused.divisor(1), 2.0);
    // key 1's contribution from B: rank 0, value 0, no raw score
    let c = fused.contributions(1);
    assert_eq!((c[1].0, c[1].1), (1, 0));
    assert_bits(&[c[1].2, c[1].4], &[0.0, 0.0]);
    assert!(c[1].3.is_nan());
    // weights [1, 3]: key 2: (1*0.5 + 3*1) / (1 + 3) = 3.5/4; key 1: (1*1 + 3*0) / 4
    let fused = two_lists(Fusion {
        weights: Some(vec![1.0, 3.0]),
        ..p
    });
    assert_same(fused.score(2), (0.0 + 0.5 + 3.0) / (0.0 + 1.0 + 3.0));
    assert_same(fused.score(1), (0.0 + 0.0 + 1.0) / 4.0);
}

#[test]
fn arithmetic_mean_skips_negative_values_and_keeps_zeros() {
    // norm none. A = [1, 2] scores [0, 6]; B = [1] scores [-4].
    // key 1: A 0 (kept), B -4 (skipped): 0 / 1 = 0; key 2: A 6, B missing 0: (6 + 0) / 2 = 3
    let a: &[i64] = &[1, 2];
    let a_scores: &[f64] = &[0.0, 6.0];
    let b: &[i64] = &[1];
    let b_scores: &[f64] = &[-4.0];
    let fused = fuse(
        &[a, b],
        &[Some(a_scores), Some(b_scores)],
        method(Method::ArithmeticMean),
    );
    assert_same(fused.score(1), 0.0 / 1.0);
    assert_same(fused.divisor(1), 1.0);
    assert_same(fused.score(2), (0.0 + 0.0 + 6.0) / 2.0);
    // every value skipped: the divisor is 0 and the score 0
    let fused = fuse(&[b], &[Some(b_scores)], method(Method::ArithmeticMean));
    assert_same(fused.score(1), 0.0);
    assert_same(fused.divisor(1), 0.0);
}

#[test]
fn geometric_mean_skips_zeros() {
    // norm none. A = [1, 2] scores [4, 0]; B = [1, 2] scores [1, 0].
    // key 1: exp((1*ln 4 + 1*ln 1) / (1 + 1)), ln 1 = 0 first; key 2: both 0, skipped: 0
    let a: &[i64] = &[1, 2];
    let a_scores: &[f64] = &[4.0, 0.0];
    let b_scores: &[f64] = &[1.0, 0.0];
    let fused = fuse(
        &[a, a],
        &[Some(a_scores), Some(b_scores)],
        method(Method::GeometricMean),
    );
    assert_same(fused.score(1), ((0.0 + 0.0 + 4.0f64.ln()) / 2.0).exp());
    assert_same(fused.divisor(1), 2.0);
    assert_same(fused.score(2), 0.0);
    // a zero in one list: only the other counts, exp(ln 2 / 1)
    let c_scores: &[f64] = &[0.0, 2.0];
    let fused = fuse(
        &[a, a],
        &[Some(a_scores), Some(c_scores)],
        weighted(Method::GeometricMean, &[3.0, 1.0]),
    );
    // key 2: A 0 (skipped), C 2 with weight 1: exp(1*ln 2 / 1)
    assert_same(fused.score(2), ((0.0 + 0.0 + 2.0f64.ln()) / 1.0).exp());
    // key 1: A 4 with weight 3, C 0 skipped: exp(3 ln 4 / 3)
    assert_same(
        fused.score(1),
        ((0.0 + 0.0 + 3.0 * 4.0f64.ln()) / 3.0).exp(),
    );
}

#[test]
fn harmonic_mean_skips_zeros() {
    // min-max: A -> 1, 0.5, 0; B -> 1, 0.
    // key 2: (1 + 1) / (1/0.5 + 1/1) = 2 / 3; key 1: 1 / (1/1) = 1; keys 3 and 4: 0 skipped, 0
    let fused = two_lists(scored(Method::HarmonicMean, Norm::MinMax));
    assert_same(
        fused.score(2),
        (0.0 + 1.0 + 1.0) / (0.0 + 1.0 / 1.0 + 1.0 / 0.5),
    );
    assert_same(fused.divisor(2), 3.0);
    assert_same(fused.score(1), 1.0 / (1.0 / 1.0));
    assert_same(fused.score(3), 0.0);
    assert_same(fused.score(4), 0.0);
}

#[test]
fn a_fused_score_that_overflows_is_an_error() {
    // 1e308 + 1e308 = inf
    let keys: &[i64] = &[7];
    let scores: &[f64] = &[1e308];
    let e = fuse_with(
        &[keys, keys],
        None,
        &[Some(scores), Some(scores)],
        method(Method::Sum),
        None,
    )
    .err()
    .expect("an overflow is an error");
    assert!(matches!(
        e.problem,
        Problem::NonFiniteScore {
            stage: Stage::Fused,
            ..
        }
    ));
}

// --- rank-based combinations ------------------------------------------------------------------
// A = [1, 2, 3], B = [2, 4]: key 2 at rank 2 in A and rank 1 in B.

#[test]
fn rrf() {
    // k 60: key 2: 1/(60+1) + 1/(60+2), ascending: 1/62 first
    let fused = fuse(&[A, B], &[], method(Method::Rrf));
    assert_same(fused.score(2), 0.0 + 1.0 / 62.0 + 1.0 / 61.0);
    assert_same(fused.score(1), 1.0 / 61.0);
}

#[test]
fn isr() {
    // key 2: (1/2^2 + 1/1^2) * 2 = 2.5; key 1: 1 * 1; key 3: 1/9 * 1; key 4: 1/4 * 1
    let fused = fuse(&[A, B], &[], method(Method::Isr));
    assert_same(fused.score(2), (0.0 + 1.0 / 4.0 + 1.0) * 2.0);
    assert_same(fused.factor(2), 2.0);
    assert_same(fused.score(1), 1.0);
    assert_same(fused.score(3), 1.0 / 9.0);
    assert_eq!(fused.keys(), [2, 1, 4, 3]);
}

#[test]
fn log_isr() {
    // key 2: 1.25 * ln 2; key 1: 1 * ln 1 = 0
    let fused = fuse(&[A, B], &[], method(Method::LogIsr));
    assert_same(fused.score(2), (0.0 + 0.25 + 1.0) * 2.0f64.ln());
    assert_same(fused.score(1), 0.0);
}

#[test]
fn logn_isr() {
    // default sigma 0.01: key 2: 1.25 * ln(2 + 0.01); key 1: 1 * ln(1 + 0.01)
    let fused = fuse(&[A, B], &[], method(Method::LognIsr));
    assert_same(fused.score(2), 1.25 * (2.0f64 + 0.01).ln());
    assert_same(fused.score(1), 1.0 * (1.0f64 + 0.01).ln());
    // sigma 0: log_isr; sigma 1: 1.25 * ln 3
    let with = |sigma: f64| Fusion {
        sigma: Some(sigma),
        ..method(Method::LognIsr)
    };
    assert_same(fuse(&[A, B], &[], with(0.0)).score(2), 1.25 * 2.0f64.ln());
    assert_same(fuse(&[A, B], &[], with(1.0)).score(2), 1.25 * 3.0f64.ln());
}

#[test]
fn rbc() {
    // phi 0.5: w (1-phi) phi^(r-1): rank 1 -> 0.5, rank 2 -> 0.25, rank 3 -> 0.125
    let rbc = |phi: f64, weights: Option<Vec<f64>>| Fusion {
        phi: Some(phi),
        weights,
        ..method(Method::Rbc)
    };
    let fused = fuse(&[A, B], &[], rbc(0.5, None));
    assert_same(fused.score(2), 0.0 + 0.25 + 0.5);
    assert_same(fused.score(3), 0.125);
    // weights [2, 1]: key 2: 2*0.25 + 1*0.5 = 1
    let fused = fuse(&[A, B], &[], rbc(0.5, Some(vec![2.0, 1.0])));
    assert_same(fused.score(2), 0.0 + 2.0 * 0.25 + 1.0 * 0.5);
    // phi 0: only rank 1 counts (0^0 = 1): key 2: 0 + 1
    let fused = fuse(&[A, B], &[], rbc(0.0, None));
    assert_same(fused.score(2), 0.0 + 0.0 + 1.0);
    assert_same(fused.score(3), 0.0);
}

#[test]
fn bordafuse_gives_unranked_keys_the_mean_of_the_points_left() {
    // |C| = 4; points |C| - r + 1; unranked in a list of n: (|C| - n + 1) / 2
    // A (n 3): 1 -> 4, 2 -> 3, 3 -> 2, unranked (4-3+1)/2 = 1
    // B (n 2): 2 -> 4, 4 -> 3, unranked (4-2+1)/2 = 1.5
    // key 1: 4 + 1.5 = 5.5; key 2: 3 + 4 = 7; key 3: 2 + 1.5 = 3.5; key 4: 1 + 3 = 4
    let fused = fuse(&[A, B], &[], method(Method::Bordafuse));
    assert_eq!(fused.keys(), [2, 1, 4, 3]);
    assert_same(fused.score(1), 0.0 + 1.5 + 4.0);
    assert_same(fused.score(2), 0.0 + 3.0 + 4.0);
    assert_same(fused.score(3), 0.0 + 1.5 + 2.0);
    assert_same(fused.score(4), 0.0 + 1.0 + 3.0);
    let c = fused.contributions(4);
    assert_eq!((c[0].1, c[1].1), (0, 2));
    assert_bits(&[c[0].4, c[1].4], &[1.0, 3.0]);
    // weights [2, 1]: key 1: 2*4 + 1*1.5 = 9.5; key 2: 2*3 + 4 = 10; key 3: 4 + 1.5; key 4: 2 + 3
    let fused = fuse(&[A, B], &[], weighted(Method::Bordafuse, &[2.0, 1.0]));
    assert_eq!(fused.keys(), [2, 1, 3, 4]);
    assert_same(fused.score(1), 0.0 + 1.5 + 8.0);
    assert_same(fused.score(4), 0.0 + 2.0 + 3.0);
}

#[test]
fn condorcet_counts_pairwise_wins() {
    // A = [1, 2, 3], B = [2, 4]; a list holding neither key abstains.
    // 2 v 1: A says 1, B says 2 (1 missing): 1 = 1, no win. 2 v 3: both say 2. 2 v 4: both 2.
    //   key 2: 2 wins -> 3
    // 1 v 3: A says 1, B abstains: win. 1 v 4: A says 1, B says 4: tie.  key 1: 1 win -> 2
    // 3 v 4: A says 3, B says 4: tie. keys 3 and 4: 0 wins -> 1
    // 3 and 4 tie: first appearance, 4 (B rank 2) before 3 (A rank 3)
    let fused = fuse(&[A, B], &[], method(Method::Condorcet));
    assert_eq!(fused.keys(), [2, 1, 4, 3]);
    assert_bits(
        &fused.hits.iter().map(|&(_, s)| s).collect::<Vec<_>>(),
        &[3.0, 2.0, 1.0, 1.0],
    );
    // weights [2, 1]: 1 v 2: A (2) says 1 > B (1): 1 wins; 1 v 4: 2 > 1: 1 wins; 1 v 3: wins
    //   -> key 1: 4; key 2: beats 3 and 4 -> 3; key 3: beats 4 (2 > 1) -> 2; key 4: 1
    let fused = fuse(&[A, B], &[], weighted(Method::Condorcet, &[2.0, 1.0]));
    assert_eq!(fused.keys(), [1, 2, 3, 4]);
    assert_bits(
        &fused.hits.iter().map(|&(_, s)| s).collect::<Vec<_>>(),
        &[4.0, 3.0, 2.0, 1.0],
    );
}

#[test]
fn condorcet_ties_score_alike() {
    // A = [1, 2], B = [2, 1]: 1 v 2 is 1 against 1, no win either way: both 1.0, first
    // appearance order (1 at A rank 1 before 2 at B rank 1)
    let a: &[i64] = &[1, 2];
    let b: &[i64] = &[2, 1];
    let fused = fuse(&[a, b], &[], method(Method::Condorcet));
    assert_eq!(fused.hits, [(1, 1.0), (2, 1.0)]);
    // the trace: each list's vote is its weight
    let c = fused.contributions(1);
    assert_bits(&[c[0].2, c[1].2], &[1.0, 1.0]);
}

// --- the boost --------------------------------------------------------------------------------

#[test]
fn boost_adds_the_weighted_min_max_of_the_fused_keys_values() {
    // sum, norm none over A: 1 -> 5, 2 -> 3, 3 -> 1. boost {1: 10, 3: 20, 99: 5} weight 0.5;
    // 99 is not fused: min 10, max 20. key 1: 5 + 0.5*(10-10)/(20-10) = 5;
    // key 3: 1 + 0.5*(20-10)/(20-10) = 1.5; key 2 has no value: 3, no boost
    let p = Fusion {
        boost_weight: Some(0.5),
        ..method(Method::Sum)
    };
    let boost: &[(i64, f64)] = &[(1, 10.0), (3, 20.0), (99, 5.0)];
    let fused =
        fuse_with(&[A], None, &[Some(A_SCORES)], p, Some(boost)).unwrap_or_else(|e| panic!("{e}"));
    assert_same(fused.score(1), 5.0 + 0.5 * ((10.0 - 10.0) / (20.0 - 10.0)));
    assert_same(fused.score(3), 1.0 + 0.5 * ((20.0 - 10.0) / (20.0 - 10.0)));
    assert_same(fused.score(2), 3.0);
    assert_same(fused.boost(3), 0.5);
    assert_same(fused.boost(1), 0.0);
    assert!(fused.boost(2).is_nan());
    assert_eq!(fused.keys(), [1, 2, 3]);
}

#[test]
fn boost_with_a_span_of_zero_adds_nothing() {
    // boost {1: 7, 2: 7}: max == min, each adds 0.0; one boosted key: a span of 0 too
    let p = Fusion {
        boost_weight: Some(2.0),
        ..method(Method::Sum)
    };
    for boost in [&[(1, 7.0), (2, 7.0)][..], &[(3, -1.0)][..]] {
        let fused = fuse_with(&[A], None, &[Some(A_SCORES)], p.clone(), Some(boost))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_bits(
            &[fused.score(1), fused.score(2), fused.score(3)],
            &[5.0 + 0.0, 3.0 + 0.0, 1.0 + 0.0],
        );
        for &(key, _) in boost {
            assert_same(fused.boost(key), 0.0);
        }
    }
}

#[test]
fn a_negative_boost_weight_demotes() {
    // weight -4: key 3: 1 - 4*(20-10)/(20-10) = -3; key 1: 5 - 0 = 5
    let p = Fusion {
        boost_weight: Some(-4.0),
        ..method(Method::Sum)
    };
    let boost: &[(i64, f64)] = &[(1, 10.0), (3, 20.0)];
    let fused =
        fuse_with(&[A], None, &[Some(A_SCORES)], p, Some(boost)).unwrap_or_else(|e| panic!("{e}"));
    assert_same(fused.score(3), 1.0 + -4.0 * 1.0);
    assert_eq!(fused.keys(), [1, 2, 3]);
}

// --- arguments --------------------------------------------------------------------------------

#[test]
fn a_parameter_a_method_does_not_use_is_an_error_naming_both() {
    let cases: Vec<(Fusion, &str, &str)> = vec![
        (
            weighted(Method::Sum, &[1.0]),
            "weights",
            "weights is not used by method 'sum'",
        ),
        (
            scored(Method::Rrf, Norm::MinMax),
            "norm",
            "norm is not used by method 'rrf'",
        ),
        (
            scored(Method::Dbsf, Norm::MinMax),
            "norm",
            "norm is not used by method 'dbsf': it normalises with 'dbsf'",
        ),
        (
            Fusion {
                phi: Some(0.5),
                ..method(Method::Sum)
            },
            "phi",
            "phi is not used by method 'sum'",
        ),
        (
            Fusion {
                gamma: Some(2.0),
                ..method(Method::Mnz)
            },
            "gamma",
            "gamma is not used by method 'mnz'",
        ),
        (
            Fusion {
                sigma: Some(0.5),
                ..method(Method::Isr)
            },
            "sigma",
            "sigma is not used by method 'isr'",
        ),
        (
            Fusion {
                normalize: true,
                ..method(Method::Wsum)
            },
            "normalize",
            "normalize is not used by method 'wsum'",
        ),
    ];
    for (p, argument, message) in cases {
        let e = p
            .check_plan(1)
            .expect_err("an unused parameter is an error");
        assert_eq!(invalid_argument(&e), argument);
        assert_eq!(e.to_string(), message);
    }
    // lower_is_better with a norm that reads no scores, or a rank-based method
    for p in [
        scored(Method::Sum, Norm::Rank),
        scored(Method::Wsum, Norm::Borda),
        method(Method::Rrf),
    ] {
        let p = Fusion {
            lower_is_better: Some(vec![true]),
            ..p
        };
        let e = p.check_plan(1).expect_err("lower_is_better is not used");
        assert_eq!(invalid_argument(&e), "lower_is_better");
        assert!(e.to_string().starts_with("lower_is_better is not used by "));
    }
}

#[test]
fn method_parameters_out_of_range_or_missing_are_errors() {
    let cases: Vec<(Fusion, &str, &str)> = vec![
        (method(Method::Rbc), "phi", "method 'rbc' needs phi"),
        (method(Method::Gmnz), "gamma", "method 'gmnz' needs gamma"),
        (
            Fusion {
                phi: Some(1.0),
                ..method(Method::Rbc)
            },
            "phi",
            "phi must satisfy 0 <= phi < 1, got 1.0",
        ),
        (
            Fusion {
                phi: Some(-0.1),
                ..method(Method::Rbc)
            },
            "phi",
            "phi must satisfy 0 <= phi < 1, got -0.1",
        ),
        (
            Fusion {
                sigma: Some(1.5),
                ..method(Method::LognIsr)
            },
            "sigma",
            "sigma must satisfy 0 <= sigma <= 1, got 1.5",
        ),
        (
            Fusion {
                gamma: Some(f64::NAN),
                ..method(Method::Gmnz)
            },
            "gamma",
            "gamma must be finite, got nan",
        ),
        (
            weighted(Method::HarmonicMean, &[-1.0]),
            "weights",
            "weights[0] must be >= 0 for method 'harmonic_mean', got -1.0",
        ),
    ];
    for (p, argument, message) in cases {
        let e = p.check_plan(1).expect_err("a bad parameter is an error");
        assert_eq!(invalid_argument(&e), argument);
        assert_eq!(e.to_string(), message);
    }
}

#[test]
fn every_method_and_norm_has_its_name() {
    for name in Method::names() {
        let m = Method::from_name(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(m.name(), name);
    }
    for name in Norm::names() {
        let n = Norm::from_name(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(n.name(), name);
    }
    assert_eq!(Method::from_name("borda"), None);
    assert_eq!(Norm::from_name("minmax"), None);
    // NAN is what the trace holds where nothing applies
    assert!(NAN.is_nan());
}

/// Fuses `lists` (holes: -1) with `scores` and `plan`, traced or not: the page as (key, score
/// bits), or the error's message.
fn page_bits(
    lists: &[&[i64]],
    scores: &[Option<&[f64]>],
    plan: &Plan,
    trace: bool,
) -> std::result::Result<Vec<(i64, u64)>, String> {
    let mut table = IdTable::default();
    let mut ws = Workspace::new(trace);
    ws.fuse(&mut Rows::new(lists, Some(-1), &mut table), scores, plan)
        .map_err(|e| e.to_string())?;
    ws.rank(plan);
    Ok(ws
        .page()
        .iter()
        .map(|&id| (ws.key(id), ws.score(id).to_bits()))
        .collect())
}

#[test]
fn the_untraced_layouts_score_as_the_traced_one() {
    // Untraced, at most 8 lists and no summed duplicates, the kernel scores from the dense
    // layout's slots (terms made before the scan, or positions turned into terms after it;
    // two lists read two slots with no branch); the general layout's rank terms from the
    // grouped occurrences; traced, everything from every key's contributions. The same bits,
    // and the same errors, for every method and norm.
    let mut rng = crate::testing::Rng(0x9e37_79b9_7f4a_7c15);
    // (A subnormal max divides others to infinity; scores near the float limit overflow the
    // norms' statistics.)
    let values: [f64; 14] = [
        -2.5, -1.0, -0.0, 0.0, 0.25, 1.0, 1.0, 3.0, 7.25, 5e-324, 1e300, -1e300, 1.7e308, -1.7e308,
    ];
    let (mut compared, mut pairs) = (0, 0);
    for _ in 0..300 {
        // (9 lists: the general layout, as summed duplicates are.)
        let n_lists = rng.pick(&[1, 2, 2, 2, 3, 9]);
        let ids: Vec<Vec<i64>> = (0..n_lists)
            .map(|_| {
                let len = rng.below(10) as usize;
                (0..len).map(|_| rng.below(9) as i64 - 1).collect()
            })
            .collect();
        let raw: Vec<Vec<f64>> = ids
            .iter()
            .map(|l| {
                let big = rng.below(4) == 0;
                l.iter()
                    .map(|_| {
                        let v = rng.pick(&values);
                        if big || v.abs() < 1e300 {
                            v
                        } else {
                            2.0
                        }
                    })
                    .collect()
            })
            .collect();
        let lists: Vec<&[i64]> = ids.iter().map(|l| l.as_slice()).collect();
        let scores: Vec<Option<&[f64]>> = raw.iter().map(|s| Some(s.as_slice())).collect();
        let weights = (rng.below(2) == 0).then(|| {
            (0..n_lists)
                .map(|_| rng.pick(&[1.0, 0.5, 2.0, 0.0, -1.0]))
                .collect::<Vec<f64>>()
        });
        let duplicates = rng.pick(&[
            Duplicates::First,
            Duplicates::First,
            Duplicates::Error,
            Duplicates::Sum,
        ]);
        let norms = std::iter::once(None).chain(Norm::names().map(Norm::from_name));
        for norm in norms.collect::<Vec<_>>() {
            for name in Method::names() {
                let Some(method) = Method::from_name(name) else {
                    panic!("{name}")
                };
                let params = Fusion {
                    method,
                    norm,
                    weights: weights.clone(),
                    duplicates,
                    phi: (method == Method::Rbc).then_some(0.8),
                    gamma: (method == Method::Gmnz).then_some(1.5),
                    sigma: (method == Method::LognIsr).then_some(0.01),
                    ..Fusion::default()
                };
                let Ok(plan) = params.check_plan(n_lists) else {
                    continue; // a method and norm, or weights, it does not take
                };
                let traced = page_bits(&lists, &scores, &plan, true);
                let untraced = page_bits(&lists, &scores, &plan, false);
                assert_eq!(
                    untraced, traced,
                    "{name} {norm:?} {ids:?} {raw:?} {weights:?}"
                );
                compared += 1;
                pairs += usize::from(n_lists == 2 && traced.is_ok());
            }
        }
    }
    assert!(compared > 5_000 && pairs > 1_000, "{compared} {pairs}");
}

#[test]
fn a_plans_table_of_factors_is_the_formula_of_each_count() {
    // Every Times method's factor for 0 ..= n lists (and past them) from the plan's table
    // equals Factor::of_count, bit for bit; a factor the plan does not tabulate is computed.
    let mut tested = 0;
    for m in METHODS.iter().map(|info| info.method) {
        let Combine::Times(f) = m.combine() else {
            continue;
        };
        let fusion = Fusion {
            gamma: (m == Method::Gmnz).then_some(0.7),
            sigma: (m == Method::LognIsr).then_some(0.3),
            ..method(m)
        };
        let plan = fusion.plan(5).expect("a valid fusion");
        tested += 1;
        for n in 0..9 {
            let want = f.of_count(n, plan.fusion.sigma(), plan.fusion.gamma.unwrap_or(1.0));
            let got = plan.present_factor(f, n);
            assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{m:?} {n}");
        }
        let other = Factor::SqrtPresent;
        assert_eq!(
            plan.present_factor(other, 3).map(f64::to_bits),
            Some(3.0f64.sqrt().to_bits())
        );
    }
    assert_eq!(tested, 7); // isr, log_isr, logn_isr, mnz, gmnz, wmnz, mixed
}

#[test]
fn a_kept_plan_serves_only_its_number_of_lists() {
    // plan_kept keeps the first plan it makes and lends it to calls of that many lists; any
    // other number of lists gets a plan of its own, equal to plan(n); errors are plan(n)'s.
    let fusion = Fusion {
        normalize: true,
        ..method(Method::Rrf)
    };
    let kept = std::sync::OnceLock::new();
    for n in [3, 3, 2, 5, 3, 1] {
        let got = fusion.plan_kept(n, &kept).expect("a valid plan");
        assert_eq!(*got, fusion.plan(n).expect("a valid plan"), "{n}");
        let lent = matches!(got, std::borrow::Cow::Borrowed(_));
        assert_eq!(lent, n == 3, "{n}");
    }
    let weighted = Fusion {
        weights: Some(vec![1.0, 2.0]),
        ..method(Method::Rrf)
    };
    let kept = std::sync::OnceLock::new();
    let refused = weighted.plan_kept(3, &kept).map(|_| ()).unwrap_err();
    assert_eq!(refused, weighted.plan(3).map(|_| ()).unwrap_err());
    assert!(kept.get().is_none());
    assert!(weighted.plan_kept(2, &kept).is_ok() && kept.get().is_some());
}
