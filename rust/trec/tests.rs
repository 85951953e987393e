//! Tests of the TREC parsers and writer.

use std::cmp::Ordering;

use super::lex::*;
use super::parse::*;
use super::*;
use crate::error::{At, Error, Problem};
use crate::format::{self as pyrepr, repr_approx};

/// (line, reason rendered by `repr_approx`) of a malformed file's error.
fn line_reason(e: &Error) -> (usize, String) {
    match (&e.at, &e.problem) {
        (At::Line(Some(line)), Problem::Malformed(reason)) => {
            (*line, reason.render(&mut repr_approx))
        }
        _ => panic!("not a malformed file: {e:?}"),
    }
}

fn score_value(t: &[u8]) -> Option<f64> {
    match parse_score(t) {
        Number::Value(v) => Some(v),
        _ => None,
    }
}

/// (qid, [(docid, score)]) per query, ids as text.
fn run(text: &[u8], order: Order, dups: ReadDuplicates) -> Vec<(String, Vec<(String, f64)>)> {
    parse_run(text, order, dups, score_value)
        .unwrap()
        .into_iter()
        .map(|q| {
            let s = |r: &Span| String::from_utf8_lossy(&text[r.clone()]).into_owned();
            let pairs = q.docids.iter().map(s).zip(q.scores.iter().copied());
            (s(&q.qid), pairs.collect())
        })
        .collect()
}

fn error(text: &[u8], order: Order, dups: ReadDuplicates) -> (usize, String) {
    let e = parse_run(text, order, dups, score_value).unwrap_err();
    line_reason(&e)
}

fn docs(q: &(String, Vec<(String, f64)>)) -> Vec<&str> {
    q.1.iter().map(|(d, _)| d.as_str()).collect()
}

