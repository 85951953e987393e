//! Run and qrels files parsed into queries of byte ranges.

use std::cmp::Ordering;

use foldhash::fast::FixedState;
use hashbrown::hash_map::Entry;
use hashbrown::{HashMap, HashSet};

use super::lex::{fields_error, for_each_line, py_str_cmp};
use super::{
    Number, Order, QrelsQuery, ReadDuplicates, Reason, RunQuery, Span, QRELS_FIELDS, QRELS_FORMAT,
    RUN_FIELDS, RUN_FORMAT,
};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::Error;
use crate::pool;

/// The end of a run of ASCII digits starting at `i`, with single underscores allowed between
/// two digits (PEP 515), as Python's `float()` and `int()` accept them; `i` when there is none.
fn digits_end(b: &[u8], mut i: usize) -> usize {
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return i;
    }
    loop {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if b.get(i) == Some(&b'_') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
        } else {
            return i;
        }
    }
}

/// (negative, the rest) of a number with an optional leading `-` or `+`.
fn split_sign(t: &[u8]) -> (bool, &[u8]) {
    match t {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, t),
    }
}

/// A run score as Python's `float()` reads it: `[sign] (digits [. [digits]] | . digits)
/// [(e|E) [sign] digits]` with PEP 515 underscores, or `inf`, `infinity`, `nan` in any case
/// with an optional sign. Correctly rounded (overflow gives ±inf, as `float()` does).
pub fn parse_score(t: &[u8]) -> Number<f64> {
    if !t.is_ascii() {
        return Number::Unknown;
    }
    let (negative, body) = split_sign(t);
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        return Number::Value(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if body.eq_ignore_ascii_case(b"nan") {
        return Number::Value(f64::NAN);
    }
    let int_end = digits_end(body, 0);
    let mut i = int_end;
    let mut mantissa_digits = int_end > 0;
    if body.get(i) == Some(&b'.') {
        let frac_end = digits_end(body, i + 1);
        mantissa_digits |= frac_end > i + 1;
        i = frac_end;
    }
    if !mantissa_digits {
        return Number::Invalid;
    }
    if matches!(body.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(body.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_end = digits_end(body, j);
        if exp_end == j {
            return Number::Invalid;
        }
        i = exp_end;
    }
    if i != body.len() {
        return Number::Invalid;
    }
    let parsed = if t.contains(&b'_') {
        let plain: Vec<u8> = t.iter().copied().filter(|&c| c != b'_').collect();
        ascii_str(&plain).parse::<f64>()
    } else {
        ascii_str(t).parse::<f64>()
    };
    parsed.map_or(Number::Invalid, Number::Value)
}

fn ascii_str(b: &[u8]) -> &str {
    debug_assert!(b.is_ascii());
    // SAFETY: only called on ASCII bytes, which are UTF-8.
    unsafe { std::str::from_utf8_unchecked(b) }
}

/// A qrels gain as Python's `int()` reads it: `[sign] digits` with PEP 515 underscores (leading
/// zeros allowed). `Unknown` when it does not fit in an i64 (Python's ints are unbounded).
pub fn parse_gain(t: &[u8]) -> Number<i64> {
    if !t.is_ascii() {
        return Number::Unknown;
    }
    let (negative, body) = split_sign(t);
    if body.is_empty() || digits_end(body, 0) != body.len() {
        return Number::Invalid;
    }
    let mut value: i128 = 0;
    for &c in body {
        if c != b'_' {
            value = value * 10 + i128::from(c - b'0');
            if value > i128::from(u64::MAX) {
                return Number::Unknown;
            }
        }
    }
    let value = if negative { -value } else { value };
    i64::try_from(value).map_or(Number::Unknown, Number::Value)
}

/// A run score: [`parse_score`]'s, or what `fallback` (Python's own `float()`, in the binding)
/// reads of a field that it leaves undecided (`None`: not a number).
pub fn score_or(field: &[u8], fallback: impl FnOnce(&[u8]) -> Option<f64>) -> Option<f64> {
    match parse_score(field) {
        Number::Value(v) => Some(v),
        Number::Invalid => None,
        Number::Unknown => fallback(field),
    }
}

/// A qrels gain: an i64, or what the caller's own integers make of a field (`B`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gain<B> {
    Small(i64),
    Big(B),
}

/// A qrels gain: [`parse_gain`]'s, or what `fallback` (Python's own `int()`, in the binding) reads
/// of a field that it leaves undecided (`None`: not an integer).
pub fn gain_or<B>(field: &[u8], fallback: impl FnOnce(&[u8]) -> Option<B>) -> Option<Gain<B>> {
    match parse_gain(field) {
        Number::Value(v) => Some(Gain::Small(v)),
        Number::Invalid => None,
        Number::Unknown => fallback(field).map(Gain::Big),
    }
}

/// Query ids in order of first appearance, looked up without hashing while the lines of one
/// query follow each other.
struct Qids<'a> {
    data: &'a [u8],
    spans: Vec<Span>,
    index: HashMap<&'a [u8], usize, FixedState>,
    last: Option<(&'a [u8], usize)>,
}

impl<'a> Qids<'a> {
    fn new(data: &'a [u8]) -> Self {
        Qids {
            data,
            spans: Vec::new(),
            index: HashMap::with_hasher(FixedState::default()),
            last: None,
        }
    }

    fn id(&mut self, span: &Span) -> usize {
        let text = &self.data[span.clone()];
        if let Some((last, id)) = self.last {
            if last == text {
                return id;
            }
        }
        let next = self.spans.len();
        let id = *self.index.entry(text).or_insert(next);
        if id == next {
            self.spans.push(span.clone());
        }
        self.last = Some((text, id));
        id
    }
}

// --- runs -------------------------------------------------------------------------------------

/// [`parse_run_cancellable`] polls its `Cancel` every this many lines.
const POLL_LINES: usize = 1 << 14;

/// Parses a run file: queries in order of first appearance, each ranked by `order` with
/// `duplicates` applied. `score` reads a score field (`None`: not a number); see
/// [`parse_score`]. A file without a single non-blank line gives no queries.
pub fn parse_run(
    data: &[u8],
    order: Order,
    duplicates: ReadDuplicates,
    score: impl FnMut(&[u8]) -> Option<f64>,
) -> Result<Vec<RunQuery>, Error> {
    parse_run_cancellable(data, order, duplicates, score, &Cancel::none())
}

/// [`parse_run`] that `cancel` can stop (`Problem::Interrupted`): polled every
/// [`POLL_LINES`] lines and between queries.
pub fn parse_run_cancellable(
    data: &[u8],
    order: Order,
    duplicates: ReadDuplicates,
    mut score: impl FnMut(&[u8]) -> Option<f64>,
    cancel: &Cancel<'_>,
) -> Result<Vec<RunQuery>, Error> {
    // The rows go straight to their query, in file order.
    let mut qids = Qids::new(data);
    let mut queries: Vec<RunQuery> = Vec::new();
    let mut not_a_number: Option<Error> = None;
    let mut nan: Option<Error> = None;
    for_each_line::<RUN_FIELDS, _>(data, |line| {
        if line.number % POLL_LINES == 0 {
            cancel.check()?;
        }
        if line.count == 0 {
            return Ok(());
        }
        if line.count != RUN_FIELDS {
            return Err(fields_error(data, line, RUN_FORMAT));
        }
        let [qid, _, docid, _, field, _] = &line.fields;
        let text = &data[field.clone()];
        match score(text) {
            None if not_a_number.is_none() => {
                not_a_number = Some(super::malformed(
                    line.number,
                    Reason::NotANumber {
                        text: text.to_vec(),
                    },
                ));
            }
            Some(v) if v.is_nan() && nan.is_none() => {
                nan = Some(super::malformed(
                    line.number,
                    Reason::NaN {
                        text: text.to_vec(),
                    },
                ));
            }
            Some(v) if not_a_number.is_none() && nan.is_none() => {
                let q = qids.id(qid);
                if q == queries.len() {
                    queries.push(RunQuery {
                        qid: qid.clone(),
                        docids: Vec::new(),
                        scores: Vec::new(),
                    });
                }
                queries[q].docids.push(docid.clone());
                queries[q].scores.push(v);
            }
            _ => {} // a line after a bad score: only its field count still matters
        }
        Ok(())
    })?;
    if let Some(e) = not_a_number.or(nan) {
        return Err(e);
    }

    let utf8 = std::cell::OnceCell::new();
    let cmp_doc = |a: &Span, b: &Span| {
        if *utf8.get_or_init(|| std::str::from_utf8(data).is_ok()) {
            data[a.clone()].cmp(&data[b.clone()])
        } else {
            py_str_cmp(&data[a.clone()], &data[b.clone()])
        }
    };
    let mut seen: HashMap<&[u8], usize, FixedState> = HashMap::with_hasher(FixedState::default());
    for (q, query) in queries.iter_mut().enumerate() {
        cancel.check()?;
        if duplicates == ReadDuplicates::Error {
            seen.clear();
            for (j, d) in query.docids.iter().enumerate() {
                match seen.entry(&data[d.clone()]) {
                    Entry::Occupied(i) => return Err(duplicate_error(data, q, *i.get(), j)),
                    Entry::Vacant(slot) => {
                        slot.insert(j);
                    }
                }
            }
        }
        if order == Order::Score {
            trec_eval_order(&mut query.docids, &mut query.scores, cmp_doc);
        }
        if duplicates == ReadDuplicates::First {
            keep_first(data, &mut query.docids, &mut query.scores);
        }
    }
    Ok(queries)
}

/// Parses run files (see [`parse_run_cancellable`]), on this process's pool (one thread per file
/// at most): per file, in order, its queries or its error. `Problem::Interrupted`, the call's
/// error and not a file's, once `cancel` stops.
pub fn parse_runs(
    files: &[&[u8]],
    order: Order,
    duplicates: ReadDuplicates,
    score: impl Fn(&[u8]) -> Option<f64> + Sync,
    cancel: &Cancel<'_>,
) -> Result<Vec<Result<Vec<RunQuery>, Error>>, Error> {
    let parse = |data: &&[u8]| parse_run_cancellable(data, order, duplicates, &score, cancel);
    let threads = pool::resolve_threads(None).min(files.len());
    pool::run_cancellable(threads, cancel, |parallel| {
        let parsed: Vec<_> = if parallel {
            files.par_iter().map(parse).collect()
        } else {
            files.iter().map(parse).collect()
        };
        cancel.check_stopped().map(|()| parsed)
    })
}

/// A caller that makes an object per line of a parsed run (with Python's lock held) checks for
/// signals before a query once this many lines were made since its last check (~10 ms).
pub const CHECK_LINES: usize = 1 << 16;

/// For each query of `queries`, whether the caller checks for signals before making its objects
/// (see [`CHECK_LINES`]).
pub fn check_points(queries: &[RunQuery]) -> impl Iterator<Item = bool> + '_ {
    queries.iter().scan(0, |lines, q| {
        let due = *lines >= CHECK_LINES;
        if due {
            *lines = 0;
        }
        *lines += q.docids.len();
        Some(due)
    })
}

