//! Run lines as `rankfusion.trec.write_run` writes them: `qid Q0 docid rank score tag\n`, ranks
//! 1..n, the score as Python's `repr` writes it.

use super::is_id;
use crate::format::{self, push_usize};

/// The lines of one query (ranks 1..): `docids[i]` with `scores[i]`, for the shorter's length
/// (like `zip`); `None` when any doc id is one a reader would not read back (empty, with
/// whitespace) or any score is NaN (which the reader refuses).
pub fn query_lines(qid: &[u8], tag: &[u8], docids: &[&[u8]], scores: &[f64]) -> Option<Vec<u8>> {
    if !docids.iter().all(|d| is_id(d)) || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let n = docids.len().min(scores.len());
    let mut out = Vec::with_capacity(n * (qid.len() + tag.len() + 40));
    for (i, (docid, &score)) in docids.iter().zip(scores).enumerate() {
        push_line(&mut out, qid, docid, i + 1, score, tag);
    }
    Some(out)
}

/// Appends one line `qid Q0 docid rank score tag\n`.
pub fn push_line(out: &mut Vec<u8>, qid: &[u8], docid: &[u8], rank: usize, score: f64, tag: &[u8]) {
    out.extend_from_slice(qid);
    out.extend_from_slice(b" Q0 ");
    out.extend_from_slice(docid);
    out.push(b' ');
    push_usize(out, rank);
    out.push(b' ');
    format::push_float(out, score);
    out.push(b' ');
    out.extend_from_slice(tag);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_python_writes_them() {
        let mut out = Vec::new();
        push_usize(&mut out, 0);
        out.push(b' ');
        push_usize(&mut out, 18_446_744_073_709_551_615);
        assert_eq!(out, b"0 18446744073709551615");
        let mut line = Vec::new();
        push_line(&mut line, b"q1", b"d\xff", 12, 1.0 / 61.0, b"t");
        assert_eq!(line, b"q1 Q0 d\xff 12 0.01639344262295082 t\n");
        let lines = query_lines(b"q", b"t", &[b"a", b"b", b"c"], &[2.0, 0.5]);
        assert_eq!(
            lines.as_deref(),
            Some(&b"q Q0 a 1 2.0 t\nq Q0 b 2 0.5 t\n"[..])
        );
        assert_eq!(query_lines(b"q", b"t", &[b"a", b"b c"], &[2.0]), None);
        assert_eq!(query_lines(b"q", b"t", &[b"a"], &[2.0, f64::NAN]), None);
        assert_eq!(query_lines(b"q", b"t", &[b""], &[]), None);
    }
}