#[test]
fn scores_as_python_float_reads_them() {
    let ok: &[(&str, f64)] = &[
        ("1", 1.0),
        ("+1.5", 1.5),
        ("-2", -2.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("1.e5", 1e5),
        ("1E-3", 1e-3),
        ("-0", -0.0),
        ("1_000.000_1", 1000.0001),
        ("1e1_0", 1e10),
        ("1e400", f64::INFINITY),
        ("-1e400", f64::NEG_INFINITY),
        ("1e-400", 0.0),
        ("0.1", 0.1),
        ("3.141592653589793238462643383279", std::f64::consts::PI),
        ("inf", f64::INFINITY),
        ("-Infinity", f64::NEG_INFINITY),
        ("+iNf", f64::INFINITY),
        ("1e0000000000000000000000000005", 1e5),
        ("1e99999999999999999999", f64::INFINITY),
    ];
    for &(text, value) in ok {
        match parse_score(text.as_bytes()) {
            Number::Value(v) => assert_eq!(v.to_bits(), value.to_bits(), "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    for nan in ["nan", "-NaN", "+nAn"] {
        assert!(matches!(parse_score(nan.as_bytes()), Number::Value(v) if v.is_nan()));
    }
    for bad in [
        "",
        "+",
        "-",
        ".",
        "e5",
        "1e",
        "1e+",
        "1.5.2",
        "0x10",
        "1,5",
        "abc",
        "1_",
        "_1",
        "1__0",
        "1_.5",
        "1._5",
        "1e_5",
        "1_e5",
        "infinit",
        "infinityy",
        "nan1",
        "in f",
        "--1",
        "+-1",
        "1e5.0",
        "١",
    ] {
        let expected = if bad.is_ascii() {
            Number::Invalid
        } else {
            Number::Unknown
        };
        assert_eq!(parse_score(bad.as_bytes()), expected, "{bad:?}");
    }
}

#[test]
fn gains_as_python_int_reads_them() {
    for (text, value) in [
        ("0", 0),
        ("-1", -1),
        ("+3", 3),
        ("007", 7),
        ("1_000", 1000),
        ("9223372036854775807", i64::MAX),
        ("-9223372036854775808", i64::MIN),
    ] {
        assert_eq!(parse_gain(text.as_bytes()), Number::Value(value), "{text}");
    }
    for bad in [
        "", "-", "1.5", "1e3", "high", "_1", "1_", "0x1", "1__0", "inf",
    ] {
        assert_eq!(parse_gain(bad.as_bytes()), Number::Invalid, "{bad:?}");
    }
    for unknown in ["9223372036854775808", "99999999999999999999999", "１"] {
        assert_eq!(
            parse_gain(unknown.as_bytes()),
            Number::Unknown,
            "{unknown:?}"
        );
    }
}

#[test]
fn trec_eval_order_and_file_order() {
    let text = b"q Q0 d10 1 5 t\nq Q0 d2 2 5 t\nq Q0 d9 3 5 t\nq Q0 a 4 7 t\n\
                 q Q0 z 5 1 t\nq Q0 b 6 1 t\nq Q0 y 7 -2.5 t\n";
    let by_score = run(text, Order::Score, ReadDuplicates::Error);
    assert_eq!(docs(&by_score[0]), ["a", "d9", "d2", "d10", "z", "b", "y"]);
    let scores: Vec<f64> = by_score[0].1.iter().map(|p| p.1).collect();
    assert_eq!(scores, [7.0, 5.0, 5.0, 5.0, 1.0, 1.0, -2.5]);
    let by_file = run(text, Order::File, ReadDuplicates::Error);
    assert_eq!(docs(&by_file[0]), ["d10", "d2", "d9", "a", "z", "b", "y"]);
}

#[test]
fn ties_in_sorted_scores_keep_each_position_score() {
    // Non-increasing scores: only the doc ids of a tie group move (as in the Python code).
    let text = b"q Q0 a 1 0.0 t\nq Q0 b 2 -0.0 t\n";
    let q = &run(text, Order::Score, ReadDuplicates::Keep)[0];
    assert_eq!(docs(q), ["b", "a"]);
    assert_eq!(q.1[0].1.to_bits(), 0.0f64.to_bits());
    assert_eq!(q.1[1].1.to_bits(), (-0.0f64).to_bits());
}

#[test]
fn whitespace_line_breaks_bom_and_blank_lines() {
    let text = "\u{feff}q1\tQ0\td1\t1\t2.5\tt\r\n\r\n  q1  Q0 d2 2   1.5 t  \r\nq2\u{a0}Q0\u{2028}d3\x0b1\x1c1e3\u{3000}t\rq3 Q0 d4 1 1 t";
    let parsed = run(text.as_bytes(), Order::File, ReadDuplicates::Error);
    let expected = vec![
        (
            "q1".to_owned(),
            vec![("d1".to_owned(), 2.5), ("d2".to_owned(), 1.5)],
        ),
        ("q2".to_owned(), vec![("d3".to_owned(), 1000.0)]),
        ("q3".to_owned(), vec![("d4".to_owned(), 1.0)]),
    ];
    assert_eq!(parsed, expected);
    // a lone \r ends a line: the bad score is on line 4
    assert_eq!(
        error(
            b"q Q0 a 1 1 t\rq Q0 b 1 2 t\r\rq Q0 c 1 x t",
            Order::Score,
            ReadDuplicates::Error
        ),
        (4, "score is not a number, got 'x'".to_owned())
    );
    // nothing but a BOM, blank lines or nothing: no queries
    for empty in [&b""[..], b"\xef\xbb\xbf", b"\n \r\n\t\n"] {
        assert!(
            parse_run(empty, Order::Score, ReadDuplicates::Error, score_value)
                .unwrap()
                .is_empty()
        );
    }
    // an undecodable byte is no whitespace, an invalid sequence before a space is split
    let text = b"q Q0 a\xa0b 1 1 t\nq Q0 \xe2\xc2\xa0x 2 t";
    let parsed = parse_run(text, Order::File, ReadDuplicates::Keep, score_value).unwrap();
    assert_eq!(&text[parsed[0].docids[0].clone()], b"a\xa0b");
    assert_eq!(&text[parsed[0].docids[1].clone()], b"\xe2");
    assert_eq!(parsed[0].scores, [1.0, 2.0]);
}

#[test]
fn field_count_errors_come_first_and_quote_the_stripped_line() {
    let text = b"q Q0 a 1 x t\nq Q0 b 1 nan t\n  q Q0 c 1 \t\r\n";
    assert_eq!(
        error(text, Order::Score, ReadDuplicates::Error),
        (
            3,
            "expected 6 fields (qid Q0 docid rank score tag), found 4: 'q Q0 c 1'".to_owned()
        )
    );
    let long = format!("q Q0 a 1 1{}\n", " t".repeat(40));
    let (line, message) = error(long.as_bytes(), Order::Score, ReadDuplicates::Error);
    assert_eq!(line, 1);
    assert!(message.contains("found 45: 'q Q0 a 1 1 t t t"));
    assert!(message.ends_with(" t ...'"), "{message}");
    // then the first score that is not a number, even after a NaN
    let text = b"q Q0 a 1 nan t\nq Q0 b 1 x t\n";
    assert_eq!(error(text, Order::Score, ReadDuplicates::Error).0, 2);
    let text = b"q Q0 a 1 1 t\nq Q0 b 1 -NaN t\n";
    assert_eq!(
        error(text, Order::Score, ReadDuplicates::Keep),
        (2, "score is NaN, got '-NaN'".to_owned())
    );
    // lines that only balance out: 5 fields then 7
    let text = b"q Q0 a 1 2.0\nq Q0 b 2 1.0 t t\n";
    assert_eq!(error(text, Order::Score, ReadDuplicates::Error).0, 1);
}

#[test]
fn shown_text_counts_characters_not_bytes() {
    let text = "é".repeat(81);
    let cut = shown(text.as_bytes());
    assert_eq!(cut, format!("{}...", "é".repeat(77)).into_bytes());
    let raw = vec![0xffu8; 81];
    assert_eq!(shown(&raw).len(), 80);
    assert_eq!(shown(&raw[..80]).len(), 80);
}

#[test]
fn duplicates() {
    let text = b"q Q0 a 1 3 t\nq Q0 b 2 2 t\nr Q0 a 1 1 t\nq Q0 a 3 5 t\n";
    assert_eq!(
        error(text, Order::Score, ReadDuplicates::Error),
        (
            4,
            "query 'q' has doc 'a' twice (first on line 1)".to_owned()
        )
    );
    let first = run(text, Order::Score, ReadDuplicates::First);
    assert_eq!(first[0].1, [("a".to_owned(), 5.0), ("b".to_owned(), 2.0)]);
    let first = run(text, Order::File, ReadDuplicates::First);
    assert_eq!(first[0].1, [("a".to_owned(), 3.0), ("b".to_owned(), 2.0)]);
    let keep = run(text, Order::Score, ReadDuplicates::Keep);
    assert_eq!(docs(&keep[0]), ["a", "a", "b"]);
    assert_eq!(docs(&keep[1]), ["a"]);
}

#[test]
fn non_contiguous_queries_are_gathered_in_first_seen_order() {
    let text = b"q1 Q0 a 1 3 t\nq2 Q0 x 1 9 t\nq1 Q0 b 2 4 t\n";
    let parsed = run(text, Order::Score, ReadDuplicates::Error);
    assert_eq!(parsed[0].0, "q1");
    assert_eq!(docs(&parsed[0]), ["b", "a"]);
    assert_eq!(parsed[1].0, "q2");
    let parsed = run(text, Order::File, ReadDuplicates::Error);
    assert_eq!(docs(&parsed[0]), ["a", "b"]);
}

#[test]
fn doc_ids_compare_as_python_strings() {
    // U+20AC (valid) vs an undecodable E2 82: Python compares U+20AC < U+DCE2.
    assert_eq!(py_str_cmp(b"\xe2\x82\xac", b"\xe2\x82A"), Ordering::Less);
    assert_eq!(
        b"\xe2\x82\xac"[..].cmp(&b"\xe2\x82A"[..]),
        Ordering::Greater
    );
    // A file with an undecodable byte sorts its ties by code point.
    let text = b"q Q0 \xe2\x82\xac 1 1 t\nq Q0 \xe2\x82A 2 1 t\n";
    let parsed = parse_run(text, Order::Score, ReadDuplicates::Error, score_value).unwrap();
    assert_eq!(&text[parsed[0].docids[0].clone()], b"\xe2\x82A");
    assert_eq!(py_str_cmp(b"b", b"a"), Ordering::Greater);
    assert_eq!(py_str_cmp(b"a", b"ab"), Ordering::Less);
}

#[test]
fn full_sort_when_scores_are_not_in_order() {
    let text = b"q Q0 a 1 1 t\nq Q0 b 2 3 t\nq Q0 c 3 1 t\nq Q0 d 4 inf t\nq Q0 e 5 -inf t\n";
    let q = &run(text, Order::Score, ReadDuplicates::Error)[0];
    assert_eq!(docs(q), ["d", "b", "c", "a", "e"]);
}

#[test]
fn qrels() {
    let text = b"1 0 d1 2\n1 0 d2 0\n\n2 0 d1 -1\n2\t0\td9\t1\n1 0 d1 5\n";
    let e = parse_qrels(text, ReadDuplicates::Error, |t| match parse_gain(t) {
        Number::Value(v) => Some(v),
        _ => None,
    })
    .unwrap_err();
    assert_eq!(
        line_reason(&e),
        (6, "query '1' judges doc 'd1' twice".to_owned())
    );
    let parsed = parse_qrels(text, ReadDuplicates::First, |t| match parse_gain(t) {
        Number::Value(v) => Some(v),
        _ => None,
    })
    .unwrap();
    let gains: Vec<Vec<i64>> = parsed
        .iter()
        .map(|q| q.judged.iter().map(|j| j.1).collect())
        .collect();
    assert_eq!(gains, [vec![2, 0], vec![-1, 1]]);
    let e = parse_qrels(
        b"1 0 a 1\n1 0 b 1.5\n1 0 c\n",
        ReadDuplicates::Error,
        |_| Some(0),
    )
    .unwrap_err();
    assert_eq!(line_reason(&e).0, 3);
    let e = parse_qrels(b"1 0 a 1\n1 0 b 1.5\n", ReadDuplicates::Error, |t| {
        (t == b"1").then_some(1)
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 2: gain is not an integer, got '1.5'".to_owned()
    );
}

#[test]
fn ids_for_writing() {
    assert!(is_id(b"doc-1"));
    assert!(is_id("é".as_bytes()));
    for bad in ["", "a b", "a\tb", "a\nb", "a\u{a0}b", "a\u{3000}", "\u{1c}"] {
        assert!(!is_id(bad.as_bytes()), "{bad:?}");
    }
}

#[test]
fn float_repr_as_python_writes_it() {
    // (value, Python's repr), from CPython 3.11
    let cases: &[(f64, &str)] = &[
        (1.0, "1.0"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1.0 / 3.0, "0.3333333333333333"),
        (1e16, "1e+16"),
        (1e15, "1000000000000000.0"),
        (1234567890123456.0, "1234567890123456.0"),
        (12345678901234568.0, "1.2345678901234568e+16"),
        (1e-4, "0.0001"),
        (1.5e-4, "0.00015"),
        (1e-5, "1e-05"),
        (1.5e-7, "1.5e-07"),
        (-1e-300, "-1e-300"),
        (1e19, "1e+19"),
        (5e-324, "5e-324"),
        (1.7976931348623157e-300, "1.7976931348623157e-300"),
        (0.03600239892487974, "0.03600239892487974"),
        (123.456, "123.456"),
        (29.971397, "29.971397"),
        (100.0, "100.0"),
    ];
    for &(x, expected) in cases {
        assert_eq!(pyrepr::float(x), expected);
    }
    // what the old formatter left to CPython: zero, non-finite, ties between two shortest
    // decimals (to even), and integers from 1e21 on
    let pow50 = 1125899906842624.0; // 2^50
    for (x, expected) in [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (f64::INFINITY, "inf"),
        (f64::NAN, "nan"),
        (pow50 + 0.25, "1125899906842624.2"),
        (pow50 + 0.75, "1125899906842624.8"),
        (1e22, "1e+22"),
        (f64::MAX, "1.7976931348623157e+308"),
    ] {
        assert_eq!(pyrepr::float(x), expected);
    }
}

#[test]
fn classify_marks_delimiters_breaks_and_other_bytes() {
    let mut block = [b'x'; 64];
    block[0] = b' ';
    block[9] = b'\t';
    block[17] = b'\n';
    block[30] = 0x7f; // DEL: a token byte
    block[40] = b'\r';
    block[50] = 0xc2;
    block[63] = 0x1c;
    let (delimiters, breaks, other) = classify(&block);
    assert_eq!(delimiters, 1 | 1 << 9 | 1 << 17);
    assert_eq!(breaks, 1 << 17);
    assert_eq!(other, 1 << 40 | 1 << 50 | 1 << 63);
    for b in 0..=255u8 {
        let (d, n, o) = classify(&[b; 64]);
        let expected = match b {
            b' ' | b'\t' => (u64::MAX, 0, 0),
            b'\n' => (u64::MAX, u64::MAX, 0),
            0x21..=0x7f => (0, 0, 0),
            _ => (0, 0, u64::MAX),
        };
        assert_eq!((d, n, o), expected, "{b:#x}");
    }
}

#[test]
fn long_files_read_the_same_by_blocks_and_byte_by_byte() {
    // Lines of every length around the 64-byte blocks, some with a byte that sends them to
    // the byte-by-byte reader, against that reader alone.
    let mut text = Vec::new();
    for i in 0..400usize {
        let pad = "p".repeat(i % 70);
        let sep = match i % 9 {
            0 => "\t",
            1 => "  ",
            _ => " ",
        };
        let line = format!(
            "q{} Q0 d{pad}{i}{sep}1 {} t{}",
            i % 7,
            i % 13,
            " ".repeat(i % 3)
        );
        text.extend_from_slice(line.as_bytes());
        text.extend_from_slice(match i % 23 {
            0 => b"\r\n",
            1 => b"\n\n",
            2 => "\u{a0}\n".as_bytes(),
            _ => b"\n",
        });
    }
    text.extend_from_slice(b"q Q0 last 1 1 t"); // no final newline
    let mut by_blocks = Vec::new();
    for_each_line::<RUN_FIELDS, ()>(&text, |l| {
        by_blocks.push((l.number, l.text.clone(), l.count, l.fields.clone()));
        Ok(())
    })
    .unwrap();
    let mut by_bytes = Vec::new();
    let mut line = Line {
        number: 0,
        text: 0..0,
        count: 0,
        fields: std::array::from_fn(|_| 0..0),
    };
    let mut i = 0;
    while i < text.len() {
        i = any_line::<RUN_FIELDS, ()>(&text, i, &mut line, &mut |l| {
            by_bytes.push((l.number, l.text.clone(), l.count, l.fields.clone()));
            Ok(())
        })
        .unwrap();
    }
    let blank = (0..400).filter(|i| i % 23 == 1).count();
    assert_eq!(by_blocks.len(), 400 + blank + 1);
    // fields past the count are left over from earlier lines: compare the used ones
    let used = |v: Vec<(usize, Span, usize, [Span; 6])>| {
        v.into_iter()
            .map(|(n, t, c, f)| (n, t, c, f[..c.min(6)].to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(used(by_blocks), used(by_bytes));
}

#[test]
fn approximate_repr() {
    assert_eq!(repr_approx(b"abc"), "'abc'");
    assert_eq!(repr_approx(b"it's"), "\"it's\"");
    assert_eq!(repr_approx(b"'\""), "'\\'\"'");
    assert_eq!(repr_approx(b"a\tb\\"), "'a\\tb\\\\'");
    assert_eq!(repr_approx(b"caf\xe9"), "'caf\\udce9'");
    assert_eq!(repr_approx("é\u{a0}".as_bytes()), "'é\\xa0'");
}

#[test]
fn fields_left_undecided_go_to_the_fallback() {
    let never = |_: &[u8]| -> Option<f64> { panic!("asked") };
    assert_eq!(score_or(b"1.5", never), Some(1.5));
    assert_eq!(score_or(b"x", never), None);
    // Full-width digits: the fallback's answer, whatever it is.
    let full_width = "\u{ff11}".as_bytes();
    assert_eq!(score_or(full_width, |t| Some(t.len() as f64)), Some(3.0));
    assert_eq!(score_or(full_width, |_| None), None);
    let never = |_: &[u8]| -> Option<String> { panic!("asked") };
    assert_eq!(gain_or(b"-2", never), Some(Gain::Small(-2)));
    assert_eq!(gain_or(b"1.5", never), None);
    let big = b"99999999999999999999";
    let text = |t: &[u8]| Some(String::from_utf8_lossy(t).into_owned());
    assert_eq!(
        gain_or(big, text),
        Some(Gain::Big("99999999999999999999".into()))
    );
    assert_eq!(gain_or(big, |_| None::<String>), None);
}

#[test]
fn signals_are_checked_before_a_query_once_enough_lines_were_made() {
    let query = |n: usize| RunQuery {
        qid: 0..1,
        docids: vec![0..1; n],
        scores: vec![0.0; n],
    };
    let queries = [
        query(CHECK_LINES - 1),
        query(1),
        query(5),
        query(CHECK_LINES),
        query(0),
        query(2),
    ];
    let checks: Vec<bool> = check_points(&queries).collect();
    assert_eq!(checks, [false, false, true, false, true, false]);
    assert_eq!(check_points(&[]).count(), 0);
}

#[test]
fn run_files_are_parsed_each_to_its_queries_or_its_error() {
    let files: [&[u8]; 3] = [b"1 Q0 a 1 2.0 t\n", b"1 Q0 a 1\n", b""];
    let cancel = crate::cancel::Cancel::none();
    let parse = |cancel| {
        parse_runs(
            &files,
            Order::Score,
            ReadDuplicates::Error,
            score_value,
            cancel,
        )
    };
    let parsed = parse(&cancel).unwrap();
    assert_eq!(parsed.len(), 3);
    assert_eq!(parsed[0].as_ref().map(Vec::len), Ok(1));
    assert_eq!(line_reason(parsed[1].as_ref().unwrap_err()).0, 1);
    assert_eq!(parsed[2], Ok(vec![]));
    cancel.stop();
    let e = parse(&cancel);
    assert_eq!(e.unwrap_err().problem, Problem::Interrupted);
}
