"""The reference implementation: docs/semantics.md as plain Python (``_reference.py``).

The same API as ``rankfusion`` itself, written to be read rather than to be fast; the Rust core
is tested to return exactly what it returns. ``from rankfusion.reference import rrf``.
"""

from ._reference import *  # noqa: F403
from ._reference import __all__  # noqa: F401
