//! Python's `repr` of a float and of a decoded text, in Rust: what the TREC writer writes for a
//! score and what error messages show, so that both read exactly as Python's would. Used by the
//! errors, the traces and the TREC writer alike (it depends on nothing of theirs).
//!
//! `repr` writes the decimal with the fewest significant digits that reads back as `x`, of those
//! the closest to `x`, ties to even (David Gay's `dtoa` mode 0). Rust's `{:e}` writes the
//! shortest decimal that reads back as `x` too, the closest too, but breaks exact ties upwards
//! (`2^50 + 0.25`: Python `1125899906842624.2`, Rust `...624.3`). So the digits agree
//! unless `x` is exactly halfway between two shortest decimals `M * 10^s` and `(M ± 1) * 10^s`,
//! i.e. exactly `(10 M ± 5) * 10^(s-1)`, which is checked with integers; then the even one is
//! taken, if it reads back as `x` too. Then Python's layout: scientific (`1e+16`, `1.5e-07`: signed exponent of at least two
//! digits) when the decimal point falls before the 4th digit after it or after the 16th digit,
//! else positional with `.0` added to integers; `nan`, `inf`, `-inf`, `0.0`, `-0.0`.

/// `repr(x)`.
pub fn float(x: f64) -> String {
    let mut out = Vec::with_capacity(24);
    push_float(&mut out, x);
    // Only ASCII is ever written.
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `repr(x)`.
pub fn push_float(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if x.is_sign_negative() {
        out.push(b'-');
    }
    let a = x.abs();
    if a.is_infinite() {
        out.extend_from_slice(b"inf");
        return;
    }
    if a == 0.0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    let (buf, n, exp) = shortest(a);
    let digits = &buf[..n];
    let n = n as i32;
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
        push_usize(out, exp.unsigned_abs() as usize);
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(digits);
    } else if point < n {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    } else {
        out.extend_from_slice(digits);
        out.resize(out.len() + (point - n) as usize, b'0');
        out.extend_from_slice(b".0");
    }
}

/// At most this many significant digits: a shortest f64 decimal has at most 17.
const MAX_DIGITS: usize = 17;

/// The shortest round-tripping digits of `a` (finite, > 0) with ties to even, without trailing
/// zeros (`buf[..n]`), and the decimal exponent of the first digit: `a ~ d.ddd * 10^exp`.
/// Formatted on the stack: this runs for every line written.
fn shortest(a: f64) -> ([u8; MAX_DIGITS], usize, i32) {
    // `{:e}` of a finite f64: `d[.ddd]e[-]x`, at most 17 digits and a 3-digit exponent.
    let mut text = [0u8; 32];
    let len = {
        let mut rest = &mut text[..];
        let _ = std::io::Write::write_fmt(&mut rest, format_args!("{a:e}"));
        32 - rest.len()
    };
    let text = &text[..len];
    let e = text.iter().position(|&c| c == b'e').unwrap_or(len);
    let (mantissa, exponent) = (&text[..e], text.get(e + 1..).unwrap_or_default());
    let (negative, exponent) = match exponent {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, exponent),
    };
    let magnitude = exponent
        .iter()
        .fold(0i32, |v, &c| v * 10 + i32::from(c - b'0'));
    let exp = if negative { -magnitude } else { magnitude };
    let mut digits = [0u8; MAX_DIGITS];
    let mut n = 0;
    for &c in mantissa.iter().filter(|&&c| c != b'.').take(MAX_DIGITS) {
        digits[n] = c;
        n += 1;
    }
    // At most 17 digits: M < 10^17 fits a u64.
    let m = digits[..n]
        .iter()
        .fold(0u64, |m, &d| m * 10 + u64::from(d - b'0'));
    let scale = exp - (n as i32 - 1); // a ~ m * 10^scale
    if m % 2 == 1 {
        for (other, halfway) in [(m - 1, 10 * m - 5), (m + 1, 10 * m + 5)] {
            let reads_back = || format!("{other}e{scale}").parse::<f64>() == Ok(a);
            if other > 0 && is_decimal(a, halfway, scale - 1) && reads_back() {
                // Exactly between m and its even neighbour, both shortest and both reading back
                // as `a` (not so at a power of two, whose lower neighbour is closer): Python
                // takes the even one.
                let d = other.to_string();
                let first_exp = scale + d.len() as i32 - 1;
                let d = d.trim_end_matches('0');
                let d = if d.is_empty() { "0" } else { d };
                let mut even = [0u8; MAX_DIGITS];
                let n = d.len().min(MAX_DIGITS);
                even[..n].copy_from_slice(&d.as_bytes()[..n]);
                return (even, n, first_exp);
            }
        }
    }
    (digits, n, exp)
}

