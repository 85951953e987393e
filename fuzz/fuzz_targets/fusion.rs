//! The fusion engine (`rust/fusion/`) against `model::fusion`, the reference's `_fuse` written
//! again plainly: for every method and normalisation, the same hits (keys), in the same order,
//! with the same score bits; with traces, the same contributions (list, rank, value, raw score,
//! normalised value) and factor, divisor and boost; or the same error about the same key.
//!
//! One input is up to three queries fused one after the other by one `Workspace` and one
//! `IdTable` (as a thread of `fuse_batch` reuses them), each with its own arguments: i64 keys
//! with holes (the pad), up to 10 lists (so both scan layouts run), raw scores (infinite ones
//! where the method does not read them), windows, weights, duplicates, both tie breaks (by
//! `rank` and by `rank_groups`), pages, `min_score`, normalize=True, lower-is-better lists,
//! phi/gamma/sigma, the boost, contributions computed in advance (`Plan::with_contributions`)
//! or not. Now and then an argument is made invalid on purpose: `Fusion::plan` must then refuse
//! it, and accept everything the reference accepts.
#![no_main]

use _core::cancel::Cancel;
use _core::error::{Error, Problem};
use _core::fusion::methods::Param;
use _core::fusion::{Duplicates, Fusion, IdTable, Method, Norm, Rows, TieBreak, Trace, Workspace};
use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use model::fusion::{self as m, Failure};

/// Keys: small ones (ties, collisions), and the extremes of i64 (the order of `tie_break="key"`).
const KEYS: [i64; 12] = [0, 1, 2, 3, 4, 5, 6, -1, -7, i64::MIN, i64::MAX, 1 << 40];
/// The pad, when a query has holes.
const PAD: i64 = -1;

const SPECIAL: [f64; 26] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    3.0,
    60.0,
    0.1,
    0.3,
    1e-3,
    1e16,
    1e-300,
    -1e-300,
    5e-324,
    -5e-324,
    f64::MIN_POSITIVE,
    1e300,
    -1e300,
    f64::MAX,
    -f64::MAX,
    1.0 - f64::EPSILON,
    1.0 + f64::EPSILON,
    9007199254740993.0,
    1e308,
    -1e308,
];

/// A finite real: special values, small integers and fractions, or any finite bits.
fn real(u: &mut Unstructured<'_>) -> Result<f64> {
    Ok(match u.int_in_range(0..=3u8)? {
        0 => SPECIAL[u.choose_index(SPECIAL.len())?],
        1 => f64::from(u.int_in_range(-4i8..=4)?),
        2 => f64::from(u.arbitrary::<i16>()?) / f64::from(u.int_in_range(1u8..=64)?),
        _ => {
            let x = f64::from_bits(u.arbitrary()?);
            if x.is_finite() {
                x
            } else {
                0.0
            }
        }
    })
}

/// A raw score: a finite real, or now and then an infinite one where the method does not read
/// the scores (they are carried into traces as they are).
fn raw_score(u: &mut Unstructured<'_>, read: bool) -> Result<f64> {
    if !read && u.ratio(1, 8)? {
        return Ok(if u.arbitrary()? {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        });
    }
    real(u)
}

/// A real in [0, 1) (phi) or [0, 1] (sigma).
fn unit(u: &mut Unstructured<'_>, closed: bool) -> Result<f64> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => [0.0, 0.5, 0.9, 0.99, 1e-300, 1.0 - f64::EPSILON / 2.0][u.choose_index(6)?],
        1 if closed => 1.0,
        _ => f64::from(u.arbitrary::<u16>()?) / 65536.0,
    })
}

/// Ways of making the arguments invalid.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stray {
    None,
    NormForOwnOrRank,
    NegativeK,
    InfiniteK,
    WeightsLength,
    WeightsUnused,
    NegativeMeanWeight,
    InfiniteWeight,
    WindowZero,
    NanMinScore,
    NormalizeUnused,
    LowerIsBetterUnused,
    LowerIsBetterLength,
    PhiUnused,
    PhiMissing,
    PhiRange,
    GammaMissing,
    GammaInfinite,
    SigmaRange,
    BoostInfinite,
    BoostWithNormalize,
}

