//! `rust/format.rs` (Python's `repr` of a float) against an oracle built on `ryu`:
//!
//! - `repr(x)` reads back as `x`, bit for bit (`-0.0` included; NaN as `nan`);
//! - its digits are ryu's shortest digits: the fewest significant digits that read back as
//!   `x`, of those the closest to `x`, exact ties to the even digit (ryu breaks ties that way,
//!   as David Gay's `dtoa` does for Python; Rust's own `{:e}` does not);
//! - they are laid out as Python lays them out (`model::py_repr`);
//! - Rust's `{:e}` has the same number of significant digits (shortest too).
//!
//! The input picks `x` as raw bits, or as a dyadic rational `i / 2^j` (where exact ties
//! between two shortest decimals live), or as the double nearest to a decimal `m * 10^e`.
#![no_main]

use _core::format as pyrepr;
use libfuzzer_sys::fuzz_target;

fn pick(data: &[u8]) -> Option<f64> {
    let (&selector, rest) = data.split_first()?;
    let mut word = [0u8; 8];
    let n = rest.len().min(8);
    word[..n].copy_from_slice(&rest[..n]);
    let bits = u64::from_le_bytes(word);
    let extra = rest.get(8).copied().unwrap_or(0);
    Some(match selector % 3 {
        0 => f64::from_bits(bits),
        // i / 2^j with i < 2^53: exact whenever it is a normal double
        1 => (bits & ((1 << 53) - 1)) as f64 * 2f64.powi(-i32::from(extra % 128)),
        // the double nearest to m * 10^e, through Rust's correctly rounded parser
        _ => {
            let e = i32::from(extra as i8) * 3 / 2;
            format!("{}e{e}", bits >> (bits % 64)).parse().ok()?
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(x) = pick(data) else { return };
    let repr = pyrepr::float(x);

    // Round trip, bit for bit.
    let back: f64 = match repr.as_str() {
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        text => text.parse().expect("repr must parse"),
    };
    if x.is_nan() {
        assert_eq!(repr, "nan");
        return;
    }
    assert_eq!(back.to_bits(), x.to_bits(), "repr({x:e}) = {repr}");

    // The same text as the model of Python's repr over ryu's digits.
    assert_eq!(repr, model::py_repr(x), "repr({x:e})");

    // As short as Rust's own shortest round trip.
    if x.is_finite() && x != 0.0 {
        let rust = format!("{:e}", x.abs());
        let rust_digits = rust.split('e').next().unwrap().replace('.', "").len();
        assert_eq!(
            model::significant_digits(&repr),
            rust_digits,
            "repr({x:e}) = {repr}, Rust {rust}"
        );
    }
});
