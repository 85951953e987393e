"""The hand-written stub ``_core.pyi`` describes the extension exactly (mypy.stubtest)."""

import subprocess
import sys


def test_stub_matches_the_core():
    # A subprocess: stubtest imports and introspects the module, and prints what differs.
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "rankfusion._core"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
