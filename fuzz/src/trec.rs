//! TREC run and qrels files as `rankfusion.trec` reads them in Python (docs/cli.md), written
//! from that definition rather than from the core's lexer: the bytes decoded as UTF-8 with
//! `surrogateescape` into code points, universal newlines (`\n`, `\r\n`, `\r`), fields split by
//! `str.split()`'s whitespace, then the checks in the documented order; and `fuse` of the runs
//! read, written as `write_run` writes it.

use std::cmp::Ordering;

use _core::trec::{Order, QrelsQuery, ReadDuplicates, Reason, RunQuery, Span};

/// One decoded code point and the bytes it came from.
#[derive(Clone, Copy)]
struct Char {
    code: u32,
    start: usize,
    end: usize,
}

/// `data` decoded as Python decodes it with `surrogateescape`: each byte that is not part of
/// valid UTF-8 is the code point 0xDC00 + byte.
fn decode(data: &[u8]) -> Vec<Char> {
    let mut out = Vec::new();
    let mut at = 0;
    for chunk in data.utf8_chunks() {
        for c in chunk.valid().chars() {
            out.push(Char {
                code: u32::from(c),
                start: at,
                end: at + c.len_utf8(),
            });
            at += c.len_utf8();
        }
        for &b in chunk.invalid() {
            out.push(Char {
                code: 0xDC00 + u32::from(b),
                start: at,
                end: at + 1,
            });
            at += 1;
        }
    }
    out
}

/// Python's `str.isspace()` (what `str.split()` and `str.strip()` split on): Unicode's
/// White_Space characters, which `char::is_whitespace` tells, and the separators 0x1c-0x1f.
fn is_space(code: u32) -> bool {
    (0x1c..=0x1f).contains(&code) || char::from_u32(code).is_some_and(char::is_whitespace)
}

/// The code points of `bytes`, for Python's order of strings.
pub fn code_points(bytes: &[u8]) -> Vec<u32> {
    decode(bytes).iter().map(|c| c.code).collect()
}

/// Python's `a < b` for the decoded strings.
pub fn py_cmp(a: &[u8], b: &[u8]) -> Ordering {
    code_points(a).cmp(&code_points(b))
}

/// One line: its number (from 1), the byte range of its text stripped of whitespace, its fields.
pub struct Line {
    pub number: usize,
    pub stripped: Span,
    pub fields: Vec<Span>,
}

/// The lines of `data` (universal newlines; a UTF-8 byte-order mark at the start skipped).
pub fn lines(data: &[u8]) -> Vec<Line> {
    let skip = if data.starts_with(b"\xef\xbb\xbf") {
        3
    } else {
        0
    };
    let chars: Vec<Char> = decode(&data[skip..])
        .into_iter()
        .map(|c| Char {
            start: c.start + skip,
            end: c.end + skip,
            ..c
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = i;
        while i < chars.len()
            && chars[i].code != u32::from(b'\n')
            && chars[i].code != u32::from(b'\r')
        {
            i += 1;
        }
        let text = &chars[start..i];
        if i < chars.len() {
            let cr = chars[i].code == u32::from(b'\r');
            i += 1;
            if cr && i < chars.len() && chars[i].code == u32::from(b'\n') {
                i += 1;
            }
        }
        let mut fields = Vec::new();
        let mut j = 0;
        while j < text.len() {
            if is_space(text[j].code) {
                j += 1;
                continue;
            }
            let first = j;
            while j < text.len() && !is_space(text[j].code) {
                j += 1;
            }
            fields.push(text[first].start..text[j - 1].end);
        }
        let stripped = match (fields.first(), fields.last()) {
            (Some(a), Some(b)) => a.start..b.end,
            _ => 0..0,
        };
        out.push(Line {
            number: out.len() + 1,
            stripped,
            fields,
        });
    }
    out
}

/// The text an error quotes: 77 characters and `...` when the stripped line has more than 80.
fn shown(text: &[u8]) -> Vec<u8> {
    let chars = decode(text);
    if chars.len() <= 80 {
        return text.to_vec();
    }
    let mut out = text[..chars[76].end].to_vec();
    out.extend_from_slice(b"...");
    out
}

/// A malformed file: the line and why.
pub type Failure = (usize, Reason);

fn fields_error(data: &[u8], line: &Line, expected: usize, format: &'static str) -> Failure {
    (
        line.number,
        Reason::Fields {
            expected,
            format,
            found: line.fields.len(),
            text: shown(&data[line.stripped.clone()]),
        },
    )
}

/// `_trec_eval_order`: score descending, ties by doc id descending, exactly as Python does it.
fn trec_eval_order(data: &[u8], docids: &mut [Span], scores: &mut [f64]) {
    let n = scores.len();
    if n < 2 {
        return;
    }
    let cmp = |a: &Span, b: &Span| py_cmp(&data[a.clone()], &data[b.clone()]);
    if (0..n - 1).all(|i| scores[i] >= scores[i + 1]) {
        // Only the groups of tied scores are sorted (descending, stably); each position
        // keeps its score.
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while end < n && scores[end] == scores[end - 1] {
                end += 1;
            }
            docids[start..end].sort_by(|a, b| cmp(b, a));
            start = end;
        }
        return;
    }
    // sorted(zip(scores, docids), reverse=True): stable, by score then doc id.
    let mut pairs: Vec<(f64, Span)> = scores.iter().copied().zip(docids.iter().cloned()).collect();
    pairs.sort_by(|(sa, da), (sb, db)| {
        sb.partial_cmp(sa)
            .expect("no NaN")
            .then_with(|| cmp(db, da))
    });
    for (i, (s, d)) in pairs.into_iter().enumerate() {
        scores[i] = s;
        docids[i] = d;
    }
}

