"""The package type-checks as users call it (``mypy --strict``): numpy arrays are accepted where
the functions accept them, and a misspelt name is an error, not ``Any``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mypy")


def mypy(tmp_path, code: str) -> subprocess.CompletedProcess:
    path = tmp_path / "snippet.py"
    path.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
        capture_output=True,
        text=True,
    )


def test_numpy_weights_and_scores_type_check(tmp_path):
    done = mypy(
        tmp_path,
        """
        import numpy as np
        import rankfusion

        w = np.array([1.0, 0.5])
        s = [np.array([3.0, 2.0]), None]
        hits = rankfusion.rrf([["a", "b"], ["b"]], weights=w, scores=s, trace=True)
        key, score = hits[0]
        many = rankfusion.rrf_many([[["a"]]], weights=np.ones(1))
        batch = rankfusion.rrf_batch([np.array([[1, 2]])], weights=np.ones(1))
        ref = rankfusion.reference.rrf([["a"]])
        """,
    )
    assert done.returncode == 0, done.stdout


def test_a_misspelt_name_is_an_error(tmp_path):
    done = mypy(tmp_path, "import rankfusion\nrankfusion.rfr([['a']])\n")
    assert done.returncode == 1 and 'has no attribute "rfr"' in done.stdout, done.stdout


def test_optimize_type_checks(tmp_path):
    done = mypy(
        tmp_path,
        """
        from typing import Any, Dict, Optional, Tuple

        import numpy as np
        import rankfusion
        from rankfusion import trec

        runs = [trec.read_run("a.run"), "b.run.gz"]
        r = rankfusion.optimize(
            runs, "qrels.txt", method="wsum", norm="min-max", metric="ndcg@10", step=0.1, folds=5
        )
        best: Dict[str, Any] = r.best
        score: float = r.best_score
        cv: Optional[float] = r.cv_score
        folds: Optional[Tuple[rankfusion.FoldResult, ...]] = r.folds
        table: np.ndarray = r.per_query
        options: Dict[str, Any] = r.options()
        r2 = rankfusion.optimize(runs, {"q": {"d": 1}}, method="rrf", metric="P@5",
                                 grid={"k": [10, 60], "weights": None})
        which: np.ndarray = rankfusion.fold_of(["q1", "q2"], 2, 0)
        """,
    )
    assert done.returncode == 0, done.stdout
    done = mypy(tmp_path, "import rankfusion\nrankfusion.optimize([], {}, method='rrf')\n")
    assert done.returncode == 1 and 'Missing named argument "metric"' in done.stdout, done.stdout
