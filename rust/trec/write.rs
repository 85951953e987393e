//! Run lines as `rankfusion.trec.write_run` writes them: `qid Q0 docid rank score tag\n`, ranks
//! 1..n, the score as Python's `repr` writes it.

use crate::format::{self, push_usize};

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
    }
}
