//! The random stream of the resampling tests (docs/semantics.md, "Comparing runs"):
//! xoshiro256** (Blackman and Vigna), its state seeded by SplitMix64. Test `t` of a comparison
//! with seed `s` reads the stream whose state is the outputs `4t + 1 .. 4t + 4` of a SplitMix64
//! started at `s`, so every test has a stream of its own, found without running the others.

/// SplitMix64's increment (the golden ratio in 64 bits).
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output for the state `z` (the state after its increment).
#[inline]
pub fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `i`-th output (1-based) of a SplitMix64 started at `seed`.
#[inline]
pub fn splitmix(seed: u64, i: u64) -> u64 {
    mix(seed.wrapping_add(i.wrapping_mul(GOLDEN)))
}

/// xoshiro256**: 256 bits of state, 64 bits an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xoshiro {
    s: [u64; 4],
}

impl Xoshiro {
    /// A generator with the state `s` (which must not be all zero).
    pub fn from_state(s: [u64; 4]) -> Self {
        Xoshiro { s }
    }

    /// The stream of test `test` under `seed`: the state is SplitMix64's outputs `4 test + 1`
    /// to `4 test + 4` from `seed` (four distinct outputs of a bijection: never all zero).
    pub fn stream(seed: u64, test: u64) -> Self {
        let first = test.wrapping_mul(4);
        Xoshiro::from_state([
            splitmix(seed, first.wrapping_add(1)),
            splitmix(seed, first.wrapping_add(2)),
            splitmix(seed, first.wrapping_add(3)),
            splitmix(seed, first.wrapping_add(4)),
        ])
    }

    /// The next output.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Fills `out` with the next outputs, in order.
    #[inline]
    pub fn fill(&mut self, out: &mut [u64]) {
        for w in out {
            *w = self.next();
        }
    }
}

/// An index in `0..n` from one output `word`: `floor(word * n / 2^64)` (Lemire's multiply-shift,
/// without rejection: index `i` is drawn with probability within `n / 2^64` of `1 / n`).
#[inline]
pub fn below(word: u64, n: usize) -> usize {
    ((u128::from(word) * n as u128) >> 64) as usize
}
