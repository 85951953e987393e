//! TREC run and qrels files, parsed from the whole (already decompressed) file in memory.
//!
//! The semantics are those `rankfusion.trec` had when it read a file as text decoded from UTF-8
//! with `surrogateescape`, in universal-newlines mode, and split each line with `str.split()`
//! (docs/cli.md):
//! - a line ends at `\n`, `\r\n` or a lone `\r`; lines are numbered from 1, blank ones included;
//!   a UTF-8 byte-order mark at the very start is skipped;
//! - fields are separated by what Python calls whitespace: ASCII tab, `\x0b`, `\x0c`,
//!   `\x1c`-`\x1f` and space, and the Unicode spaces U+0085, U+00A0, U+1680, U+2000-U+200A,
//!   U+2028, U+2029, U+202F, U+205F and U+3000 (encoded in UTF-8; a byte that is not valid UTF-8
//!   is never whitespace);
//! - ids are byte ranges of the input. Two ids are equal when their bytes are (the
//!   `surrogateescape` decoding is one-to-one) and are ordered as Python orders the decoded
//!   strings (code point by code point; an undecodable byte `b` is the code point `0xDC00 + b`).
//!
//! Errors are values ([`TrecError`]): the 1-based line and a [`Reason`] whose quoted texts are
//! bytes of the input, rendered by the caller (the Python binding renders them with `repr`).
//! When a file has several errors, the one reported is the first line with the wrong number of
//! fields, else the first score (gain) that is not a number (an integer), else the first NaN
//! score, else the first duplicate.
//!
//! For the writer: [`is_id`] (what an id may be) and [`push_float_repr`] (Python's `repr` of a
//! float).

use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;

use foldhash::fast::FixedState;
use hashbrown::hash_map::Entry;
use hashbrown::{HashMap, HashSet};

/// A byte range of the input.
pub type Span = Range<usize>;

pub const RUN_FIELDS: usize = 6;
pub const RUN_FORMAT: &str = "qid Q0 docid rank score tag";
pub const QRELS_FIELDS: usize = 4;
pub const QRELS_FORMAT: &str = "qid 0 docid gain";
/// A line quoted in an error is cut to this many characters (code points).
const SHOWN_CHARS: usize = 80;

/// How a run ranks a query's documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// trec_eval's order: score descending, ties by doc id descending.
    Score,
    /// The order of the lines.
    File,
}

impl Order {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "score" => Some(Self::Score),
            "file" => Some(Self::File),
            _ => None,
        }
    }
}

/// What a doc id on two lines of one query does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadDuplicates {
    /// An error naming both lines.
    Error,
    /// Only the best-ranked line (run) or the first line (qrels) is kept.
    First,
    /// Every line is kept.
    Keep,
}

impl ReadDuplicates {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "error" => Some(Self::Error),
            "first" => Some(Self::First),
            "keep" => Some(Self::Keep),
            _ => None,
        }
    }
}

/// Why a file cannot be read. Quoted texts are the input's bytes.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason {
    /// A line with the wrong number of fields; `text` is the line without its leading and
    /// trailing whitespace, cut to 77 characters and `...` when it is longer than 80.
    Fields {
        expected: usize,
        format: &'static str,
        found: usize,
        text: Vec<u8>,
    },
    /// A run score that Python's `float()` rejects.
    NotANumber { text: Vec<u8> },
    /// A run score that is NaN.
    NaN { text: Vec<u8> },
    /// A doc id twice in one query of a run (`ReadDuplicates::Error`).
    DuplicateDoc {
        qid: Vec<u8>,
        docid: Vec<u8>,
        first_line: usize,
    },
    /// A qrels gain that Python's `int()` rejects.
    NotAnInteger { text: Vec<u8> },
    /// A doc judged twice for one query (`ReadDuplicates::Error`).
    DuplicateJudgment { qid: Vec<u8>, docid: Vec<u8> },
}

