"""Random fusion methods and their arguments, for the tests that fuse random runs."""

from __future__ import annotations

import random


def random_method(rng: random.Random, n_runs: int, weights) -> dict:
    """A random fusion method and its own arguments (norm, lower_is_better, phi, gamma, sigma),
    with the weights kept where the method is weighted (and now and then where it is not, an
    argument error), and k only for rrf. RRF 40% of the time."""
    from rankfusion.reference import METHODS, NORMS

    method = "rrf" if rng.random() < 0.4 else rng.choice(list(METHODS))
    spec = METHODS[method]
    options: dict = {"method": method}
    if not spec.weighted and rng.random() > 0.05:
        weights = None
    options["weights"] = weights
    if spec.kind == "score" and spec.norm is None and rng.random() < 0.8:
        options["norm"] = rng.choice(NORMS)
    if spec.kind == "score" and rng.random() < 0.3:
        options["lower_is_better"] = [rng.random() < 0.5 for _ in range(n_runs)]
    for name, values in (("phi", [0.0, 0.5, 0.8, 0.99]), ("gamma", [0.5, 1.0, 2.0])):
        if name in spec.params:
            options[name] = rng.choice(values)
    if "sigma" in spec.params and rng.random() < 0.5:
        options["sigma"] = rng.choice([0.0, 0.01, 1.0])
    return options
