"""examples/tables_cranfield.py: the shipped Cranfield runs as Parquet, fused by the command,
by rankfusion.frame and on a 2-worker LocalCluster, each equal to ``rankfusion fuse`` on the TREC
files (the README's tables example)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")  # the "arrow" and "dask" extras (CI installs them: see "test")
pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tables_cranfield.py"


def test_the_example_fuses_parquet_as_the_command_fuses_trec(tmp_path):
    out = tmp_path / "new" / "folder"  # made by the example
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(out)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # nothing that reads as a failure: distributed's two WARNING lines a shuffle are quieted
    assert "WARNING" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["command,", "frame.fuse", "dask,"]
    for line in lines:
        assert line.endswith("34,539 fused docs, same as rankfusion fuse on TREC: True")
