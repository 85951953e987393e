//! Lines, fields and ids of TREC files: what Python's universal newlines and `str.split()`
//! would make of the `surrogateescape`-decoded text, read from the bytes.

use std::cmp::Ordering;

use super::{Reason, Span};
use crate::error::Error;
use crate::format::code_points;

/// A line quoted in an error is cut to this many characters (code points).
const SHOWN_CHARS: usize = 80;

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
pub(super) fn strip(text: &[u8]) -> &[u8] {
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

/// Python's order of the decoded strings.
pub fn py_str_cmp(a: &[u8], b: &[u8]) -> Ordering {
    code_points(a).cmp(code_points(b))
}

/// `text` cut as Python cuts the decoded line for an error: 77 characters and `...` when it
/// has more than 80.
pub(super) fn shown(text: &[u8]) -> Vec<u8> {
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
pub(super) struct Line<const N: usize> {
    pub number: usize,
    pub text: Span,
    pub count: usize,
    pub fields: [Span; N],
}

/// Calls `f` on every line of `data`, in order; stops at the first error `f` returns.
pub(super) fn for_each_line<const N: usize, E>(
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
pub(super) fn any_line<const N: usize, E>(
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
pub(super) fn classify(block: &[u8; 64]) -> (u64, u64, u64) {
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

pub(super) fn fields_error<const N: usize>(
    data: &[u8],
    line: &Line<N>,
    format: &'static str,
) -> Error {
    super::malformed(
        line.number,
        Reason::Fields {
            expected: N,
            format,
            found: line.count,
            text: shown(strip(&data[line.text.clone()])),
        },
    )
}