/// The error for rows `first` and `second` (in file order) of query `q` of a run that parsed:
/// their lines are found by reading the file again.
fn duplicate_error(data: &[u8], q: usize, first: usize, second: usize) -> Error {
    let mut qids = Qids::new(data);
    let mut row = 0;
    let mut first_line = 0;
    let mut error = None;
    let _ = for_each_line::<RUN_FIELDS, ()>(data, |line| {
        if line.count == RUN_FIELDS && qids.id(&line.fields[0]) == q {
            if row == first {
                first_line = line.number;
            } else if row == second {
                error = Some(super::malformed(
                    line.number,
                    Reason::DuplicateDoc {
                        qid: data[line.fields[0].clone()].to_vec(),
                        docid: data[line.fields[2].clone()].to_vec(),
                        first_line,
                    },
                ));
                return Err(());
            }
            row += 1;
        }
        Ok(())
    });
    // The second row is always found (the rows come from parsing this very data); were it
    // not, the error still names the duplicate's first line rather than panicking.
    error.unwrap_or(super::malformed(
        first_line,
        Reason::DuplicateDoc {
            qid: Vec::new(),
            docid: Vec::new(),
            first_line,
        },
    ))
}

/// Puts a query in trec_eval's order (score descending, ties by doc id descending) exactly as
/// `rankfusion.trec._trec_eval_order` does.
///
/// When the scores are non-increasing already, only the doc ids inside each run of equal scores
/// are sorted and every position keeps its score (which tells only for 0.0 tied with -0.0);
/// otherwise (score, doc id) pairs are sorted. Both sorts are stable.
fn trec_eval_order(
    docids: &mut [Span],
    scores: &mut [f64],
    cmp_doc: impl Fn(&Span, &Span) -> Ordering,
) {
    if scores.windows(2).all(|w| w[0] >= w[1]) {
        let mut start = 0;
        while start < scores.len() {
            let mut end = start + 1;
            while end < scores.len() && scores[end] == scores[end - 1] {
                end += 1;
            }
            if end - start > 1 {
                docids[start..end].sort_by(|a, b| cmp_doc(b, a));
            }
            start = end;
        }
        return;
    }
    let mut pairs: Vec<(f64, Span)> = scores.iter().copied().zip(docids.iter().cloned()).collect();
    pairs.sort_by(|(sa, da), (sb, db)| {
        sb.partial_cmp(sa)
            .unwrap_or(Ordering::Equal)
            .then_with(|| cmp_doc(db, da))
    });
    for (i, (s, d)) in pairs.into_iter().enumerate() {
        scores[i] = s;
        docids[i] = d;
    }
}

