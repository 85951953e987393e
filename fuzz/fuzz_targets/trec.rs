//! The TREC readers and the native fuse path (`rust/trec/`) on arbitrary bytes, against
//! `model::trec` (the Python semantics of `read_run`, `read_qrels` and `fuse` + `write_run`):
//!
//! - nothing panics, whatever the bytes;
//! - `parse_run` and `parse_qrels` return what the model reads: the same queries (byte ranges),
//!   doc ids, scores (bits) and gains, or the same error (`Reason`) at the same line, located
//!   `At::Line(Some(n))` with `n` a line of the file;
//! - `parse_score` and `parse_gain` agree with Python's `float()` and `int()` on the fields;
//! - `fused_run` of the files that parse writes the model's bytes, sequentially and in
//!   parallel, by any method (score-based ones read the runs' scores), or fails on the same
//!   query about the same key (or the same score, or the same argument).
//!
//! Input: up to three files, the readers' options and the fusion's arguments.
#![no_main]

use _core::error::{At, Key, Problem};
use _core::fusion::{Duplicates, Fusion, Method, Norm, TieBreak};
use _core::trec::fuse::{fused_run, RunFile};
use _core::trec::{parse_gain, parse_qrels, parse_run, parse_score, Number, Order, ReadDuplicates};
use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use model::fusion::{Failure, Options};
use model::trec as m;

fn score(t: &[u8]) -> Option<f64> {
    match parse_score(t) {
        Number::Value(v) => Some(v),
        // The binding asks Python's float() about a field with a non-ASCII byte; not here.
        Number::Invalid | Number::Unknown => None,
    }
}

fn gain(t: &[u8]) -> Option<i64> {
    match parse_gain(t) {
        Number::Value(v) => Some(v),
        Number::Invalid | Number::Unknown => None,
    }
}

/// `parse_score` and `parse_gain` on one field, against Python's `float()` and `int()`.
fn check_numbers(t: &[u8]) {
    let ascii = t.is_ascii();
    match (parse_score(t), m::py_float(t)) {
        (Number::Unknown, _) => assert!(!ascii, "parse_score({t:?}) unknown"),
        (Number::Value(v), Some(w)) => assert!(
            v.to_bits() == w.to_bits() || (v.is_nan() && w.is_nan()),
            "parse_score({t:?}) = {v:?}, float() = {w:?}"
        ),
        (Number::Invalid, None) => {}
        (got, want) => {
            assert!(!ascii, "parse_score({t:?}) = {got:?}, float() = {want:?}")
        }
    }
    match (parse_gain(t), m::py_int(t)) {
        (Number::Value(v), Some(Ok(w))) => assert_eq!(v, w, "parse_gain({t:?})"),
        (Number::Unknown, Some(Err(()))) | (Number::Invalid, None) => {}
        (Number::Unknown, _) if !ascii => {}
        (got, want) => panic!("parse_gain({t:?}) = {got:?}, int() = {want:?}"),
    }
}

