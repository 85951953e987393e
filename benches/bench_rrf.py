"""rrf: the Rust core against the pure-Python reference, one query at a time.

Run with `pytest benches/bench_rrf.py --benchmark-enable --benchmark-group-by=group`, or
`python benches/rrf_table.py` for one table of ratios measured side by side.
"""

from __future__ import annotations

import pytest
from workloads import str_lists

import rankfusion
from rankfusion import reference

WORKLOADS = {
    "2x100": (str_lists(2, 100), {}),
    "2x100-limit10": (str_lists(2, 100), {"limit": 10}),
    "5x1000": (str_lists(5, 1000), {}),
    "2x100-trace": (str_lists(2, 100), {"trace": True}),
}

IMPLEMENTATIONS = {"core": rankfusion.rrf, "reference": reference.rrf}


def _same(a, b) -> bool:
    return [(h.key, h.score.hex()) for h in a] == [(h.key, h.score.hex()) for h in b]


@pytest.mark.parametrize("workload", list(WORKLOADS))
@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_rrf(benchmark, workload, impl):
    lists, kwargs = WORKLOADS[workload]
    benchmark.group = f"rrf {workload}"
    result = benchmark(IMPLEMENTATIONS[impl], lists, **kwargs)
    benchmark.extra_info["matches_reference"] = _same(result, reference.rrf(lists, **kwargs))
    assert benchmark.extra_info["matches_reference"]