impl Reason {
    /// The message, each quoted text rendered by `repr`.
    pub fn render(&self, repr: &mut dyn FnMut(&[u8]) -> String) -> String {
        match self {
            Reason::Fields {
                expected,
                format,
                found,
                text,
            } => format!(
                "expected {expected} fields ({format}), found {found}: {}",
                repr(text)
            ),
            Reason::NotANumber { text } => format!("score is not a number, got {}", repr(text)),
            Reason::NaN { text } => format!("score is NaN, got {}", repr(text)),
            Reason::DuplicateDoc {
                qid,
                docid,
                first_line,
            } => format!(
                "query {} has doc {} twice (first on line {first_line})",
                repr(qid),
                repr(docid)
            ),
            Reason::NotAnInteger { text } => format!("gain is not an integer, got {}", repr(text)),
            Reason::DuplicateJudgment { qid, docid } => {
                format!("query {} judges doc {} twice", repr(qid), repr(docid))
            }
        }
    }
}

/// A malformed line: its 1-based number and the reason.
#[derive(Clone, Debug, PartialEq)]
pub struct TrecError {
    pub line: usize,
    pub reason: Reason,
}

impl fmt::Display for TrecError {
    /// `line N: reason`, texts quoted by [`repr_approx`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {}",
            self.line,
            self.reason.render(&mut repr_approx)
        )
    }
}

impl std::error::Error for TrecError {}

/// One query of a run, ranked: `docids[i]` (a byte range of the input) has score `scores[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunQuery {
    pub qid: Span,
    pub docids: Vec<Span>,
    pub scores: Vec<f64>,
}

/// One query of a qrels file: its judged docs with their gains, in the order of the lines.
#[derive(Clone, Debug, PartialEq)]
pub struct QrelsQuery<G> {
    pub qid: Span,
    pub judged: Vec<(Span, G)>,
}

// --- numbers ----------------------------------------------------------------------------------

/// A number parsed from a field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number<T> {
    Value(T),
    /// Python rejects it.
    Invalid,
    /// Not decided here: the field holds a non-ASCII byte (Python maps every Unicode decimal
    /// digit to its ASCII digit before parsing), or an integer does not fit in an i64. The
    /// binding asks Python's own `float()` / `int()`.
    Unknown,
}

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

// --- lines and fields -------------------------------------------------------------------------

const TOKEN: u8 = 0;
const SPACE: u8 = 1;
const BREAK: u8 = 2;
/// The first byte of a UTF-8 sequence that may be a Unicode space.
const LEAD: u8 = 3;

static CLASS: [u8; 256] = {
    let mut t = [TOKEN; 256];
    t[b'\t' as usize] = SPACE;
    t[0x0b] = SPACE;
    t[0x0c] = SPACE;
    t[0x1c] = SPACE;
    t[0x1d] = SPACE;
    t[0x1e] = SPACE;
    t[0x1f] = SPACE;
    t[b' ' as usize] = SPACE;
    t[b'\n' as usize] = BREAK;
    t[b'\r' as usize] = BREAK;
    t[0xc2] = LEAD;
    t[0xe1] = LEAD;
    t[0xe2] = LEAD;
    t[0xe3] = LEAD;
    t
};

/// The length of the Unicode space encoded at the start of `rest`, or 0. None of these lead
/// bytes can be a continuation byte, so a match is a character the decoder sees.
fn unicode_space(rest: &[u8]) -> usize {
    match rest {
        [0xc2, 0x85 | 0xa0, ..] => 2,
        [0xe1, 0x9a, 0x80, ..]
        | [0xe2, 0x80, 0x80..=0x8a | 0xa8 | 0xa9 | 0xaf, ..]
        | [0xe2, 0x81, 0x9f, ..]
        | [0xe3, 0x80, 0x80, ..] => 3,
        _ => 0,
    }
}

/// The length of the whitespace (not a line break) at `data[i]`, or 0.
#[inline]
fn space_at(data: &[u8], i: usize) -> usize {
    match CLASS[data[i] as usize] {
        SPACE => 1,
        LEAD => unicode_space(&data[i..]),
        _ => 0,
    }
}

/// `text` without leading and trailing whitespace (Python's `str.strip()`).
fn strip(text: &[u8]) -> &[u8] {
    let mut start = 0;
    while start < text.len() {
        match space_at(text, start) {
            0 => break,
            w => start += w,
        }
    }
    let mut end = text.len();
    while end > start {
        let tail = &text[start..end];
        let w = if CLASS[tail[tail.len() - 1] as usize] == SPACE {
            1
        } else if tail.len() >= 2 && unicode_space(&tail[tail.len() - 2..]) == 2 {
            2
        } else if tail.len() >= 3 && unicode_space(&tail[tail.len() - 3..]) == 3 {
            3
        } else {
            0
        };
        if w == 0 {
            break;
        }
        end -= w;
    }
    &text[start..end]
}

