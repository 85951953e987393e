//! Many settings of one linear fusion (weighted sum, RRF) over the same queries, for the grid
//! search of `rankfusion.optimize`.
//!
//! The runs are fused once with every list read and traced ([`crate::batch`] with weights 1):
//! per hit and per list, the hit's rank (0 where the list does not hold it) and its normalised
//! value. A setting (one weight per list, and RRF's k) then scores a hit exactly as the engine
//! would: its contributions, `w * v` (wsum) or `w / (k + rank)` (RRF), over the lists of
//! non-zero weight that hold it, added as the canonical sum; a hit that no such list holds is
//! not a hit. Normalisations that depend only on the list (every norm but `borda`) and one
//! counted occurrence per key and list (`duplicates="first"`) are what make this exact; the
//! caller checks both.
//!
//! What a setting keeps of each row is what an evaluation of the top `cutoff` documents reads:
//! the hits whose score, as a C float (trec_eval holds scores as floats), is at least the
//! `cutoff`-th largest score's; with a `limit`, only the first `limit` hits in the engine's order
//! (score descending, ties by first appearance: best rank, then list) are candidates.

use std::cmp::Ordering;

use crate::fusion::canonical_sum;
use crate::fusion::params::contribution;

/// A traced fusion of `rows` queries: per row `counts[r]` hits; per hit j and list l,
/// `ranks[(r * width + j) * lists + l]` (1-based, 0: absent) and `values[...]` (the normalised
/// value; read for the weighted sum only).
#[derive(Clone, Copy, Debug)]
pub struct Traced<'a> {
    pub rows: usize,
    pub width: usize,
    pub lists: usize,
    pub counts: &'a [i64],
    pub ranks: &'a [i32],
    pub values: &'a [f64],
}

impl Traced<'_> {
    /// Whether the slices have the sizes the shape says.
    pub fn is_consistent(&self) -> bool {
        let cells = self
            .rows
            .checked_mul(self.width)
            .and_then(|c| c.checked_mul(self.lists));
        self.counts.len() == self.rows
            && cells.is_some_and(|c| c == self.ranks.len() && c == self.values.len())
            && self
                .counts
                .iter()
                .all(|&n| n >= 0 && (n as u64) <= self.width as u64)
    }
}

/// How a setting scores a hit's occurrence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Combine {
    /// `w * v`: wsum.
    WeightedSum,
    /// `w / (k + rank)`: RRF.
    Rrf { k: f64 },
}

/// What a setting keeps: row r's hits `hits[offsets[r]..offsets[r + 1]]` (their index in the
/// traced row) with their scores, in the traced row's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kept {
    pub offsets: Vec<usize>,
    pub hits: Vec<u32>,
    pub scores: Vec<f64>,
}

/// A hit's score that is not finite (huge weights): the row and the hit. The caller fuses that
/// setting with the engine, which names the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotFinite {
    pub row: usize,
    pub hit: usize,
}

/// A candidate hit: score, first appearance (rank, list), index in the traced row.
type Candidate = (f64, u32, u32, u32);

/// Best first: score descending (0.0 and -0.0 equal), then first appearance.
fn engine_order(a: &Candidate, b: &Candidate) -> Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(Ordering::Equal)
        .then((a.1, a.2).cmp(&(b.1, b.2)))
}

