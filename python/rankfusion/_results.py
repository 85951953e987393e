"""The result types' Python face: their checked constructors, pickling, repr, to_dict, docs.

``Contribution``, ``Hit``, ``Revalidated``, ``BatchResult`` and ``RevalidatedBatch`` are made in
Rust (rust/py/results.rs): C-level tuple subclasses whose first fields are the tuple and the
others attributes only, read-only, hashed and compared as the tuple. The core makes its results
there, never through the constructor. This module, imported by the package, gives each type
what is called on it from Python:

- ``Type(field, ..., optional=None, ...)``: every field checked (a field of the wrong kind is a
  TypeError or ValueError naming it, ``Hit.score``, with the messages of the binding's argument
  conversion, rust/py/args.rs), reals stored as floats; arguments bound as the Rust constructor
  bound them, with its messages;
- ``__reduce__``: the type and every field, so that a pickle is loaded through the constructor;
- ``__repr__``: ``Hit(key='a', score=0.5)``, the fields of the tuple and the others that are set;
- ``to_dict()`` (types whose data are plain): every field set by name, nested results as dicts;
- the type's docstring.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _core

__all__: List[str] = []

# === What a field may hold ========================================================================
# Each check takes the value and the field's name (``Hit.score``) and returns what is stored.


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return "<unrepresentable>"


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {_repr(value)}"


def _any(value: Any, name: str) -> Any:
    return value


def _hashable(value: Any, name: str) -> Any:
    if type(value) is str or type(value) is int or isinstance(value, Hashable):
        return value
    raise TypeError(f"{name} must be hashable, got {_describe(value)}")


# Reals and counts are converted as the binding converts every argument (rust/py/args.rs); an
# exact float, or an exact int >= 0 for a count, is what that conversion keeps, without the call.


def _real(value: Any, name: str) -> float:
    return value if type(value) is float else _core._real(value, name)


def _count(value: Any, name: str) -> Any:
    return value if type(value) is int and value >= 0 else _core._count(value, name)


def _contributions(value: Any, name: str) -> Tuple[Any, ...]:
    """Any iterable of ``Contribution`` but a str/bytes/bytearray, as a tuple."""
    items = _core._tuple(value, name)
    for i, item in enumerate(items):
        if type(item) is not _core.Contribution:
            raise TypeError(f"{name}[{i}] must be a Contribution, got {_describe(item)}")
    return items


def _array(dtype: str, ndim: int) -> Callable[[Any, str], Any]:
    """A check: a numpy array of this dtype and number of dimensions."""

    def check(value: Any, name: str) -> Any:
        if (
            hasattr(value, "dtype")
            and str(value.dtype) == dtype
            and value.ndim == ndim
            and type(value).__name__ == "ndarray"
        ):
            return value
        raise TypeError(f"{name} must be a {ndim}-D {dtype} numpy array, got {_describe(value)}")

    return check


def _batch_shapes(names: Tuple[str, ...], fields: List[Any]) -> None:
    """A batch result's shapes: ids (Q, W), scores (Q, W), counts (Q,), each trace (Q, W, L),
    as the core checks them (``crate::batch::check_result_shapes``)."""
    ids, scores, counts = (f.shape for f in fields[:3])
    traced = [(name, f.shape) for name, f in zip(names[3:], fields[3:]) if f is not None]
    _core._result_shapes(ids, scores, counts, traced)


# === The types ====================================================================================


# (Plain classes: a NamedTuple costs a compilation at import, a millisecond for two.)


class _Field:
    """A field: its name, its check, and whether it may be None (and is when not given)."""

    __slots__ = ("name", "check", "optional")

    def __init__(self, name: str, check: Callable[[Any, str], Any], optional: bool = False):
        self.name, self.check, self.optional = name, check, optional


class _Face:
    """What this module gives a type: its docstring, its fields, ``to_dict``'s docstring (None
    for no ``to_dict``: a batch result's arrays are not plain data) and whether its constructor
    checks the arrays' shapes (``_batch_shapes``)."""

    __slots__ = ("doc", "fields", "to_dict", "shapes")

    def __init__(
        self,
        doc: str,
        fields: Tuple[_Field, ...],
        to_dict: Optional[str] = None,
        shapes: bool = False,
    ):
        self.doc, self.fields, self.to_dict, self.shapes = doc, fields, to_dict, shapes


_BATCH_ARRAYS = (
    _Field("ids", _array("int64", 2)),
    _Field("scores", _array("float64", 2)),
)

