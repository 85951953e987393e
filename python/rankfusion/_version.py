"""The installed distribution's version, read from its metadata.

One place to bump: ``version`` in Cargo.toml, which maturin writes into the package metadata.
A module of its own so that ``import rankfusion`` does not pay for ``importlib.metadata``: the
package imports it on first use of ``rankfusion.__version__``.
"""

from importlib.metadata import version

__version__ = version("rankfusion")