const STRAYS: [Stray; 20] = [
    Stray::NormForOwnOrRank,
    Stray::NegativeK,
    Stray::InfiniteK,
    Stray::WeightsLength,
    Stray::WeightsUnused,
    Stray::NegativeMeanWeight,
    Stray::InfiniteWeight,
    Stray::WindowZero,
    Stray::NanMinScore,
    Stray::NormalizeUnused,
    Stray::LowerIsBetterUnused,
    Stray::LowerIsBetterLength,
    Stray::PhiUnused,
    Stray::PhiMissing,
    Stray::PhiRange,
    Stray::GammaMissing,
    Stray::GammaInfinite,
    Stray::SigmaRange,
    Stray::BoostInfinite,
    Stray::BoostWithNormalize,
];

#[derive(Debug)]
struct Query {
    params: Fusion,
    #[allow(dead_code)] // shown in failure reports
    stray: Stray,
    /// Per list, its items (None: a hole).
    lists: Vec<Vec<Option<i64>>>,
    pad: Option<i64>,
    /// Per list, its raw scores; `none`: the engine is given no scores at all (an empty slice).
    scores: Vec<Option<Vec<f64>>>,
    no_scores: bool,
    boost: Vec<(i64, f64)>,
    /// Tie order by `rank_groups` rather than `rank`.
    groups: bool,
    /// `Plan::with_contributions` of these lengths.
    precompute: Option<Vec<usize>>,
}

fn reads_scores(method: Method, norm: Norm) -> bool {
    !method.is_rank_based() && norm.reads_scores()
}

