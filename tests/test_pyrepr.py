"""The core writes floats exactly as Python's ``repr`` does (``rust/trec/pyrepr.rs``): checked
through ``_run_lines`` on the floats where shortest-digit algorithms disagree most often."""

from __future__ import annotations

import math
import random
import struct

from rankfusion import _core


def written(values: list) -> list:
    text = _core._run_lines("q", [f"d{i}" for i in range(len(values))], values, "t")
    return [line.split()[4] for line in text.splitlines()]


def test_powers_of_two_and_their_neighbours():
    # Below a power of two the doubles are twice as close: the shortest decimal is lopsided.
    values = []
    for e in range(-1074, 1024):
        x = math.ldexp(1.0, e)
        values += [x, -x, math.nextafter(x, 0.0), math.nextafter(x, math.inf)]
    values = [v for v in values if math.isfinite(v)]
    assert written(values) == [repr(v) for v in values]


def test_exact_halves_between_two_shortest_decimals():
    # m * 2^e + a quarter or three quarters of the last place: exactly halfway cases that a
    # formatter rounding ties upwards gets wrong; plus integers beyond 2^53 and huge ones.
    values = []
    for e in range(40, 60):
        base = math.ldexp(1.0, e)
        for frac in (0.25, 0.5, 0.75, 1.25, 1.5):
            values += [base + frac * base / 2**52 * 4, -(base + frac)]
    values += [float(10**k) for k in range(15, 309)]
    values += [float(5 * 10**k) for k in range(15, 300)]
    assert written(values) == [repr(v) for v in values]


def test_random_bit_patterns():
    rng = random.Random(7)
    values = []
    while len(values) < 20000:
        (x,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if math.isfinite(x):
            values.append(x)
    assert written(values) == [repr(v) for v in values]