_FACES = {
    _core.Contribution: _Face(
        "What one list gave a hit: the tuple `(list_index, rank, weight, contribution, score)`."
        "\n\n"
        "`rank` is the 1-based position in list `list_index` (0 for a list that does not hold the"
        "\nkey but still gives it a value: borda's unranked share, a mean's zero); `score` the "
        "list's\nraw score (None where unknown) and `normalized` (an attribute, not unpacked) "
        "what the\nmethod's normalisation made of it. `Contribution(list_index, rank, weight, "
        "contribution,\nscore=None, normalized=None)` checks them (list_index an int >= 0, rank "
        "an int >= 0, the\nothers reals).",
        (
            _Field("list_index", _count),
            _Field("rank", _count),
            _Field("weight", _real),
            _Field("contribution", _real),
            _Field("score", _real, True),
            _Field("normalized", _real, True),
        ),
        to_dict="Plain JSON-ready data; ``score`` and ``normalized`` only where known.",
    ),
    _core.Hit: _Face(
        "A fused hit: the tuple `(key, score)`; its trace (`contributions`, `factor`, `divisor`,"
        "\n`boost`) is None unless `trace=True`.\n\n"
        "`Hit(key, score, contributions=None, factor=None, divisor=None, boost=None)` checks its"
        "\nfields (a hashable key, real score/factor/divisor/boost, a tuple of Contribution).",
        (
            _Field("key", _hashable),
            _Field("score", _real),
            _Field("contributions", _contributions, True),
            _Field("factor", _real, True),
            _Field("divisor", _real, True),
            _Field("boost", _real, True),
        ),
        to_dict="Plain JSON-ready data: ``key``, ``score`` and, when traced, the rest of the trace.",
    ),
    _core.Revalidated: _Face(
        "A live candidate: the tuple `(id, record, score)`.",
        (_Field("id", _hashable), _Field("record", _any), _Field("score", _real)),
        to_dict="Plain data: ``id``, ``record`` and ``score``.",
    ),
    _core.BatchResult: _Face(
        "The result of `rrf_batch`, `fuse_batch` and `Fusion.batch`: the tuple `(ids, scores, "
        "counts)`; `ranks`, `contributions` and `normalized` (attributes, not unpacked) are "
        "(Q, W, L) arrays with trace=True, else None.",
        (
            *_BATCH_ARRAYS,
            _Field("counts", _array("int64", 1)),
            _Field("ranks", _array("int32", 3), True),
            _Field("contributions", _array("float64", 3), True),
            _Field("normalized", _array("float64", 3), True),
        ),
        shapes=True,
    ),
    _core.RevalidatedBatch: _Face(
        "The live candidates of a batch: the tuple `(ids, scores, counts)`.",
        (*_BATCH_ARRAYS, _Field("counts", _array("int64", 1))),
        shapes=True,
    ),
}


def _constructor(cls: type, fields: Tuple[_Field, ...], shapes: bool) -> Callable[..., Any]:
    """``cls.__new__``: ``cls(field, ..., optional=None, ...)``, every field checked; the fields
    are bound to the arguments (and the errors raised) in the order of the Rust constructor
    this replaces."""
    type_name = cls.__name__
    n = len(fields)
    required = sum(not f.optional for f in fields)
    names = tuple(f.name for f in fields)
    checks = tuple((f"{type_name}.{f.name}", f.check, f.optional) for f in fields)
    plan = tuple((i, f.name, *check) for i, (f, check) in enumerate(zip(fields, checks)))
    make = _core._result

    def __new__(*args: Any, **kwargs: Any) -> Any:
        # args[0] is the class
        if not kwargs and required < len(args) <= n + 1:  # (the fields not given are None)
            values = [
                None if optional and value is None else check(value, qualified)
                for value, (qualified, check, optional) in zip(args[1:], checks)
            ]
        else:
            values = bind(args, kwargs)
        if shapes:
            _batch_shapes(names, values)
        return make(cls, values)

    def bind(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> List[Any]:
        given = max(len(args) - 1, 0)
        if given > n:
            raise TypeError(f"{type_name}() takes at most {n} arguments ({given} given)")
        values: List[Any] = []
        for i, name, qualified, check, optional in plan:
            if name in kwargs:
                if i < given:
                    raise TypeError(f"{type_name}() got multiple values for argument '{name}'")
                value = kwargs[name]
            elif i < given:
                value = args[i + 1]
            elif optional:
                values.append(None)
                continue
            else:
                raise TypeError(f"{type_name}() missing required argument '{name}'")
            values.append(None if optional and value is None else check(value, qualified))
        for key in kwargs:
            if key not in names:
                key.encode()  # (a keyword with a lone surrogate: the UnicodeEncodeError it was)
                raise TypeError(f"{type_name}() got an unexpected keyword argument '{key}'")
        return values

    return __new__


def _methods(cls: type, fields: Tuple[_Field, ...]) -> Dict[str, Callable[..., Any]]:
    """``__reduce__``, ``__repr__`` and ``to_dict`` of ``cls``."""
    type_name = cls.__name__
    names = tuple(f.name for f in fields)
    values = operator.attrgetter(*names)
    optional = tuple(f.optional for f in fields)
    nested = tuple(f.check is _contributions for f in fields)

    def __reduce__(self: Any) -> Tuple[type, Tuple[Any, ...]]:
        return (cls, values(self))

    def __repr__(self: Any) -> str:
        visible = len(self)
        shown = ", ".join(
            f"{name}={value!r}"
            for i, (name, value) in enumerate(zip(names, values(self)))
            if i < visible or value is not None
        )
        return f"{type_name}({shown})"

    def to_dict(self: Any) -> Dict[str, Any]:
        d = {}
        for name, value, maybe, inner in zip(names, values(self), optional, nested):
            if maybe and value is None:
                continue
            d[name] = [x.to_dict() for x in value] if inner else value
        return d

    return {"__reduce__": __reduce__, "__repr__": __repr__, "to_dict": to_dict}


def _attach() -> None:
    for cls, face in _FACES.items():
        methods = {"__new__": _constructor(cls, face.fields, face.shapes)}
        methods.update(_methods(cls, face.fields))
        if face.to_dict is None:
            del methods["to_dict"]
        else:
            methods["to_dict"].__doc__ = face.to_dict
        for name, method in methods.items():
            method.__qualname__ = f"{cls.__name__}.{name}"
            method.__module__ = cls.__module__
            setattr(cls, name, staticmethod(method) if name == "__new__" else method)
        cls.__doc__ = face.doc


_attach()