/// Whether `id` is what the writers accept as an id: non-empty, without whitespace (Python's
/// `id.split() == [id]`). `id` is valid UTF-8.
pub fn is_id(id: &[u8]) -> bool {
    !id.is_empty()
        && (0..id.len()).all(|i| match CLASS[id[i] as usize] {
            SPACE | BREAK => false,
            LEAD => unicode_space(&id[i..]) == 0,
            _ => true,
        })
}

/// The code points Python decodes `bytes` into with `surrogateescape`.
fn code_points(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        let valid = chunk.valid().chars().map(u32::from);
        let invalid = chunk.invalid().iter().map(|&b| 0xdc00 + u32::from(b));
        valid.chain(invalid)
    })
}

/// Python's order of the decoded strings.
pub fn py_str_cmp(a: &[u8], b: &[u8]) -> Ordering {
    code_points(a).cmp(code_points(b))
}

/// `text` cut as Python cuts the decoded line for an error: 77 characters and `...` when it
/// has more than 80.
fn shown(text: &[u8]) -> Vec<u8> {
    if code_points(text).nth(SHOWN_CHARS).is_none() {
        return text.to_vec();
    }
    // The byte offset of the 78th code point: each valid char is its UTF-8 length, each
    // undecodable byte one code point.
    let mut end = 0;
    let mut chars = 0;
    'chunks: for chunk in text.utf8_chunks() {
        for c in chunk.valid().chars() {
            if chars == SHOWN_CHARS - 3 {
                break 'chunks;
            }
            end += c.len_utf8();
            chars += 1;
        }
        for _ in chunk.invalid() {
            if chars == SHOWN_CHARS - 3 {
                break 'chunks;
            }
            end += 1;
            chars += 1;
        }
    }
    let mut out = text[..end].to_vec();
    out.extend_from_slice(b"...");
    out
}

/// One line: its number, its text (without the line break), how many fields it has and the
/// first `N` of them.
struct Line<const N: usize> {
    number: usize,
    text: Span,
    count: usize,
    fields: [Span; N],
}

/// Calls `f` on every line of `data`, in order; stops at the first error `f` returns.
fn for_each_line<const N: usize, E>(
    data: &[u8],
    mut f: impl FnMut(&Line<N>) -> Result<(), E>,
) -> Result<(), E> {
    let mut i = if data.starts_with(b"\xef\xbb\xbf") {
        3
    } else {
        0
    };
    let mut line = Line {
        number: 0,
        text: 0..0,
        count: 0,
        fields: std::array::from_fn(|_| 0..0),
    };
    while i < data.len() {
        i = plain_lines(data, i, &mut line, &mut f)?;
        if i < data.len() {
            i = any_line(data, i, &mut line, &mut f)?;
        }
    }
    Ok(())
}

