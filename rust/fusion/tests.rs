//! The engine on hand-computed cases, and against a naive model of docs/semantics.md.

use std::collections::HashMap;

use super::*;
use crate::error::{Error, KeyRef, Problem};

fn params() -> Fusion {
    Fusion::default()
}

fn keys<'a>(lists: &[&[&'a str]], hits: &[Hit]) -> Vec<&'a str> {
    hits.iter()
        .map(|h| lists[h.list_index][h.position])
        .collect()
}

#[test]
fn weighted_example_from_the_issue() {
    let lists: [&[&str]; 2] = [&["c1", "c2"], &["c2", "c3"]];
    let p = Fusion {
        k: Some(10.0),
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
    let p = Fusion {
        k: Some(1.0),
        weights: Some(vec![1.0, 0.0]),
        ..params()
    };
    let hits = rrf(&lists, &p).unwrap();
    assert_eq!(keys(&lists, &hits), ["a", "b"]);
    assert_eq!(hits[0].score, 0.5);
    assert_eq!(hits[1].score, 1.0 / 3.0);
    let none = Fusion {
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
    let w = |ws: [f64; 3]| Fusion {
        k: Some(0.5),
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
        &Fusion {
            duplicates: Duplicates::Sum,
            ..params()
        },
    )
    .unwrap();
    assert_eq!(sum[0].score, 0.0 + 1.0 / 63.0 + 1.0 / 61.0);
    let err = rrf(
        &lists,
        &Fusion {
            duplicates: Duplicates::Error,
            ..params()
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::from(Problem::DuplicateKey {
            key: KeyRef::at(0, 2)
        })
    );
}

#[test]
fn window_paging_and_min_score() {
    let lists: [&[i64]; 2] = [&[1, 2, 3, 4], &[4, 3, 9, 8]];
    let p = Fusion {
        window: Some(2),
        ..params()
    };
    let hits = rrf(&lists, &p).unwrap();
    let got: Vec<i64> = hits
        .iter()
        .map(|h| lists[h.list_index][h.position])
        .collect();
    assert_eq!(got, [1, 4, 2, 3]);
    let page = Fusion {
        offset: 1,
        limit: Some(2),
        ..p.clone()
    };
    let hits = rrf(&lists, &page).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(lists[hits[0].list_index][hits[0].position], 4);
    let high = Fusion {
        min_score: Some(1.0 / 61.0),
        ..p
    };
    assert_eq!(rrf(&lists, &high).unwrap().len(), 2);
}

#[test]
fn key_tie_break_and_normalize() {
    let lists: [&[&str]; 2] = [&["b", "a"], &["a", "b"]];
    let p = Fusion {
        tie_break: TieBreak::Key,
        normalize: true,
        ..params()
    };
    let hits = rrf(&lists, &p).unwrap();
    assert_eq!(keys(&lists, &hits), ["a", "b"]);
    let top = 0.0 + 1.0 / 61.0 + 1.0 / 61.0;
    assert_eq!(hits[0].score, (0.0 + 1.0 / 62.0 + 1.0 / 61.0) / top);
}

#[test]
fn bad_values_are_errors_not_panics() {
    let lists: [&[&str]; 1] = [&["a"]];
    for p in [
        Fusion {
            k: Some(-1.0),
            ..params()
        },
        Fusion {
            k: Some(f64::NAN),
            ..params()
        },
        Fusion {
            weights: Some(vec![1.0, 2.0]),
            ..params()
        },
        Fusion {
            weights: Some(vec![f64::INFINITY]),
            ..params()
        },
        Fusion {
            window: Some(0),
            ..params()
        },
        Fusion {
            min_score: Some(f64::NAN),
            ..params()
        },
        Fusion {
            normalize: true,
            weights: Some(vec![-1.0]),
            ..params()
        },
        Fusion {
            k: Some(0.0),
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
fn lower_is_better_needs_one_flag_per_list() {
    // One flag short: the engine would read a flag for the second list that is not there.
    let p = Fusion {
        method: Method::Min,
        lower_is_better: Some(vec![true]),
        ..params()
    };
    assert_eq!(
        p.check_plan(2).unwrap_err().problem,
        Problem::Invalid {
            argument: "lower_is_better".into(),
            message: "lower_is_better has 1 values for 2 lists".into(),
        }
    );
    assert!(p.check_plan(1).is_ok());
    let lists: [&[&str]; 2] = [&["a"], &["b"]];
    assert!(rrf(&lists, &p).is_err());
}

#[test]
fn empty_input_gives_no_hits() {
    let none: [&[&str]; 0] = [];
    assert!(rrf(&none, &params()).unwrap().is_empty());
    let empty: [&[&str]; 2] = [&[], &[]];
    let p = Fusion {
        normalize: true,
        weights: Some(vec![1.0, 0.0]),
        ..params()
    };
    assert!(rrf(&empty, &p).unwrap().is_empty());
    let no_positive = Fusion {
        weights: Some(vec![-1.0, 0.0]),
        ..p
    };
    assert!(rrf(&empty, &no_positive).is_err());
}

#[test]
fn the_small_sorting_networks_sort_every_input() {
    // Every input of 0s and 1s sorted means every input sorted (Knuth's 0-1 principle).
    fn sorts_every_01_input<const N: usize>(network: &[(usize, usize)]) {
        for bits in 0u32..1 << N {
            let v: [f64; N] = std::array::from_fn(|i| f64::from(bits >> i & 1));
            let sorted = network_sort(v, network);
            assert!(
                sorted.windows(2).all(|w| w[0] <= w[1]),
                "{bits:b}: {sorted:?}"
            );
        }
    }
    sorts_every_01_input::<3>(NETWORK_3);
    sorts_every_01_input::<4>(NETWORK_4);
    sorts_every_01_input::<5>(NETWORK_5);
    // The canonical sum of 1 to 5 values (two unsorted, three to five by the networks) as if
    // sorted ascending by total_cmp, on values with repeats, signed zeros and magnitudes whose
    // order changes the rounding.
    let pool = [0.0, -0.0, 1.0, -1.0, 1e16, -1e16, 0.1, 3.0, 1e-300, 2.5e-17];
    let mut rng = crate::testing::Rng(0x5EED);
    for _ in 0..20_000 {
        let n = 1 + rng.below(5) as usize;
        let v: Vec<f64> = (0..n).map(|_| rng.pick(&pool)).collect();
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        let expected = sorted.iter().fold(0.0, |acc, &x| acc + x);
        let got = canonical_sum(&mut v.clone());
        assert_eq!(got.to_bits(), expected.to_bits(), "{v:?}");
    }
}

#[test]
fn canonical_sum_is_ascending() {
    let mut v = [1e16, 1.0, -1e16, 1.0];
    // ascending: -1e16, 1, 1, 1e16 -> (-1e16 + 1) + 1 = -1e16 (rounding), + 1e16 = 0
    assert_eq!(canonical_sum(&mut v), 0.0 + -1e16 + 1.0 + 1.0 + 1e16);
}

// --- the engine against a naive model -------------------------------------------------------

/// docs/semantics.md written the plainest way: a map from key to its contributions, filled by the
/// interleaved scan, summed in ascending order, sorted. `Err(())` wherever the engine must fail.
fn model(lists: &[&[u8]], p: &Fusion) -> std::result::Result<Vec<(u8, f64)>, ()> {
    let plan = p.check_plan(lists.len()).map_err(drop)?;
    let w = &plan.weights;
    let depth = lists.iter().map(|l| l.len()).max().unwrap_or(0);
    let depth = depth.min(p.window.unwrap_or(usize::MAX));
    let mut order: Vec<u8> = Vec::new(); // keys in first-appearance order
    let mut found: HashMap<u8, Vec<(usize, f64)>> = HashMap::new();
    for position in 0..depth {
        for (i, list) in lists.iter().enumerate() {
            if w[i] == 0.0 || position >= list.len() {
                continue;
            }
            let key = list[position];
            let entry = found.entry(key).or_insert_with(|| {
                order.push(key);
                Vec::new()
            });
            if p.duplicates != Duplicates::Sum && entry.iter().any(|&(l, _)| l == i) {
                if p.duplicates == Duplicates::Error {
                    return Err(());
                }
                continue;
            }
            entry.push((i, w[i] / (p.k() + (position + 1) as f64)));
        }
    }
    let mut hits = Vec::new();
    for key in order {
        let mut values: Vec<f64> = found[&key].iter().map(|&(_, c)| c).collect();
        values.sort_by(f64::total_cmp);
        let sum = values.iter().fold(0.0, |acc, &v| acc + v);
        if !sum.is_finite() {
            return Err(());
        }
        let shown = match plan.normalizer {
            Some(top) if !(sum / top).is_finite() => return Err(()),
            Some(top) => sum / top,
            None => sum,
        };
        hits.push((sum, key, shown));
    }
    hits.retain(|&(_, _, shown)| p.min_score.is_none_or(|m| shown >= m));
    // Stable: ties keep first-appearance order, or go by key.
    hits.sort_by(|a, b| {
        let by_sum = b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal);
        match p.tie_break {
            TieBreak::BestRank => by_sum,
            TieBreak::Key => by_sum.then(a.1.cmp(&b.1)),
        }
    });
    let end = p
        .limit
        .map_or(hits.len(), |l| (p.offset + l).min(hits.len()));
    Ok(hits
        .get(p.offset.min(end)..end)
        .unwrap_or_default()
        .iter()
        .map(|&(_, key, shown)| (key, shown))
        .collect())
}

use crate::testing::Rng;

#[test]
fn the_engine_agrees_with_the_model() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    // Under Miri, which interprets every step, the first cases only.
    for case in 0..if cfg!(miri) { 300 } else { 20_000 } {
        let n_lists = rng.below(12) as usize;
        let data: Vec<Vec<u8>> = (0..n_lists)
            .map(|_| {
                let len = rng.below(9) as usize;
                let universe = 1 + rng.below(12);
                (0..len).map(|_| rng.below(universe) as u8).collect()
            })
            .collect();
        let lists: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let p = Fusion {
            k: Some(rng.pick(&[60.0, 0.0, 1.0, 0.5, 1e-300])),
            weights: (rng.below(2) == 0).then(|| {
                (0..n_lists)
                    .map(|_| rng.pick(&[1.0, 0.0, -1.0, 0.5, 3.0, 1e300, -2.5]))
                    .collect()
            }),
            window: (rng.below(3) == 0).then(|| 1 + rng.below(6) as usize),
            duplicates: rng.pick(&[Duplicates::First, Duplicates::Sum, Duplicates::Error]),
            tie_break: rng.pick(&[TieBreak::BestRank, TieBreak::Key]),
            offset: rng.pick(&[0, 0, 1, 3]),
            limit: rng.pick(&[None, None, Some(0), Some(1), Some(4)]),
            min_score: rng.pick(&[None, None, Some(0.0), Some(0.02), Some(-1.0)]),
            normalize: rng.below(4) == 0,
            ..Fusion::default()
        };
        let got = rrf(&lists, &p).map(|hits| {
            hits.iter()
                .map(|h| (lists[h.list_index][h.position], h.score))
                .collect::<Vec<_>>()
        });
        match (model(&lists, &p), got) {
            (Ok(want), Ok(got)) => {
                let bits = |v: &[(u8, f64)]| -> Vec<(u8, u64)> {
                    v.iter().map(|&(k, s)| (k, s.to_bits())).collect()
                };
                assert_eq!(bits(&got), bits(&want), "case {case}: {lists:?} {p:?}");
            }
            (Err(()), Err(_)) => {}
            (want, got) => panic!("case {case}: {lists:?} {p:?}: model {want:?}, engine {got:?}"),
        }
    }
}

/// Fuses one row of i64 keys with raw scores and, when given, boost values; the page as (key,
/// score bits).
fn fuse_row(row: &[i64], scores: &[f64], boost: &[(i64, f64)], p: &Fusion) -> Vec<(i64, u64)> {
    let plan = p.check_plan(1).unwrap();
    let rows = [row];
    let scores = [Some(scores)];
    let mut table = IdTable::default();
    let mut ws = Workspace::new(false);
    ws.fuse(&mut Rows::new(&rows, None, &mut table), &scores, &plan)
        .unwrap();
    if p.boost_weight.is_some() {
        ws.boost(&plan, |_, key, _| {
            Ok::<_, Error>(boost.iter().find(|(k, _)| *k == key).map(|&(_, v)| v))
        })
        .unwrap();
    }
    ws.rank(&plan);
    ws.page()
        .iter()
        .map(|&id| (ws.key(id), ws.score(id).to_bits()))
        .collect()
}

#[test]
fn the_lowest_and_highest_value_are_the_first_of_equals_as_in_python() {
    // Python's min([-0.0, ..., 0.0]) is -0.0, the first of the equal ones: the value of -0.0 is
    // then (-0.0 - -0.0) / span = 0.0, never -0.0. (`f64::min` may return either zero: which
    // one depends on the code the compiler generates.)
    let zero = 0.0f64.to_bits();
    let keys = [7, 8, 9, 10, 11, 12, 13, 14];
    let raw = [-0.0, 990.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    for norm in [Norm::MinMax, Norm::Sum] {
        let max = Fusion {
            method: Method::Max,
            norm: Some(norm),
            ..params()
        };
        let page = fuse_row(&keys, &raw, &[], &max);
        assert_eq!(page[0], (8, 1.0f64.to_bits()), "{norm:?}");
        assert_eq!(page[1], (7, zero), "{norm:?}");
    }
    // The boost's span: its low is -0.0 too, so key 7 gains 0.0 and its -0.0 becomes 0.0.
    let boosted = Fusion {
        method: Method::Max,
        boost_weight: Some(1.0),
        ..params()
    };
    let boost: Vec<(i64, f64)> = keys.iter().zip(raw).map(|(&k, v)| (k, v)).collect();
    let page = fuse_row(&keys, &[-0.0; 8], &boost, &boosted);
    assert_eq!(page[0], (8, 1.0f64.to_bits()));
    assert_eq!(page[1], (7, zero));
}
