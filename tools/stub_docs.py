"""Writes the extension's own docstrings into its stub, ``python/rankfusion/_core.pyi``.

A docstring of ``rankfusion._core`` has one source, what ``help()`` shows: the Rust ``///``
comment of the function, class, method or property, or, for the result types' class docs and
methods, ``rankfusion/_results.py``, which sets them at import. The stub, which editors and type checkers
read, holds a copy made by this script. Where the extension cannot hold a docstring (a slot
such as ``__call__``, a method made in Python, a ``TypedDict`` of the stub), the stub's own is
the source and is left alone.

    python tools/stub_docs.py          # rewrite the stub's docstrings
    python tools/stub_docs.py --check  # exit 1 and name what differs (tests/test_stub.py)
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple

STUB = Path(__file__).resolve().parents[1] / "python" / "rankfusion" / "_core.pyi"

# The kinds of object that carry their own docstring (from the Rust source); any other (a slot
# wrapper's "Call self as a function.", a functools.partialmethod) has none of its own.
_OWN_DOC = (
    types.BuiltinFunctionType,  # module functions
    types.MethodDescriptorType,  # methods
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,  # properties
    types.MemberDescriptorType,
)


def core_doc(owner: Any, name: str) -> Optional[str]:
    """The docstring the extension holds for ``owner.name``, cleaned; None where it holds none
    of its own."""
    if isinstance(owner, types.ModuleType):
        obj = getattr(owner, name, None)
    else:
        obj = vars(owner).get(name)  # not inherited: tuple's __new__, say
    if isinstance(obj, type):
        own = obj.__module__.split(".")[0] == "rankfusion"  # not a builtin base's
    else:
        own = isinstance(obj, _OWN_DOC) and not name.startswith("__")
    doc = obj.__doc__ if own else None
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else None


def _nodes(body: List[ast.stmt], owner: Any) -> Iterator[Tuple[str, ast.AST, Any]]:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield node.name, node, owner
            if isinstance(node, ast.ClassDef) and owner is not None:
                inner = getattr(owner, node.name, None)
                yield from (
                    (f"{node.name}.{n}", child, o)
                    for n, child, o in _nodes(node.body, inner if isinstance(inner, type) else None)
                )


def _docstring(lines: List[str], indent: str) -> List[str]:
    text = [line.replace("\\", "\\\\") for line in lines]
    if len(text) == 1:
        return [f'{indent}"""{text[0]}"""']
    return (
        [f'{indent}"""{text[0]}']
        + [f"{indent}{line}" if line else "" for line in text[1:]]
        + [f'{indent}"""']
    )


def rewrite(source: str, core: Any) -> Tuple[str, List[str]]:
    """The stub ``source`` with the extension's docstrings, and the names whose docstring
    changed (or that the stub documents and the extension does not)."""
    lines = source.split("\n")
    edits = []  # (first line, last line, replacement lines), 0-based, applied bottom-up
    changed = []
    for qualname, node, owner in _nodes(ast.parse(source).body, core):
        short = qualname.rsplit(".", 1)[-1]
        doc = core_doc(owner, short) if owner is not None else None
        assert isinstance(node, (ast.FunctionDef, ast.ClassDef))
        first = node.body[0]
        has_doc = (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        )
        if doc is None:
            continue  # the stub's own (or none)
        if has_doc:
            if inspect.cleandoc(first.value.value) == doc:  # type: ignore[attr-defined]
                continue
            indent = " " * first.col_offset
            edits.append(
                (first.lineno - 1, first.end_lineno - 1, _docstring(doc.split("\n"), indent))
            )
        else:  # `def f(...) -> T: ...` becomes `def f(...) -> T:` and the docstring
            assert first.end_lineno is not None
            row = first.lineno - 1
            head = lines[row][: first.col_offset].rstrip()
            indent = " " * (node.col_offset + 4)
            edits.append((row, row, [head, *_docstring(doc.split("\n"), indent)]))
        changed.append(qualname)
    for start, end, new in sorted(edits, reverse=True):
        lines[start : end + 1] = new
    return "\n".join(lines), changed


def main() -> int:
    import rankfusion._core as core

    source = STUB.read_text(encoding="utf-8")
    new, changed = rewrite(source, core)
    if "--check" in sys.argv[1:]:
        if changed:
            print(f"{STUB.name}: docstrings not the extension's: {', '.join(changed)}")
            print("run: python tools/stub_docs.py")
            return 1
        return 0
    if new != source:
        STUB.write_text(new, encoding="utf-8")
        try:  # a docstring for a body of `...` changes the blank lines between functions
            subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(STUB)], check=True)
        except (OSError, subprocess.CalledProcessError):
            print("ruff is not installed: run `ruff format` on the stub")
    print(f"{STUB.name}: {len(changed)} docstrings written: {', '.join(changed) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