/// Reads the line that starts at `i`, whatever its bytes; returns where the next one starts.
fn any_line<const N: usize, E>(
    data: &[u8],
    mut i: usize,
    line: &mut Line<N>,
    f: &mut impl FnMut(&Line<N>) -> Result<(), E>,
) -> Result<usize, E> {
    let n = data.len();
    let start = i;
    let mut count = 0;
    loop {
        while i < n {
            match space_at(data, i) {
                0 => break,
                w => i += w,
            }
        }
        if i == n || CLASS[data[i] as usize] == BREAK {
            break;
        }
        let token = i;
        while i < n {
            match CLASS[data[i] as usize] {
                TOKEN => i += 1,
                LEAD if unicode_space(&data[i..]) == 0 => i += 1,
                _ => break,
            }
        }
        if count < N {
            line.fields[count] = token..i;
        }
        count += 1;
    }
    line.number += 1;
    line.text = start..i;
    line.count = count;
    if i < n {
        i += if data[i] == b'\r' && data.get(i + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
    }
    f(line)?;
    Ok(i)
}

/// Reads the lines from `start` (a line start) on, 64 bytes at a time, as long as they hold only
/// ASCII bytes 0x21-0x7f, spaces, tabs and `\n` line ends (the usual run file); returns the start of
/// the first line it did not read (one with another byte, or the end of the file within the
/// last 64 bytes), for [`any_line`].
///
/// Each block is classified with bit masks (bit `k` for byte `k`) and its token boundaries and
/// line ends are visited as set bits, without a branch per byte.
fn plain_lines<const N: usize, E>(
    data: &[u8],
    start: usize,
    line: &mut Line<N>,
    f: &mut impl FnMut(&Line<N>) -> Result<(), E>,
) -> Result<usize, E> {
    let mut line_start = start;
    let mut base = start;
    let mut count = 0;
    let mut token = start;
    let mut after_delimiter = 1u64; // the byte before `base` is a delimiter (or a line start)
    while let Some(block) = data.get(base..).and_then(<[u8]>::first_chunk::<64>) {
        let (delimiters, breaks, other) = classify(block);
        let usable = if other == 0 {
            u64::MAX
        } else {
            (1u64 << other.trailing_zeros()) - 1
        };
        let before = (delimiters << 1) | after_delimiter;
        let starts = !delimiters & before & usable;
        let ends = delimiters & !before & usable;
        let mut events = starts | ends | (breaks & usable);
        while events != 0 {
            let k = events.trailing_zeros();
            events &= events - 1;
            let bit = 1u64 << k;
            let at = base + k as usize;
            if starts & bit != 0 {
                token = at;
                continue;
            }
            if ends & bit != 0 {
                if count < N {
                    line.fields[count] = token..at;
                }
                count += 1;
            }
            if breaks & bit != 0 {
                line.number += 1;
                line.text = line_start..at;
                line.count = count;
                f(line)?;
                line_start = at + 1;
                count = 0;
            }
        }
        if other != 0 {
            break;
        }
        after_delimiter = delimiters >> 63;
        base += 64;
    }
    Ok(line_start)
}

/// Bit masks of a 64-byte block: (space, tab or `\n`; `\n`; any byte that is neither one of those
/// nor ASCII 0x21-0x7f).
#[inline]
fn classify(block: &[u8; 64]) -> (u64, u64, u64) {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    // The high bit of each byte that equals `c` (exact: no carry crosses bytes).
    let equal = |v: u64, c: u8| {
        let x = v ^ (ONES * u64::from(c));
        !(((x & LOW) + LOW) | x) & HIGH
    };
    // The high bit of each byte (as bits 0-7) gathered into one byte.
    let gather = |high: u64| (high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
    let (mut delimiters, mut breaks, mut other) = (0u64, 0u64, 0u64);
    for w in 0..8 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&block[w * 8..w * 8 + 8]);
        let v = u64::from_le_bytes(word);
        let below_0x21 = !(((v & LOW) + ONES * 0x5f) | v) & HIGH;
        let newline = equal(v, b'\n');
        let delimiter = equal(v, b' ') | equal(v, b'\t') | newline;
        let odd = (v & HIGH) | (below_0x21 & !delimiter);
        delimiters |= gather(delimiter) << (8 * w);
        breaks |= gather(newline) << (8 * w);
        other |= gather(odd) << (8 * w);
    }
    (delimiters, breaks, other)
}