/// `read_run(data, order, duplicates)` (without its check for an empty file); `score` reads a
/// score field (None: not a number).
pub fn read_run(
    data: &[u8],
    order: Order,
    duplicates: ReadDuplicates,
    score: impl Fn(&[u8]) -> Option<f64>,
) -> Result<Vec<RunQuery>, Failure> {
    let lines = lines(data);
    let lines: Vec<&Line> = lines.iter().filter(|l| !l.fields.is_empty()).collect();
    if let Some(line) = lines.iter().find(|l| l.fields.len() != 6) {
        return Err(fields_error(data, line, 6, "qid Q0 docid rank score tag"));
    }
    let text = |l: &Line| data[l.fields[4].clone()].to_vec();
    if let Some(line) = lines
        .iter()
        .find(|l| score(&data[l.fields[4].clone()]).is_none())
    {
        return Err((line.number, Reason::NotANumber { text: text(line) }));
    }
    let value = |l: &Line| score(&data[l.fields[4].clone()]).expect("a number");
    if let Some(line) = lines.iter().find(|l| value(l).is_nan()) {
        return Err((line.number, Reason::NaN { text: text(line) }));
    }
    // Queries in order of first appearance, each with its rows in file order.
    let mut queries: Vec<(RunQuery, Vec<usize>)> = Vec::new();
    for line in &lines {
        let qid = &data[line.fields[0].clone()];
        let q = match queries
            .iter()
            .position(|(q, _)| &data[q.qid.clone()] == qid)
        {
            Some(q) => q,
            None => {
                queries.push((
                    RunQuery {
                        qid: line.fields[0].clone(),
                        docids: Vec::new(),
                        scores: Vec::new(),
                    },
                    Vec::new(),
                ));
                queries.len() - 1
            }
        };
        queries[q].0.docids.push(line.fields[2].clone());
        queries[q].0.scores.push(value(line));
        queries[q].1.push(line.number);
    }
    let mut out = Vec::new();
    for (mut query, numbers) in queries {
        if duplicates == ReadDuplicates::Error {
            for j in 0..query.docids.len() {
                let doc = &data[query.docids[j].clone()];
                if let Some(i) = (0..j).find(|&i| &data[query.docids[i].clone()] == doc) {
                    return Err((
                        numbers[j],
                        Reason::DuplicateDoc {
                            qid: data[query.qid.clone()].to_vec(),
                            docid: doc.to_vec(),
                            first_line: numbers[i],
                        },
                    ));
                }
            }
        }
        if order == Order::Score {
            trec_eval_order(data, &mut query.docids, &mut query.scores);
        }
        if duplicates == ReadDuplicates::First {
            let mut kept = RunQuery {
                qid: query.qid.clone(),
                docids: Vec::new(),
                scores: Vec::new(),
            };
            for (d, s) in query.docids.iter().zip(&query.scores) {
                if !kept
                    .docids
                    .iter()
                    .any(|k| data[k.clone()] == data[d.clone()])
                {
                    kept.docids.push(d.clone());
                    kept.scores.push(*s);
                }
            }
            query = kept;
        }
        out.push(query);
    }
    Ok(out)
}