/// One setting over every row of `traced`. `weights` has one weight per list.
pub fn combine(
    traced: &Traced<'_>,
    how: Combine,
    weights: &[f64],
    cutoff: Option<usize>,
    limit: Option<usize>,
) -> Result<Kept, NotFinite> {
    let (w, l) = (traced.width, traced.lists);
    let mut kept = Kept {
        offsets: Vec::with_capacity(traced.rows + 1),
        ..Kept::default()
    };
    kept.offsets.push(0);
    let mut values: Vec<f64> = Vec::with_capacity(l);
    let mut candidates: Vec<Candidate> = Vec::new();
    for row in 0..traced.rows {
        candidates.clear();
        let count = usize::try_from(traced.counts[row]).unwrap_or(0).min(w);
        for hit in 0..count {
            let at = (row * w + hit) * l;
            values.clear();
            let mut first = (u32::MAX, u32::MAX);
            for (list, &weight) in weights.iter().enumerate().take(l) {
                let rank = traced.ranks[at + list];
                if rank <= 0 || weight == 0.0 {
                    continue;
                }
                let rank = rank as u32;
                values.push(match how {
                    Combine::WeightedSum => weight * traced.values[at + list],
                    Combine::Rrf { k } => contribution(weight, k, rank - 1),
                });
                first = first.min((rank, list as u32));
            }
            if values.is_empty() {
                continue; // held only by lists of weight 0: not a hit
            }
            let score = canonical_sum(&mut values);
            if !score.is_finite() {
                return Err(NotFinite { row, hit });
            }
            candidates.push((score, first.0, first.1, hit as u32));
        }
        if let Some(n) = limit {
            if candidates.len() > n {
                candidates.select_nth_unstable_by(n, engine_order);
                candidates.truncate(n);
            }
        }
        if let Some(c) = cutoff.filter(|&c| c >= 1 && candidates.len() > c) {
            // the c-th largest score; every candidate at least as large, as C floats, is kept
            let (_, nth, _) = candidates.select_nth_unstable_by(c - 1, engine_order);
            let threshold = nth.0 as f32;
            candidates.retain(|x| x.0 as f32 >= threshold);
        }
        candidates.sort_unstable_by_key(|x| x.3);
        kept.hits.extend(candidates.iter().map(|x| x.3));
        kept.scores.extend(candidates.iter().map(|x| x.0));
        kept.offsets.push(kept.hits.len());
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{fuse_batch_into_vecs, Extra, IdMatrix};
    use crate::fusion::{Method, Norm, Params};

    /// A tiny deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    struct Batch {
        ids: Vec<Vec<i64>>,
        scores: Vec<Vec<f64>>,
        rows: usize,
        cols: usize,
    }

    fn random_batch(rng: &mut Rng, lists: usize) -> Batch {
        let (rows, cols) = (1 + rng.below(6) as usize, 1 + rng.below(12) as usize);
        let mut ids = vec![vec![-1i64; rows * cols]; lists];
        let mut scores = vec![vec![f64::NAN; rows * cols]; lists];
        for l in 0..lists {
            for r in 0..rows {
                let n = rng.below(cols as u64 + 1) as usize;
                let mut used = Vec::new();
                for j in 0..n {
                    let id = rng.below(15) as i64;
                    if used.contains(&id) {
                        continue; // one occurrence per key and list
                    }
                    used.push(id);
                    ids[l][r * cols + j] = id;
                    // few distinct scores: ties in the lists and in the sums
                    scores[l][r * cols + j] = [0.5, 1.0, 2.0, 3.25, -1.0][rng.below(5) as usize];
                }
            }
        }
        Batch {
            ids,
            scores,
            rows,
            cols,
        }
    }

    fn fused(b: &Batch, params: &Params, trace: bool) -> crate::batch::BatchOutput {
        let mats: Vec<IdMatrix<'_>> = b
            .ids
            .iter()
            .map(|d| IdMatrix::new(d, b.rows, b.cols).unwrap())
            .collect();
        let scores: Vec<Option<&[f64]>> = b.scores.iter().map(|s| Some(&s[..])).collect();
        let extra = Extra {
            scores: &scores,
            boost: None,
        };
        let plan = params.plan(mats.len()).unwrap();
        fuse_batch_into_vecs(&mats, extra, &plan, -1, trace, 1).unwrap()
    }

    /// Every setting, combined from one traced fusion, equals the engine's fusion with that
    /// setting: the same hits, the same score bits; with a cutoff, the hits as large (as C
    /// floats) as the c-th; with a limit, the engine's first `limit` hits.
    #[test]
    fn combine_equals_the_engine() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..400 {
            let lists = 1 + rng.below(3) as usize;
            let b = random_batch(&mut rng, lists);
            let rrf = case % 2 == 0;
            let mut base = Params::default();
            if rrf {
                base.method = Method::Rrf;
            } else {
                base.method = Method::Wsum;
                base.norm =
                    Some([Norm::MinMax, Norm::None, Norm::ZScore, Norm::Rank][(case / 2) % 4]);
            }
            base.weights = Some(vec![1.0; lists]);
            let traced_out = fused(&b, &base, true);
            let traced = Traced {
                rows: traced_out.rows,
                width: traced_out.width,
                lists,
                counts: &traced_out.counts,
                ranks: traced_out.ranks.as_deref().unwrap(),
                values: traced_out.normalized.as_deref().unwrap(),
            };
            assert!(traced.is_consistent());
            for _ in 0..4 {
                let weights: Vec<f64> = (0..lists)
                    .map(|_| [0.0, 0.1, 0.3, 0.7, 1.0, 0.5][rng.below(6) as usize])
                    .collect();
                let k = [0.0, 1.0, 60.0][rng.below(3) as usize];
                let cutoff = [None, Some(1), Some(3)][rng.below(3) as usize];
                let limit = [None, Some(2), Some(5)][rng.below(3) as usize];
                let mut params = base.clone();
                params.weights = Some(weights.clone());
                params.limit = limit;
                if rrf {
                    params.k = k;
                }
                let expected = fused(&b, &params, false);
                let how = if rrf {
                    Combine::Rrf { k }
                } else {
                    Combine::WeightedSum
                };
                let got = combine(&traced, how, &weights, cutoff, limit).unwrap();
                for r in 0..b.rows {
                    let n = expected.counts[r] as usize;
                    let row = &expected.scores[r * expected.width..r * expected.width + n];
                    let ids = &expected.ids[r * expected.width..r * expected.width + n];
                    let keep = match cutoff {
                        Some(c) if n > c => {
                            let t = row[c - 1] as f32;
                            row.iter().take_while(|&&s| s as f32 >= t).count()
                        }
                        _ => n,
                    };
                    let mut want: Vec<(i64, u64)> = ids[..keep]
                        .iter()
                        .zip(&row[..keep])
                        .map(|(&id, &s)| (id, s.to_bits()))
                        .collect();
                    let span = got.offsets[r]..got.offsets[r + 1];
                    let mut have: Vec<(i64, u64)> = got.hits[span.clone()]
                        .iter()
                        .zip(&got.scores[span])
                        .map(|(&j, &s)| {
                            (
                                traced_out.ids[r * traced_out.width + j as usize],
                                s.to_bits(),
                            )
                        })
                        .collect();
                    want.sort_unstable();
                    have.sort_unstable();
                    assert_eq!(have, want, "case {case}, row {r}, {weights:?} k {k}");
                }
            }
        }
    }

    #[test]
    fn a_score_that_overflows_is_reported() {
        let traced = Traced {
            rows: 1,
            width: 1,
            lists: 2,
            counts: &[1],
            ranks: &[1, 1],
            values: &[f64::MAX, f64::MAX],
        };
        assert!(traced.is_consistent());
        let got = combine(&traced, Combine::WeightedSum, &[1.0, 1.0], None, None);
        assert_eq!(got, Err(NotFinite { row: 0, hit: 0 }));
        let got = combine(&traced, Combine::WeightedSum, &[0.5, 0.5], None, None).unwrap();
        assert_eq!(got.scores, vec![f64::MAX]);
    }

    #[test]
    fn inconsistent_shapes_are_caught() {
        let t = Traced {
            rows: 1,
            width: 2,
            lists: 1,
            counts: &[3],
            ranks: &[1, 1],
            values: &[0.0, 0.0],
        };
        assert!(!t.is_consistent());
    }
}