fn fields_error<const N: usize>(data: &[u8], line: &Line<N>, format: &'static str) -> TrecError {
    TrecError {
        line: line.number,
        reason: Reason::Fields {
            expected: N,
            format,
            found: line.count,
            text: shown(strip(&data[line.text.clone()])),
        },
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

/// Parses a run file: queries in order of first appearance, each ranked by `order` with
/// `duplicates` applied. `score` reads a score field (`None`: not a number); see
/// [`parse_score`]. A file without a single non-blank line gives no queries.
pub fn parse_run(
    data: &[u8],
    order: Order,
    duplicates: ReadDuplicates,
    mut score: impl FnMut(&[u8]) -> Option<f64>,
) -> Result<Vec<RunQuery>, TrecError> {
    // The rows go straight to their query, in file order.
    let mut qids = Qids::new(data);
    let mut queries: Vec<RunQuery> = Vec::new();
    let mut not_a_number: Option<TrecError> = None;
    let mut nan: Option<TrecError> = None;
    for_each_line::<RUN_FIELDS, _>(data, |line| {
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
                not_a_number = Some(TrecError {
                    line: line.number,
                    reason: Reason::NotANumber {
                        text: text.to_vec(),
                    },
                });
            }
            Some(v) if v.is_nan() && nan.is_none() => {
                nan = Some(TrecError {
                    line: line.number,
                    reason: Reason::NaN {
                        text: text.to_vec(),
                    },
                });
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

/// The error for rows `first` and `second` (in file order) of query `q` of a run that parsed:
/// their lines are found by reading the file again.
fn duplicate_error(data: &[u8], q: usize, first: usize, second: usize) -> TrecError {
    let mut qids = Qids::new(data);
    let mut row = 0;
    let mut first_line = 0;
    let mut error = None;
    let _ = for_each_line::<RUN_FIELDS, ()>(data, |line| {
        if line.count == RUN_FIELDS && qids.id(&line.fields[0]) == q {
            if row == first {
                first_line = line.number;
            } else if row == second {
                error = Some(TrecError {
                    line: line.number,
                    reason: Reason::DuplicateDoc {
                        qid: data[line.fields[0].clone()].to_vec(),
                        docid: data[line.fields[2].clone()].to_vec(),
                        first_line,
                    },
                });
                return Err(());
            }
            row += 1;
        }
        Ok(())
    });
    // The second row is always found (the rows come from parsing this very data); were it
    // not, the error still names the duplicate's first line rather than panicking.
    error.unwrap_or(TrecError {
        line: first_line,
        reason: Reason::DuplicateDoc {
            qid: Vec::new(),
            docid: Vec::new(),
            first_line,
        },
    })
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
) -> Result<Vec<QrelsQuery<G>>, TrecError> {
    let mut qids = Qids::new(data);
    let mut rows: Vec<(usize, Span, G, usize)> = Vec::new();
    let mut not_an_integer: Option<TrecError> = None;
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
                not_an_integer = Some(TrecError {
                    line: line.number,
                    reason: Reason::NotAnInteger {
                        text: text.to_vec(),
                    },
                })
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
                return Err(TrecError {
                    line,
                    reason: Reason::DuplicateJudgment {
                        qid: data[out[q].qid.clone()].to_vec(),
                        docid: data[docid].to_vec(),
                    },
                });
            }
            continue;
        }
        out[q].judged.push((docid, g));
    }
    Ok(out)
}

// --- writing ----------------------------------------------------------------------------------

/// Appends Python's `repr(x)` and returns true; or appends nothing and returns false when `x` is
/// 0, infinite or NaN, or lies exactly halfway between two shortest decimals (see below). The
/// caller then asks CPython (`PyOS_double_to_string`, what `float.__repr__` calls).
///
/// `repr` writes the decimal with the fewest significant digits that reads back as `x`, of
/// those the closest to `x`, ties to even (David Gay's `dtoa` mode 0). Rust's `{:e}` writes the
/// shortest decimal that reads back as `x` too, the closest too, but breaks ties upwards
/// (`2.0f64.powi(50) + 0.25`: Python `1125899906842624.2`, Rust `...624.3`). So the digits agree
/// unless `x` is exactly halfway between Rust's `M * 10^s` and `(M +- 1) * 10^s`, i.e. exactly
/// `(10 M +- 5) * 10^(s-1)`, which is checked with integers. Then Python's layout: scientific
/// (`1e+16`, `1.5e-07`: signed exponent of at least two digits) when the decimal point falls
/// before the 4th digit after it or after the 16th digit, else positional with `.0` added to
/// integers.
pub fn push_float_repr(out: &mut Vec<u8>, x: f64) -> bool {
    use std::io::Write;
    if !x.is_finite() || x == 0.0 {
        return false;
    }
    let mut buf = [0u8; 40];
    let mut rest = &mut buf[..];
    if write!(rest, "{:e}", x.abs()).is_err() {
        return false;
    }
    let len = 40 - rest.len();
    let text = &buf[..len];
    let Some(e) = text.iter().position(|&c| c == b'e') else {
        return false;
    };
    let Ok(exp) = ascii_str(&text[e + 1..]).parse::<i32>() else {
        return false;
    };
    let mut digits = [0u8; 24];
    let mut n = 0;
    for &c in &text[..e] {
        if c != b'.' && n < digits.len() {
            digits[n] = c;
            n += 1;
        }
    }
    if n > 17 {
        return false; // never: a shortest f64 decimal has at most 17 digits
    }
    let digits = &digits[..n];
    let m = digits
        .iter()
        .fold(0u64, |m, &d| m * 10 + u64::from(d - b'0'));
    let scale = exp - (n as i32 - 1); // x ~ m * 10^scale
    for halfway in [10 * m - 5, 10 * m + 5] {
        if is_decimal(x.abs(), halfway, scale - 1) != Some(false) {
            return false;
        }
    }
    if x < 0.0 {
        out.push(b'-');
    }
    let point = exp + 1; // digits[..point] are before the decimal point
    if point <= -4 || point > 16 {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        if exp.abs() < 10 {
            out.push(b'0');
        }
        let _ = write!(out, "{}", exp.abs());
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(digits);
    } else if (point as usize) < n {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    } else {
        out.extend_from_slice(digits);
        out.resize(out.len() + point as usize - n, b'0');
        out.extend_from_slice(b".0");
    }
    true
}

/// Whether `x` (finite, > 0) is exactly `d * 10^t` (`d` > 0); None when not decided here.
fn is_decimal(x: f64, d: u64, t: i32) -> Option<bool> {
    if t >= 0 {
        // An integer below 10^38 < 2^127 when t <= 19.
        if t > 19 {
            return None;
        }
        let value = u128::from(d) * 10u128.pow(t as u32);
        if x.fract() != 0.0 || x >= 2f64.powi(127) {
            return Some(false);
        }
        return Some(x as u128 == value);
    }
    // d / 10^u = (d / 5^u) / 2^u is a binary fraction only if 5^u divides d (5^28 > 2^64 > d).
    let u = t.unsigned_abs();
    if u > 27 || d % 5u64.pow(u) != 0 {
        return Some(false);
    }
    let q = d / 5u64.pow(u);
    let y = x * 2f64.powi(u as i32); // exact (or infinite, then unequal)
    Some(y.fract() == 0.0 && y < 2f64.powi(64) && y as u64 == q)
}

// --- messages ---------------------------------------------------------------------------------

/// Python's `repr` of the decoded text, approximately: exact for ASCII; other characters are
/// kept unless Rust deems them control or whitespace characters (Python's `str.isprintable` is
/// the exact rule). The Python binding uses Python's own `repr` instead.
pub fn repr_approx(bytes: &[u8]) -> String {
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push(quote);
    for c in code_points(bytes) {
        match char::from_u32(c) {
            Some(ch) if ch == quote || ch == '\\' => {
                out.push('\\');
                out.push(ch);
            }
            Some('\t') => out.push_str("\\t"),
            Some('\n') => out.push_str("\\n"),
            Some('\r') => out.push_str("\\r"),
            Some(ch) if ch == ' ' || !(ch.is_control() || ch.is_whitespace()) => out.push(ch),
            _ if c < 0x100 => out.push_str(&format!("\\x{c:02x}")),
            _ if c < 0x10000 => out.push_str(&format!("\\u{c:04x}")),
            _ => out.push_str(&format!("\\U{c:08x}")),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        (e.line, e.reason.render(&mut repr_approx))
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
        assert_eq!(e.line, 6);
        assert_eq!(
            e.reason.render(&mut repr_approx),
            "query '1' judges doc 'd1' twice"
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
        assert_eq!(e.line, 3);
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
            let mut out = Vec::new();
            assert!(push_float_repr(&mut out, x), "{x}");
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
        // left to CPython: zero, non-finite, ties between two shortest decimals, and integers
        // from 1e21 on (not decided with 128-bit integers)
        let pow50 = 2.0f64.powi(50);
        for x in [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NAN,
            pow50 + 0.25,
            pow50 + 0.75,
            1e22,
            f64::MAX,
        ] {
            let mut out = Vec::new();
            assert!(!push_float_repr(&mut out, x), "{x}");
            assert!(out.is_empty());
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
}