/// Whether `x` (finite, > 0) is exactly `d * 10^t` (`d` > 0).
fn is_decimal(x: f64, d: u64, t: i32) -> bool {
    if t >= 0 {
        // d * 10^t = d * 5^t * 2^t; 5^t must divide x's odd part, below 2^53: t <= 22.
        if t > 22 {
            return false;
        }
        let y = x / pow2(t); // exact: a power of two
        if y.fract() != 0.0 || y >= pow2(127) {
            return false;
        }
        return y as u128 == u128::from(d) * 5u128.pow(t as u32);
    }
    // d / 10^u = (d / 5^u) / 2^u is a binary fraction only if 5^u divides d (5^28 > 2^64 > d).
    let u = t.unsigned_abs();
    if u > 27 || d % 5u64.pow(u) != 0 {
        return false;
    }
    let q = d / 5u64.pow(u);
    let y = x * pow2(u as i32); // exact (or infinite, then unequal)
    y.fract() == 0.0 && y < pow2(64) && y as u64 == q
}

/// 2^n for -1022 <= n <= 1023, exactly: built from its bits (`powi`'s precision is not
/// specified; Miri, for one, varies it).
fn pow2(n: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&n));
    f64::from_bits(((1023 + n) as u64) << 52)
}

/// Appends the decimal digits of `n`.
pub fn push_usize(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// The code points Python decodes `bytes` into with `surrogateescape`.
pub fn code_points(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        let valid = chunk.valid().chars().map(u32::from);
        let invalid = chunk.invalid().iter().map(|&b| 0xdc00 + u32::from(b));
        valid.chain(invalid)
    })
}

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

/// Python's `repr` of a tuple of ints (a numpy array's `shape`): `()`, `(5,)`, `(2, 3)`.
pub fn shape(dims: &[usize]) -> String {
    match dims {
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = dims.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_as_python_writes_them() {
        assert_eq!(shape(&[]), "()");
        assert_eq!(shape(&[5]), "(5,)");
        assert_eq!(shape(&[2, 3]), "(2, 3)");
        assert_eq!(shape(&[0, 1, 4]), "(0, 1, 4)");
    }

    #[test]
    fn python_layout() {
        for (x, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (1234567890123456.0, "1234567890123456.0"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (1.0 / 61.0, "0.01639344262295082"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(float(x), want, "{x:e}");
        }
    }

    #[test]
    fn powers_of_two_are_exact() {
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(1), 2.0);
        assert_eq!(pow2(-1), 0.5);
        assert_eq!(pow2(50), 1125899906842624.0);
        assert_eq!(pow2(64), 18446744073709551616.0);
        assert_eq!(pow2(-1022), f64::MIN_POSITIVE);
        assert_eq!(pow2(1023), 8.98846567431158e307);
    }

    #[test]
    fn exact_halfway_goes_to_even() {
        // 2^50 + 0.25: Python 1125899906842624.2, where Rust's {:e} rounds up.
        assert_eq!(float(pow2(50) + 0.25), "1125899906842624.2");
        assert_eq!(float(pow2(50) + 0.75), "1125899906842624.8");
        // 2^-24 lies exactly between ...062e-08 and ...063e-08, but only the odd one reads
        // back (below a power of two the doubles are twice as close): Python keeps it.
        assert_eq!(float(pow2(-24)), "5.960464477539063e-08");
        // Every shortest repr reads back as the number.
        for x in [pow2(50) + 0.25, pow2(51) + 0.5, 9007199254740993.0] {
            assert_eq!(float(x).parse::<f64>().unwrap(), x);
        }
    }
}