/// The error of a malformed file must name a line of the file, and be the model's.
fn check_malformed(e: &_core::Error, want: &m::Failure, data: &[u8]) {
    let n_lines = m::lines(data).len();
    match (&e.problem, e.at.clone()) {
        (Problem::Malformed(reason), At::Line(Some(line))) => {
            assert!((1..=n_lines).contains(&line), "line {line} of {n_lines}");
            assert_eq!(
                (line, reason),
                (want.0, &want.1),
                "{:?}",
                String::from_utf8_lossy(data)
            );
        }
        _ => panic!("not a malformed file at a line: {e:?}"),
    }
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let order = if u.arbitrary()? {
        Order::Score
    } else {
        Order::File
    };
    let read_dups = *u.choose(&[
        ReadDuplicates::Error,
        ReadDuplicates::First,
        ReadDuplicates::Keep,
    ])?;
    let n_files = u.int_in_range(1..=3)?;
    // Any method (rrf three times in four); a norm now and then where the method takes one.
    let method = if u.ratio(3, 4)? {
        Method::Rrf
    } else {
        u.choose(_core::fusion::METHODS)?.method
    };
    let mut norm = None;
    if !method.is_rank_based() && method.info().own_norm.is_none() && u.arbitrary()? {
        norm = Some(u.choose(_core::fusion::NORMS)?.norm);
    }
    let in_effect = match (method.is_rank_based(), method.info().own_norm) {
        (true, _) => Norm::None,
        (false, Some(own)) => own,
        (false, None) => norm.unwrap_or(Norm::None),
    };
    let reads = !method.is_rank_based() && in_effect.reads_scores();
    let lower_is_better: Option<Vec<bool>> = if reads && u.ratio(1, 4)? {
        Some((0..n_files).map(|_| u.arbitrary()).collect::<Result<_>>()?)
    } else {
        None
    };
    let phi = (method == Method::Rbc).then_some(0.5);
    let gamma = if method == Method::Gmnz {
        Some(*u.choose(&[0.5, 1.0, 2.0, -1.0])?)
    } else {
        None
    };
    let k = if method == Method::Rrf {
        f64::from(u.int_in_range(0..=80u8)?) / 4.0
    } else {
        60.0
    };
    let weights: Option<Vec<f64>> = if u.arbitrary()? {
        let choices = [1.0, 0.0, -1.0, 0.5, 2.0, 1e308, -1e308, f64::MAX];
        Some(
            (0..n_files)
                .map(|_| u.choose(&choices).copied())
                .collect::<Result<_>>()?,
        )
    } else {
        None
    };
    let window = if u.arbitrary()? {
        Some(u.int_in_range(1..=8)?)
    } else {
        None
    };
    let duplicates = *u.choose(&[Duplicates::First, Duplicates::Sum, Duplicates::Error])?;
    let limit = if u.arbitrary()? {
        Some(u.int_in_range(0..=8)?)
    } else {
        None
    };
    let qrels_dups = *u.choose(&[
        ReadDuplicates::Error,
        ReadDuplicates::First,
        ReadDuplicates::Keep,
    ])?;
    let parallel = u.arbitrary()?;
    let tag: &[u8] = u.choose(&[&b"t"[..], b"rankfusion", b"t\xff\xfe"])?;
    let mut files: Vec<&[u8]> = Vec::with_capacity(n_files);
    for _ in 1..n_files {
        let len = u.arbitrary_len::<u8>()?;
        files.push(u.bytes(len)?);
    }
    let rest = u.len();
    files.push(u.bytes(rest)?);

    if std::env::var_os("FUZZ_VERBOSE").is_some() {
        eprintln!(
            "order {order:?} {read_dups:?} qrels {qrels_dups:?} {method:?} norm {norm:?} \
             lower_is_better {lower_is_better:?} phi {phi:?} gamma {gamma:?} k {k} \
             weights {weights:?} window {window:?} {duplicates:?} limit {limit:?} \
             parallel {parallel}"
        );
        for f in &files {
            eprintln!("file {:?}", String::from_utf8_lossy(f));
        }
    }
    let mut parsed = Vec::with_capacity(n_files);
    for data in &files {
        for line in m::lines(data) {
            for field in line.fields.iter().take(6) {
                check_numbers(&data[field.clone()]);
            }
        }
        // qrels
        match (
            parse_qrels(data, qrels_dups, gain),
            m::read_qrels(data, qrels_dups, gain),
        ) {
            (Ok(got), Ok(want)) => assert_eq!(got, want),
            (Err(e), Err(want)) => check_malformed(&e, &want, data),
            (got, want) => panic!("parse_qrels {got:?}\nmodel {want:?}"),
        }
        // runs
        let got = parse_run(data, order, read_dups, score);
        let want = m::read_run(data, order, read_dups, score);
        match (got, want) {
            (Ok(got), Ok(want)) => {
                let same = got.len() == want.len()
                    && got.iter().zip(&want).all(|(g, w)| {
                        g.qid == w.qid
                            && g.docids == w.docids
                            && g.scores.len() == w.scores.len()
                            && g.scores
                                .iter()
                                .zip(&w.scores)
                                .all(|(a, b)| a.to_bits() == b.to_bits())
                    });
                assert!(same, "parse_run {got:?}\nmodel {want:?}");
                parsed.push(got);
            }
            (Err(e), Err(want)) => check_malformed(&e, &want, data),
            (got, want) => panic!("parse_run {got:?}\nmodel {want:?}"),
        }
    }
    if parsed.len() < n_files {
        return Ok(());
    }

    // The native fuse path of the files, which all parsed.
    let params = Fusion {
        method,
        norm,
        k: Some(k),
        weights: weights.clone(),
        window,
        duplicates,
        limit,
        lower_is_better: lower_is_better.clone(),
        phi,
        gamma,
        ..Fusion::default()
    };
    let Ok(plan) = params.check_plan(n_files) else {
        return Ok(());
    };
    let run_files: Vec<RunFile<'_>> = files
        .iter()
        .zip(&parsed)
        .map(|(data, queries)| RunFile { data, queries })
        .collect();
    let got = fused_run(
        &run_files,
        &plan,
        tag,
        parallel,
        &_core::cancel::Cancel::none(),
    );
    let o = Options {
        method,
        norm: in_effect,
        k,
        weights: weights.unwrap_or_else(|| vec![1.0; n_files]),
        window,
        duplicates,
        tie_break: TieBreak::BestRank,
        offset: 0,
        limit,
        min_score: None,
        normalize: false,
        phi: phi.unwrap_or(0.0),
        gamma: gamma.unwrap_or(1.0),
        sigma: 0.01,
        lower_is_better,
        boost: None,
    };
    let model_files: Vec<(&[u8], &[_core::trec::RunQuery])> = files
        .iter()
        .zip(&parsed)
        .map(|(data, queries)| (*data, queries.as_slice()))
        .collect();
    let want = m::fuse(&model_files, &o, tag);
    match (got, want) {
        (Ok(got), Ok(want)) => assert!(
            got == want,
            "fused_run:\n{}\nmodel:\n{}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        ),
        (Err(e), Err(want)) => {
            assert_eq!(e.at, At::Qid(want.qid.clone()), "{e:?} / {want:?}");
            let key = e.key().and_then(|k| k.key.clone());
            let named = (!want.key.is_empty()).then(|| Key::Bytes(want.key.clone()));
            assert_eq!(key, named, "{e:?} / {want:?}");
            let same_kind = match (&e.problem, &want.failure) {
                (Problem::Invalid { argument, .. }, Failure::RawScore { list, position }) => {
                    *argument == format!("scores[{list}][{position}]")
                }
                (Problem::Invalid { argument, .. }, Failure::NegativeMax) => argument == "norm",
                (
                    Problem::NonFiniteNormalized { list, value, .. },
                    Failure::NonFiniteNormalized {
                        list: l, value: v, ..
                    },
                ) => {
                    list == l && (value.to_bits() == v.to_bits() || (value.is_nan() && v.is_nan()))
                }
                (Problem::DuplicateKey { key }, Failure::Duplicate { list, position }) => {
                    (key.list, key.position) == (*list, *position)
                }
                (
                    Problem::NonFiniteScore { score, stage, .. },
                    Failure::NonFiniteScore {
                        stage: s, score: v, ..
                    },
                ) => {
                    stage == s && (score.to_bits() == v.to_bits() || (score.is_nan() && v.is_nan()))
                }
                _ => false,
            };
            assert!(same_kind, "{e:?} / {want:?}");
        }
        (got, want) => panic!(
            "fused_run {:?}\nmodel {:?}",
            got.map(|b| String::from_utf8_lossy(&b).into_owned()),
            want.map(|b| String::from_utf8_lossy(&b).into_owned())
        ),
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
