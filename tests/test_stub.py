"""The stub ``_core.pyi`` describes the extension exactly (mypy.stubtest), and its docstrings
are the extension's own (tools/stub_docs.py copies them from the Rust source)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import rankfusion._core as core

TOOL = Path(__file__).resolve().parents[1] / "tools" / "stub_docs.py"


def test_stub_matches_the_core():
    # A subprocess: stubtest imports and introspects the module, and prints what differs.
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "rankfusion._core"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _stub_docs():
    spec = importlib.util.spec_from_file_location("stub_docs", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stub_docstrings_are_the_cores():
    tool = _stub_docs()
    _, changed = tool.rewrite(tool.STUB.read_text(encoding="utf-8"), core)
    assert changed == [], f"run `python tools/stub_docs.py`: {changed}"


def test_a_stub_docstring_that_drifts_is_named_and_written_back():
    tool = _stub_docs()
    source = tool.STUB.read_text(encoding="utf-8")
    wording = core.fuse_batch.__doc__.strip().split("\n")[0]
    assert source.count(wording) == 1
    drifted = source.replace(wording, "Fuses a batch.")
    fixed, changed = tool.rewrite(drifted, core)
    assert changed == ["fuse_batch"]
    assert fixed == source
    # a property documented only at runtime gets its docstring, a slot's stays the stub's
    bare = source.replace(f'\n        """{core.Hit.key.__doc__}"""', " ...", 1)
    assert bare != source
    fixed, changed = tool.rewrite(bare, core)
    assert changed == ["Hit.key"] and fixed == source
