//! Python's `repr` of a float, written from its definition: ryu's shortest digits (closest to
//! the number, exact ties to the even digit) in Python's layout.

/// `repr(x)` as Python writes it.
pub fn py_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x.is_infinite() {
        return format!("{sign}inf");
    }
    if x == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, decpt) = shortest(x.abs());
    let n = digits.len() as i32;
    // x = 0.DIGITS * 10^decpt
    let body = if decpt <= -4 || decpt > 16 {
        let exp = decpt - 1;
        let mantissa = if n > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{exp_sign}{:02}", exp.abs())
    } else if decpt <= 0 {
        format!("0.{}{digits}", "0".repeat((-decpt) as usize))
    } else if decpt < n {
        format!(
            "{}.{}",
            &digits[..decpt as usize],
            &digits[decpt as usize..]
        )
    } else {
        format!("{digits}{}.0", "0".repeat((decpt - n) as usize))
    };
    format!("{sign}{body}")
}

/// ryu's digits of `a` (finite, > 0) without leading or trailing zeros, and the position of the
/// decimal point: `a = 0.DIGITS * 10^decpt`.
fn shortest(a: f64) -> (String, i32) {
    let mut buffer = ryu::Buffer::new();
    let text = buffer.format_finite(a);
    let (mantissa, exp) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().expect("ryu's exponent")),
        None => (text, 0),
    };
    let point = mantissa.find('.').unwrap_or(mantissa.len()) as i32;
    let all: String = mantissa.chars().filter(|&c| c != '.').collect();
    let leading = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_matches('0').to_string();
    (digits, point + exp - leading as i32)
}

/// The number of significant digits of a repr (`1.5e-07`: 2; `100.0`: 1).
pub fn significant_digits(repr: &str) -> usize {
    let mantissa = repr.split('e').next().unwrap_or(repr);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    digits.trim_matches('0').len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs() {
        // Each as CPython 3.11 prints it.
        for (x, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-7, "1.5e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (1.0 / 61.0, "0.01639344262295082"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
            // exact ties between two shortest decimals: the even one
            (2f64.powi(50) + 0.25, "1125899906842624.2"),
            (2f64.powi(50) + 0.75, "1125899906842624.8"),
            (2f64.powi(-24), "5.960464477539063e-08"),
        ] {
            assert_eq!(py_repr(x), want, "{x:e}");
        }
        assert_eq!(significant_digits("1.5e-07"), 2);
        assert_eq!(significant_digits("100.0"), 1);
        assert_eq!(significant_digits("0.0001"), 1);
    }
}