/// `read_qrels(data, duplicates)` (without its check for an empty file; `Keep` keeps every
/// line); `gain` reads a gain field (None: not an integer).
pub fn read_qrels(
    data: &[u8],
    duplicates: ReadDuplicates,
    gain: impl Fn(&[u8]) -> Option<i64>,
) -> Result<Vec<QrelsQuery<i64>>, Failure> {
    let lines = lines(data);
    let lines: Vec<&Line> = lines.iter().filter(|l| !l.fields.is_empty()).collect();
    if let Some(line) = lines.iter().find(|l| l.fields.len() != 4) {
        return Err(fields_error(data, line, 4, "qid 0 docid gain"));
    }
    if let Some(line) = lines
        .iter()
        .find(|l| gain(&data[l.fields[3].clone()]).is_none())
    {
        let text = data[line.fields[3].clone()].to_vec();
        return Err((line.number, Reason::NotAnInteger { text }));
    }
    let mut out: Vec<QrelsQuery<i64>> = Vec::new();
    for line in &lines {
        let qid = &data[line.fields[0].clone()];
        let docid = &data[line.fields[2].clone()];
        let q = match out.iter().position(|q| &data[q.qid.clone()] == qid) {
            Some(q) => q,
            None => {
                out.push(QrelsQuery {
                    qid: line.fields[0].clone(),
                    judged: Vec::new(),
                });
                out.len() - 1
            }
        };
        let judged_before = out[q].judged.iter().any(|(d, _)| &data[d.clone()] == docid);
        if judged_before && duplicates != ReadDuplicates::Keep {
            if duplicates == ReadDuplicates::Error {
                let reason = Reason::DuplicateJudgment {
                    qid: data[out[q].qid.clone()].to_vec(),
                    docid: docid.to_vec(),
                };
                return Err((line.number, reason));
            }
            continue;
        }
        let g = gain(&data[line.fields[3].clone()]).expect("an integer");
        out[q].judged.push((line.fields[2].clone(), g));
    }
    Ok(out)
}

/// The first query that `fuse` cannot fuse: its id, what the reference raises, and the key it
/// names (a doc id; empty where the error names none: a raw score, `norm='max'`).
#[derive(Debug)]
pub struct FuseError {
    pub qid: Vec<u8>,
    pub failure: crate::fusion::Failure,
    pub key: Vec<u8>,
}

/// What `write_run(fuse(runs, ...), tag=tag)` writes for the runs read from `files` (each its
/// bytes and its queries): queries in order of first appearance in the first file, then the
/// queries only the second has, ...; each fused by `o.method` over the runs' doc id lists (an
/// empty list where a run lacks the query) and, where the method reads them, their scores (each
/// must be finite: every score of every run, in order); lines `qid Q0 docid rank repr(score)
/// tag`.
pub fn fuse(
    files: &[(&[u8], &[RunQuery])],
    o: &crate::fusion::Options,
    tag: &[u8],
) -> Result<Vec<u8>, FuseError> {
    use crate::fusion::Failure;
    let mut qids: Vec<&[u8]> = Vec::new();
    for (data, queries) in files {
        for q in queries.iter() {
            let qid = &data[q.qid.clone()];
            if !qids.contains(&qid) {
                qids.push(qid);
            }
        }
    }
    let mut out = Vec::new();
    for qid in qids {
        let docs: Vec<Vec<&[u8]>> = files
            .iter()
            .map(|(data, queries)| {
                queries
                    .iter()
                    .find(|q| &data[q.qid.clone()] == qid)
                    .map_or(Vec::new(), |q| {
                        q.docids.iter().map(|d| &data[d.clone()]).collect()
                    })
            })
            .collect();
        // Doc ids as keys: equal bytes, equal keys.
        let mut names: Vec<&[u8]> = Vec::new();
        let lists: Vec<Vec<Option<i64>>> = docs
            .iter()
            .map(|list| {
                list.iter()
                    .map(|&d| {
                        let id = names.iter().position(|&n| n == d).unwrap_or_else(|| {
                            names.push(d);
                            names.len() - 1
                        });
                        Some(id as i64)
                    })
                    .collect()
            })
            .collect();
        let scores: Vec<&[f64]> = files
            .iter()
            .map(|(data, queries)| {
                queries
                    .iter()
                    .find(|q| &data[q.qid.clone()] == qid)
                    .map_or(&[][..], |q| &q.scores[..])
            })
            .collect();
        let reads = crate::fusion::reads_scores(o);
        let checked = || -> Result<(), Failure> {
            if !reads {
                return Ok(());
            }
            for (list, s) in scores.iter().enumerate() {
                if let Some(position) = s.iter().position(|x| !x.is_finite()) {
                    return Err(Failure::RawScore { list, position });
                }
            }
            Ok(())
        };
        let raw: Vec<Option<Vec<f64>>> = scores.iter().map(|s| reads.then(|| s.to_vec())).collect();
        let fused = checked().and_then(|()| crate::fusion::fuse(&lists, &raw, o));
        let hits = fused.map_err(|failure| {
            let key = match &failure {
                Failure::Duplicate { list, position } => docs[*list][*position].to_vec(),
                Failure::NonFiniteNormalized { key, .. } | Failure::NonFiniteScore { key, .. } => {
                    names[*key as usize].to_vec()
                }
                Failure::NegativeMax | Failure::RawScore { .. } => Vec::new(),
            };
            FuseError {
                qid: qid.to_vec(),
                failure,
                key,
            }
        })?;
        for (rank, hit) in hits.iter().enumerate() {
            out.extend_from_slice(qid);
            out.extend_from_slice(b" Q0 ");
            out.extend_from_slice(names[hit.key as usize]);
            out.extend_from_slice(
                format!(" {} {} ", rank + 1, crate::repr::py_repr(hit.score)).as_bytes(),
            );
            out.extend_from_slice(tag);
            out.push(b'\n');
        }
    }
    Ok(out)
}