fn query(u: &mut Unstructured<'_>) -> Result<Query> {
    let n = if u.ratio(1, 6)? {
        u.int_in_range(5..=10)?
    } else {
        u.int_in_range(0..=4)?
    };
    let alphabet = u.int_in_range(1..=KEYS.len())?;
    let holes = u.arbitrary::<bool>()?;
    let mut lists = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u.int_in_range(0..=12)?;
        let mut list = Vec::with_capacity(len);
        for _ in 0..len {
            let key = KEYS[u.choose_index(alphabet)?];
            list.push(if holes && key == PAD { None } else { Some(key) });
        }
        lists.push(list);
    }

    let method = *u.choose(&m::MODELLED)?;
    let mut norm = None;
    if !method.is_rank_based() && method.info().own_norm.is_none() && u.arbitrary()? {
        norm = Some(u.choose(_core::fusion::NORMS)?.norm);
    }
    let in_effect = method.info().own_norm.or(norm).unwrap_or(Norm::None);
    let in_effect = if method.is_rank_based() {
        Norm::None
    } else {
        in_effect
    };
    let mut p = Fusion {
        method,
        norm,
        ..Fusion::default()
    };
    if method == Method::Rrf {
        p.k = Some(real(u)?.abs());
    }
    if method.is_weighted() && u.arbitrary()? {
        let mut w = Vec::with_capacity(n);
        for _ in 0..n {
            let x = if u.ratio(1, 4)? { 0.0 } else { real(u)? };
            w.push(if method.combine().is_mean() {
                x.abs()
            } else {
                x
            });
        }
        p.weights = Some(w);
    }
    if u.arbitrary()? {
        p.window = Some(u.int_in_range(1..=13)?);
    }
    p.duplicates = *u.choose(&[Duplicates::First, Duplicates::Sum, Duplicates::Error])?;
    p.tie_break = if u.arbitrary()? {
        TieBreak::Key
    } else {
        TieBreak::BestRank
    };
    if u.ratio(1, 4)? {
        p.offset = u.int_in_range(0..=5)?;
    }
    if u.arbitrary()? {
        p.limit = Some(if u.ratio(1, 8)? {
            usize::MAX
        } else {
            u.int_in_range(0..=13)?
        });
    }
    if u.ratio(1, 4)? {
        p.min_score = Some(real(u)?);
    }
    p.normalize = method == Method::Rrf && u.ratio(1, 3)?;
    if reads_scores(method, in_effect) && u.arbitrary()? {
        p.lower_is_better = Some((0..n).map(|_| u.arbitrary()).collect::<Result<_>>()?);
    }
    if method == Method::Rbc {
        p.phi = Some(unit(u, false)?);
    }
    if method == Method::Gmnz {
        p.gamma = Some(real(u)?);
    }
    if method == Method::LognIsr && u.arbitrary()? {
        p.sigma = Some(unit(u, true)?);
    }
    let mut boost = Vec::new();
    if !p.normalize && u.ratio(1, 4)? {
        p.boost_weight = Some(real(u)?);
        for _ in 0..u.int_in_range(0..=6)? {
            boost.push((KEYS[u.choose_index(KEYS.len())?], real(u)?));
        }
    }

    let stray = if u.ratio(1, 12)? {
        *u.choose(&STRAYS)?
    } else {
        Stray::None
    };
    match stray {
        Stray::NormForOwnOrRank => p.norm = Some(Norm::MinMax),
        Stray::NegativeK => p.k = Some(-1.0),
        Stray::InfiniteK => p.k = Some(f64::INFINITY),
        Stray::WeightsLength => p.weights = Some(vec![1.0; n + 1]),
        Stray::WeightsUnused => p.weights = Some(vec![1.0; n]),
        Stray::NegativeMeanWeight => p.weights = Some(vec![-1.0; n]),
        Stray::InfiniteWeight => p.weights = Some(vec![f64::INFINITY; n]),
        Stray::WindowZero => p.window = Some(0),
        Stray::NanMinScore => p.min_score = Some(f64::NAN),
        Stray::NormalizeUnused => p.normalize = true,
        Stray::LowerIsBetterUnused => p.lower_is_better = Some(vec![true; n]),
        Stray::LowerIsBetterLength => p.lower_is_better = Some(vec![true; n + 1]),
        Stray::PhiUnused => p.phi = Some(0.5),
        Stray::PhiMissing => p.phi = None,
        Stray::PhiRange => p.phi = Some(1.0),
        Stray::GammaMissing => p.gamma = None,
        Stray::GammaInfinite => p.gamma = Some(f64::INFINITY),
        Stray::SigmaRange => p.sigma = Some(1.5),
        Stray::BoostInfinite => p.boost_weight = Some(f64::INFINITY),
        Stray::BoostWithNormalize => p.boost_weight = Some(1.0),
        Stray::None => {}
    }

    // The normalisation in effect, strays included.
    let in_effect = match (method.is_rank_based(), method.info().own_norm) {
        (true, _) => Norm::None,
        (false, Some(own)) => own,
        (false, None) => p.norm.unwrap_or(Norm::None),
    };
    let all_scores = reads_scores(method, in_effect);
    let mut scores = Vec::with_capacity(n);
    for list in &lists {
        scores.push(if all_scores || u.arbitrary()? {
            Some(
                (0..list.len())
                    .map(|_| raw_score(u, all_scores))
                    .collect::<Result<_>>()?,
            )
        } else {
            None
        });
    }
    let no_scores = !all_scores && scores.iter().all(Option::is_none) && u.arbitrary()?;
    let precompute = if u.ratio(1, 3)? {
        Some(
            (0..n)
                .map(|_| u.int_in_range(0..=14))
                .collect::<Result<_>>()?,
        )
    } else {
        None
    };
    Ok(Query {
        params: p,
        stray,
        lists,
        pad: holes.then_some(PAD),
        scores,
        no_scores,
        boost,
        groups: u.arbitrary()?,
        precompute,
    })
}

