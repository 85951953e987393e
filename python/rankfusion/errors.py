"""The exceptions rankfusion raises for bad input, with what went wrong and where as attributes.

``FusionError`` (a ``ValueError``) and ``FusionTypeError`` (a ``TypeError``) are raised by every
fusion (``Fusion``, ``rrf``, ``fuse``, the batch functions, ``trec.fuse``, ``frame.fuse``...) and by
the reference alike, so ``except ValueError`` and ``except TypeError`` keep working. Code that needs
to know the place reads the attributes, never the message:

- ``argument``: the argument at fault (``"k"``, ``"weights"``, ``"scores"``, ``"lists"``...), or
  None for a problem of the data (a repeated key, a score that is not finite);
- ``row``: the row of a batch (``fuse_batch``, ``rrf_batch``); ``query``: the index of the query
  in a list of queries (``rrf_many``, ``Fusion.many``); ``qid``: the id of the query of run files
  or tables (``trec.fuse``, ``frame.fuse``, the command); ``setting``: the grid setting of
  ``rankfusion.optimize`` it is about (as ``k=60``);
- ``list`` and ``rank``: the list (``lists[i]``, ``weights[i]``, ``scores[i]``) and the 1-based
  rank of the item (``scores[i][rank - 1]``, the repeated key's) it is about;
- ``key``: the key it is about (None when it is about no key);
- ``reason``: the message without the place (``"row 3: "``, ``"queries[2]: "``, ``"query '7': "``).

``located(**fields)`` gives the same error at another place, or about another key (the doc id a
table's integer code stands for): the message is made again from the fields.

``TrecFormatError`` is a run or qrels file that cannot be read (``rankfusion.trec``).
"""

from __future__ import annotations

import os
from typing import Any, Optional

__all__ = ["FusionError", "FusionTypeError", "TrecFormatError"]

_FIELDS = ("argument", "row", "query", "qid", "setting", "list", "rank", "key")
_KEY = "{key}"  # where the key's repr goes in a reason made with a key
_NO_KEY: Any = object()


class _Located:
    """What is wrong (the message) and where (the attributes); see the module's documentation."""

    argument: Optional[str]
    row: Optional[int]
    query: Optional[int]
    qid: Any
    setting: Optional[str]
    list: Optional[int]
    rank: Optional[int]
    key: Any
    reason: str

    def __init__(
        self,
        template: str,
        argument: Optional[str] = None,
        row: Optional[int] = None,
        query: Optional[int] = None,
        qid: Any = None,
        list: Optional[int] = None,  # noqa: A002 -- the field's name
        rank: Optional[int] = None,
        *,
        setting: Optional[str] = None,
        key: Any = _NO_KEY,
    ) -> None:
        """``template`` is the reason; when a ``key`` is given, ``{key}`` in it stands for the
        key's ``repr``."""
        self._template = template
        self._has_key = key is not _NO_KEY
        self.reason = template.replace(_KEY, repr(key)) if self._has_key else template
        if row is not None:
            place = f"row {row}"
        elif query is not None:
            place = f"queries[{query}]"
        elif qid is not None:
            place = f"query {qid!r}"
        else:
            place = ""
        if setting is not None:
            place = f"{place} ({setting})" if place else f"grid setting {setting}"
        super().__init__(f"{place}: {self.reason}" if place else self.reason)  # type: ignore[call-arg]
        self.argument, self.row, self.query, self.qid = argument, row, query, qid
        self.setting = setting
        self.list, self.rank = list, rank
        self.key = key if self._has_key else None

    def fields(self) -> dict:
        """The attributes that locate it, as keyword arguments of the constructor."""
        fields = {name: getattr(self, name) for name in _FIELDS}
        if not self._has_key:
            del fields["key"]
        return fields

    def located(self, **fields: Any):
        """The same error with some fields replaced (``query=2``, ``row=None, qid="q1"``,
        ``key=doc_id``): a new exception whose message is made from them."""
        return type(self)(self._template, **{**self.fields(), **fields})

    def __reduce__(self):
        return (_rebuild, (type(self), self._template, self.fields()))


def _rebuild(cls, template, fields):
    return cls(template, **fields)


class FusionError(_Located, ValueError):
    """A wrong value given to a fusion (a ``ValueError``): attributes as the module says."""


class FusionTypeError(_Located, TypeError):
    """An argument of a wrong type given to a fusion (a ``TypeError``): attributes as the module
    says."""


class TrecFormatError(ValueError):
    """A run or qrels file that cannot be read: names the file and, where it applies, the line.

    Attributes: ``path`` (the file as given), ``line`` (1-based line number, or None when the
    problem is the file as a whole, e.g. it is empty or its gzip data are corrupt) and ``reason``.
    """

    def __init__(self, path: Any, line: Optional[int], reason: str) -> None:
        self.path = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
        self.line = line
        self.reason = reason
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.reason))


FusionError.__module__ = FusionTypeError.__module__ = "rankfusion"
TrecFormatError.__module__ = "rankfusion.trec"