/// What Python's `float()` makes of an ASCII field, from Rust's parser (the same grammar but for
/// underscores): PEP 515 underscores, each between two digits, are dropped first.
pub fn py_float(t: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(t).ok()?;
    without_underscores(text)?.parse().ok()
}

/// What Python's `int()` makes of an ASCII field: `[sign] digits` with PEP 515 underscores; an
/// `Err` for a valid integer that does not fit in an i64.
pub fn py_int(t: &[u8]) -> Option<Result<i64, ()>> {
    let text = without_underscores(std::str::from_utf8(t).ok()?)?;
    let digits = text.strip_prefix(['+', '-']).unwrap_or(&text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse::<i64>().map_err(|_| ()))
}

/// `text` without its underscores, when each stands between two ASCII digits.
fn without_underscores(text: &str) -> Option<String> {
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_' {
            let before = i > 0 && b[i - 1].is_ascii_digit();
            let after = b.get(i + 1).is_some_and(u8::is_ascii_digit);
            if !(before && after) {
                return None;
            }
        }
    }
    Some(text.replace('_', ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_fields_as_python_splits_them() {
        let data = b"\xef\xbb\xbfa b\r\nc\xc2\xa0d\re\x1cf\n\n \xff\t";
        let got: Vec<(usize, Vec<&[u8]>)> = lines(data)
            .iter()
            .map(|l| {
                (
                    l.number,
                    l.fields.iter().map(|f| &data[f.clone()]).collect(),
                )
            })
            .collect();
        let want: Vec<(usize, Vec<&[u8]>)> = vec![
            (1, vec![b"a", b"b"]),
            (2, vec![b"c", b"d"]),
            (3, vec![b"e", b"f"]),
            (4, vec![]),
            (5, vec![b"\xff"]),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn numbers_as_python_reads_them() {
        assert_eq!(py_float(b"1_0.2_5e1_0"), Some(10.25e10));
        assert_eq!(py_float(b"-InFiNiTy"), Some(f64::NEG_INFINITY));
        assert_eq!(py_float(b"1."), Some(1.0));
        for bad in [
            &b"1__0"[..],
            b"_1",
            b"1_",
            b"1_.5",
            b"1._5",
            b".",
            b"e5",
            b"1e",
        ] {
            assert_eq!(py_float(bad), None, "{bad:?}");
        }
        assert_eq!(py_int(b"-0_07"), Some(Ok(-7)));
        assert_eq!(py_int(b"99999999999999999999"), Some(Err(())));
        assert_eq!(py_int(b"1.0"), None);
        assert_eq!(py_int(b"+"), None);
    }

    #[test]
    fn trec_eval_order_sorts_ties_by_doc_id_descending() {
        let data = b"q Q0 a 1 1 t\nq Q0 c 2 2 t\nq Q0 b 3 2 t\n";
        let score = |t: &[u8]| py_float(t);
        let run = read_run(data, Order::Score, ReadDuplicates::Error, score).unwrap();
        let docs: Vec<&[u8]> = run[0].docids.iter().map(|d| &data[d.clone()]).collect();
        assert_eq!(docs, [&b"c"[..], b"b", b"a"]);
    }
}