/// The reference's argument checks (`_options`, `_method_options`): the options, or None when
/// it raises.
fn options(p: &Fusion, n: usize, boost: &[(i64, f64)]) -> Option<m::Options> {
    let method = p.method;
    if p.norm.is_some() && (method.is_rank_based() || method.info().own_norm.is_some()) {
        return None;
    }
    let norm = if method.is_rank_based() {
        Norm::None
    } else {
        method.info().own_norm.or(p.norm).unwrap_or(Norm::None)
    };
    if p.k.is_some_and(|k| !(k.is_finite() && k >= 0.0)) {
        return None;
    }
    let weights = match &p.weights {
        None => vec![1.0; n],
        Some(w) => {
            let bad = |&x: &f64| !x.is_finite() || (method.combine().is_mean() && x < 0.0);
            if !method.is_weighted() || w.len() != n || w.iter().any(bad) {
                return None;
            }
            w.clone()
        }
    };
    if p.window == Some(0) || p.min_score.is_some_and(|x| !x.is_finite()) {
        return None;
    }
    if p.normalize && (method != Method::Rrf || m::best_possible(&weights, p.k()).is_none()) {
        return None;
    }
    if let Some(l) = &p.lower_is_better {
        if !reads_scores(method, norm) || l.len() != n {
            return None;
        }
    }
    let takes = |name| method.takes(name);
    for (name, value) in [
        (Param::Phi, p.phi),
        (Param::Gamma, p.gamma),
        (Param::Sigma, p.sigma),
    ] {
        match value {
            Some(_) if !takes(name) => return None,
            None if takes(name) && name != Param::Sigma => return None,
            Some(x) if !x.is_finite() => return None,
            _ => {}
        }
    }
    if p.phi.is_some_and(|x| !(0.0..1.0).contains(&x))
        || p.sigma.is_some_and(|x| !(0.0..=1.0).contains(&x))
    {
        return None;
    }
    if let Some(w) = p.boost_weight {
        if !w.is_finite() || p.normalize {
            return None;
        }
    }
    Some(m::Options {
        method,
        norm,
        k: p.k(),
        weights,
        window: p.window,
        duplicates: p.duplicates,
        tie_break: p.tie_break,
        offset: p.offset,
        limit: p.limit,
        min_score: p.min_score,
        normalize: p.normalize,
        phi: p.phi.unwrap_or(0.0),
        gamma: p.gamma.unwrap_or(1.0),
        sigma: p.sigma.unwrap_or(0.01),
        lower_is_better: p.lower_is_better.clone(),
        boost: p.boost_weight.map(|w| (w, boost.to_vec())),
    })
}

/// The same float: equal bits, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// An optional value of the reference against the engine's (NaN: none).
fn same_opt(model: Option<f64>, engine: f64) -> bool {
    match model {
        None => engine.is_nan(),
        Some(x) => same(x, engine),
    }
}