/// Keeps the first occurrence of each doc id.
fn keep_first(data: &[u8], docids: &mut Vec<Span>, scores: &mut Vec<f64>) {
    let mut seen: HashSet<&[u8], FixedState> =
        HashSet::with_capacity_and_hasher(docids.len(), FixedState::default());
    let keep: Vec<bool> = docids
        .iter()
        .map(|d| seen.insert(&data[d.clone()]))
        .collect();
    if keep.iter().all(|&k| k) {
        return;
    }
    let mut flags = keep.iter();
    docids.retain(|_| *flags.next().unwrap_or(&true));
    let mut flags = keep.iter();
    scores.retain(|_| *flags.next().unwrap_or(&true));
}

// --- qrels ------------------------------------------------------------------------------------

/// Parses a qrels file: queries in order of first appearance, each with its judged docs in the
/// order of the lines. `gain` reads a gain field (`None`: not an integer); see [`parse_gain`].
/// A doc judged twice for one query is an error at the second line (`Error`), or only its first
/// line is kept (`First`), or every line is (`Keep`).
pub fn parse_qrels<G>(
    data: &[u8],
    duplicates: ReadDuplicates,
    mut gain: impl FnMut(&[u8]) -> Option<G>,
) -> Result<Vec<QrelsQuery<G>>, Error> {
    let mut qids = Qids::new(data);
    let mut rows: Vec<(usize, Span, G, usize)> = Vec::new();
    let mut not_an_integer: Option<Error> = None;
    for_each_line::<QRELS_FIELDS, _>(data, |line| {
        if line.count == 0 {
            return Ok(());
        }
        if line.count != QRELS_FIELDS {
            return Err(fields_error(data, line, QRELS_FORMAT));
        }
        if not_an_integer.is_some() {
            return Ok(());
        }
        let [qid, _, docid, field] = &line.fields;
        let text = &data[field.clone()];
        match gain(text) {
            Some(g) => rows.push((qids.id(qid), docid.clone(), g, line.number)),
            None => {
                not_an_integer = Some(super::malformed(
                    line.number,
                    Reason::NotAnInteger {
                        text: text.to_vec(),
                    },
                ))
            }
        }
        Ok(())
    })?;
    if let Some(e) = not_an_integer {
        return Err(e);
    }
    let mut out: Vec<QrelsQuery<G>> = qids
        .spans
        .iter()
        .map(|qid| QrelsQuery {
            qid: qid.clone(),
            judged: Vec::new(),
        })
        .collect();
    let mut seen: HashSet<(usize, &[u8]), FixedState> =
        HashSet::with_capacity_and_hasher(rows.len(), FixedState::default());
    for (q, docid, g, line) in rows {
        if duplicates != ReadDuplicates::Keep && !seen.insert((q, &data[docid.clone()])) {
            if duplicates == ReadDuplicates::Error {
                return Err(super::malformed(
                    line,
                    Reason::DuplicateJudgment {
                        qid: data[out[q].qid.clone()].to_vec(),
                        docid: data[docid].to_vec(),
                    },
                ));
            }
            continue;
        }
        out[q].judged.push((docid, g));
    }
    Ok(out)
}