fn check_error(e: &Error, f: &Failure, rows: &[Vec<i64>], q: &Query) {
    let key_at = |list: usize, position: usize| rows[list][position];
    let ok = match (&e.problem, f) {
        (Problem::DuplicateKey { key }, Failure::Duplicate { list, position }) => {
            (key.list, key.position) == (*list, *position)
        }
        (Problem::Invalid { argument, .. }, Failure::NegativeMax) => argument == "norm",
        (
            Problem::NonFiniteNormalized { key, list, value },
            Failure::NonFiniteNormalized {
                key: k,
                list: l,
                value: v,
            },
        ) => key_at(key.list, key.position) == *k && list == l && same(*value, *v),
        (
            Problem::NonFiniteScore { key, score, stage },
            Failure::NonFiniteScore {
                key: k,
                stage: s,
                score: v,
            },
        ) => key_at(key.list, key.position) == *k && stage == s && same(*score, *v),
        _ => false,
    };
    assert!(ok, "engine error {e:?}\nreference error {f:?}\n{q:#?}");
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let trace_all = u.arbitrary::<bool>()?;
    let mut ws = Workspace::new(trace_all);
    let mut table = IdTable::default();
    let mut trace = Trace::default();
    for _ in 0..u.int_in_range(1..=3)? {
        let q = query(u)?;
        if std::env::var_os("FUZZ_VERBOSE").is_some() {
            eprintln!("query (trace {trace_all}): {q:?}");
        }
        let n = q.lists.len();
        let expected = options(&q.params, n, &q.boost);
        let plan = match (q.params.check_plan(n), &expected) {
            (Ok(plan), Some(_)) => plan,
            (Err(_), None) => continue,
            (Ok(_), None) => panic!("Fusion::plan accepts what the reference refuses: {q:#?}"),
            (Err(e), Some(_)) => {
                panic!("Fusion::plan refuses {e:?}, the reference accepts: {q:#?}")
            }
        };
        let o = expected.expect("checked");
        let plan = match &q.precompute {
            Some(lens) => plan.with_rank_terms(lens),
            None => plan,
        };
        let rows: Vec<Vec<i64>> = q
            .lists
            .iter()
            .map(|l| l.iter().map(|k| k.unwrap_or(PAD)).collect())
            .collect();
        let row_refs: Vec<&[i64]> = rows.iter().map(Vec::as_slice).collect();
        let score_refs: Vec<Option<&[f64]>> = q.scores.iter().map(|s| s.as_deref()).collect();
        let scores: &[Option<&[f64]>] = if q.no_scores { &[] } else { &score_refs };
        let model_scores: Vec<Option<Vec<f64>>> = if q.no_scores {
            vec![None; n]
        } else {
            q.scores.clone()
        };
        let want = m::fuse(&q.lists, &model_scores, &o);

        let got = ws
            .fuse(&mut Rows::new(&row_refs, q.pad, &mut table), scores, &plan)
            .and_then(|()| match q.params.boost_weight {
                Some(_) => ws.boost(&plan, |_, key, _| {
                    Ok::<_, Error>(q.boost.iter().find(|(k, _)| *k == key).map(|&(_, v)| v))
                }),
                None => Ok(()),
            });
        let hits = match (got, want) {
            (Err(e), Err(f)) => {
                check_error(&e, &f, &rows, &q);
                continue;
            }
            (Ok(()), Ok(hits)) => hits,
            (got, want) => panic!("engine {got:?}\nreference {want:?}\n{q:#?}"),
        };
        if q.groups {
            let by_key = q.params.tie_break == TieBreak::Key;
            ws.rank_groups(&plan, &Cancel::none(), |group, firsts| {
                if by_key {
                    group.sort_by_key(|&id| {
                        let (l, p) = firsts.get(id);
                        rows[l as usize][p as usize]
                    });
                }
                Ok::<(), Error>(())
            })
            .expect("sorting by i64 keys never fails");
        } else {
            ws.rank(&plan);
        }
        let page: Vec<(i64, f64)> = ws
            .page()
            .iter()
            .map(|&id| (ws.key(id), ws.score(id)))
            .collect();
        let expected_page: Vec<(i64, f64)> = hits.iter().map(|h| (h.key, h.score)).collect();
        let equal = page.len() == expected_page.len()
            && page
                .iter()
                .zip(&expected_page)
                .all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits());
        assert!(
            equal,
            "engine {page:?}\nreference {expected_page:?}\n{q:#?}"
        );
        if trace_all {
            ws.trace(&plan, scores, &mut trace);
            assert_eq!(trace.len(), hits.len());
            for (j, hit) in hits.iter().enumerate() {
                let got = trace.hit(j);
                let ok = got.len() == hit.contributions.len()
                    && got.iter().zip(&hit.contributions).all(|(g, w)| {
                        g.list as usize == w.list
                            && g.rank() == w.rank
                            && same(g.value, w.value)
                            && same_opt(w.raw, g.raw)
                            && same_opt(w.normalized, g.normalized)
                    })
                    && same_opt(hit.factor, trace.factors[j])
                    && same_opt(hit.divisor, trace.divisors[j])
                    && same_opt(hit.boost, trace.boosts[j]);
                assert!(
                    ok,
                    "hit {j} (key {}): engine {got:?} factor {} divisor {} boost {}\nreference {hit:?}\n{q:#?}",
                    hit.key, trace.factors[j], trace.divisors[j], trace.boosts[j]
                );
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
