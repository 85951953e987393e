"""TREC run and qrels files: read, fuse, evaluate and write them.

A **run** file has one line per retrieved document, ``qid Q0 docid rank score tag``; a **qrels**
file has one line per judged document, ``qid 0 docid gain``. Fields are separated by whitespace;
blank lines are ignored; a file may be gzip'd (recognised by its content, not its name).

In memory a run is a ``dict`` ``{qid: Ranking}`` in the order the queries first appear in the file,
where a :class:`Ranking` holds a query's doc ids and raw scores, best first. By default
(``order="score"``) a query's documents are ranked the way trec_eval ranks them: by score
descending, ties by doc id descending (a plain string comparison). The rank column is read but
never used, exactly as in trec_eval. ``order="file"`` keeps the order of the lines instead.

Qrels are ``{qid: {docid: gain}}`` with integer gains.

Every reading error is a :class:`TrecFormatError` (a ``ValueError``) naming the file and, when the
problem sits on a line, its number (1-based, counting every line of the file). What each malformed
input does is documented in ``docs/cli.md``; in short:

- a line with the wrong number of fields, a score that is not a number or is NaN, a gain that is
  not an integer: error naming the line;
- a file with no lines at all (or only blank ones): error, unless ``allow_empty=True``;
- a doc id twice in one query: error naming both lines (``duplicates="error"``, the default, like
  trec_eval), or keep the best-ranked occurrence (``"first"``), or keep every line (``"keep"``,
  which is what fusion with ``duplicates="first"`` or ``"sum"`` needs);
- corrupt gzip data or text that is not UTF-8: undecodable bytes are kept as they are
  (``surrogateescape``) and written back unchanged; corrupt gzip data is an error naming the file.

A file is read whole (gunzipped) into memory and parsed by the Rust core (``rust/trec.rs``), which
also formats the lines :func:`write_run` writes for rankings and fused hits.

Fusion (:func:`fuse`) calls a :class:`rankfusion.Fusion` once per query; a query missing from
some runs is fused from the runs that have it. The ``rankfusion fuse`` command, when it needs no Python run
objects (no ``--qrels``, no ``--trace``), takes a native path instead: the files are parsed by the
core into byte ranges, fused by the same Rust fusion code ``rrf`` runs and formatted by the core,
with the GIL released and no Python object per line (``rust/trec/fuse.rs``); the output is byte
for byte what ``read_run`` + :func:`fuse` + :func:`write_run` write, and the errors are the same.
Writers are atomic: a file is written under a temporary name in
its own directory and renamed into place only once complete, so an error never leaves a
half-written file behind.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import math
import numbers
import operator
import os
import stat
import sys
import zlib
from itertools import compress, islice
from operator import eq, ge, itemgetter
from typing import (
    IO,
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Hashable,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _core
from ._core import Fusion
from .errors import FusionError, FusionTypeError, TrecFormatError

if TYPE_CHECKING:  # pragma: no cover
    from ._core import Hit

__all__ = [
    "MAX_GAIN",
    "Qrels",
    "Ranking",
    "Run",
    "TrecFormatError",
    "evaluate",
    "from_dict",
    "from_ranx",
    "fuse",
    "parse_metrics",
    "read_qrels",
    "read_run",
    "to_dict",
    "to_ranx",
    "write_qrels",
    "write_run",
]

PathLike = Union[str, "os.PathLike[str]"]

# Bytes read per step (Ctrl-C handled between reads; the file is then parsed whole).
_CHUNK_CHARS = 1 << 22
# Called with the name of each temporary file _AtomicFile makes (the command's worker tells its
# supervisor, which removes them if it has to end the command itself).
_made_temporary: Optional[Callable[[str], None]] = None
# What one write() of an output takes at most (bytes, or characters of text): Ctrl-C is
# handled between writes; 1 MB is ~1 ms to a file, ~25 ms to gzip.
_WRITE_PIECE = 1 << 20
_ORDERS = ("score", "file")
_READ_DUPLICATES = ("error", "first", "keep")


class Ranking(NamedTuple):
    """One query's ranked documents, best first: ``docids[i]`` has raw score ``scores[i]``.

    ``docids`` is what :func:`fuse` hands to ``rankfusion.rrf`` for the query; ``scores`` are the
    run's own scores, carried for traces and evaluation (RRF never uses them).
    """

    docids: List[str]
    scores: List[float]

    def pairs(self) -> Iterator[Tuple[str, float]]:
        """``(docid, score)`` pairs, best first."""
        return zip(self.docids, self.scores)


Run = Dict[str, Ranking]
Run.__doc__ = """A run: a plain ``dict`` ``{qid: Ranking}``, queries in the order they first appear
in the file. Each :class:`Ranking` holds the query's doc ids and raw scores, best first (by default
ranked as trec_eval ranks them: score descending, ties by doc id descending). Made by
:func:`read_run` and :func:`from_dict`; written by :func:`write_run`; fused by :func:`fuse`."""

Qrels = Dict[str, Dict[str, int]]
Qrels.__doc__ = """Relevance judgments: a plain ``dict`` ``{qid: {docid: gain}}`` with integer gains
(trec_eval's: > 0 relevant), queries and docs in the order of the file's lines. Made by
:func:`read_qrels`; written by :func:`write_qrels`; used by :func:`evaluate`."""


# --- reading ----------------------------------------------------------------------------------


def _check_choice(value: Any, name: str, choices: Tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _read_bytes(path: PathLike, progress: Union[bool, Any]) -> bytes:
    """The whole file, gunzipped when its first bytes are gzip's magic number, read ~4 MB at a
    time (Ctrl-C is handled between reads; a progress bar shows the bytes of the file read so
    far). A plain file is read by the core into one bytes of its size; a gzip'd file's pieces
    are joined by the core, which checks for Ctrl-C as it copies."""
    name = os.fspath(path)
    with open(path, "rb") as raw:
        status = os.fstat(raw.fileno())
        size = status.st_size
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        source: Any = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        bar = _progress_bar(progress, size, os.path.basename(name))
        try:
            if not gz and stat.S_ISREG(status.st_mode):
                try:
                    data = _core._read_file(
                        name, _CHUNK_CHARS, None if bar is None else lambda n: bar.update(n - bar.n)
                    )
                except OSError as e:  # named by its path, as open() names it
                    if not e.errno:
                        raise
                    raise OSError(e.errno, os.strerror(e.errno), name) from None
                if data is not None:
                    return data
                # its size changed while it was read: read it as it is now
            chunks: List[bytes] = []
            while True:
                chunk = source.read(_CHUNK_CHARS)
                if not chunk:
                    return chunks[0] if len(chunks) == 1 else _core._join_bytes(chunks)
                chunks.append(chunk)
                if bar is not None:
                    bar.update(raw.tell() - bar.n)
        except (EOFError, gzip.BadGzipFile, zlib.error) as e:
            raise TrecFormatError(name, None, f"corrupt gzip data ({e})") from None
        finally:
            if bar is not None:
                bar.close()


def _trec_eval_order(docids: List[str], scores: List[float]) -> Tuple[List[str], List[float]]:
    """Score descending, ties by doc id descending (trec_eval's order).

    Returns the inputs themselves when they are in that order already; when only the order
    inside groups of tied scores is off (the usual case: runs are written by score), only those
    groups are sorted; otherwise everything is.
    """
    n = len(scores)
    if n < 2:
        return docids, scores
    if all(map(ge, scores, islice(scores, 1, None))):
        ties = list(compress(range(n - 1), map(eq, scores, islice(scores, 1, None))))
        get = docids.__getitem__
        if all(map(ge, map(get, ties), map(get, map((1).__add__, ties)))):
            return docids, scores
        docids = list(docids)
        start = prev = ties[0]
        for i in islice(ties, 1, None):
            if i != prev + 1:  # a group of tied scores spans start..prev+1
                docids[start : prev + 2] = sorted(docids[start : prev + 2], reverse=True)
                start = i
            prev = i
        docids[start : prev + 2] = sorted(docids[start : prev + 2], reverse=True)
        return docids, scores
    pairs = sorted(zip(scores, docids), reverse=True)
    return list(map(itemgetter(1), pairs)), list(map(itemgetter(0), pairs))


def read_run(
    path: PathLike,
    *,
    order: Literal["score", "file"] = "score",
    duplicates: Literal["error", "first", "keep"] = "error",
    allow_empty: bool = False,
    progress: Union[bool, Any] = False,
) -> Run:
    """Read a TREC run file (``qid Q0 docid rank score tag``, plain or gzip'd).

    Returns ``{qid: Ranking}``, queries in the order they first appear. A query whose lines are
    not contiguous is gathered into one ranking.

    - ``order="score"`` (default): each query ranked as trec_eval ranks it, score descending,
      ties by doc id descending. ``order="file"``: the order of the lines. The rank column is
      never used (nor checked), the Q0 and tag columns neither.
    - ``duplicates``: a doc id on two lines of one query is an error naming both lines
      (``"error"``, default, as trec_eval); ``"first"`` keeps its best-ranked line (in the order
      chosen above); ``"keep"`` keeps every line (for ``rrf(duplicates="first"|"sum")``).
    - ``allow_empty``: a file without a single non-blank line is an error unless True.
    - ``progress``: True draws a tqdm bar on stderr (or pass a dict of tqdm arguments).

    Raises :class:`TrecFormatError` (a ValueError) naming the file and line for: a line that
    does not have 6 fields, a score that is not a number or is NaN (``inf`` is accepted), a
    duplicate doc id (with ``duplicates="error"``), an empty file, corrupt gzip data.
    ``OSError`` when the file cannot be opened; ValueError for a bad argument.
    """
    _check_choice(order, "order", _ORDERS)
    _check_choice(duplicates, "duplicates", _READ_DUPLICATES)
    name = os.fspath(path)
    queries = _core._parse_run(_read_bytes(path, progress), name, order, duplicates)
    if not queries and not allow_empty:
        raise TrecFormatError(name, None, "empty run: the file has no lines")
    return {qid: Ranking(docids, scores) for qid, docids, scores in queries}


def read_qrels(
    path: PathLike,
    *,
    duplicates: Literal["error", "first"] = "error",
    allow_empty: bool = False,
    progress: Union[bool, Any] = False,
) -> Qrels:
    """Read a TREC qrels file (``qid 0 docid gain``, plain or gzip'd) into ``{qid: {docid: gain}}``.

    Gains are integers (negative ones are kept: trec_eval treats gain <= 0 as not relevant).
    A doc id judged twice for one query is an error naming both lines (``duplicates="error"``)
    or keeps its first line (``"first"``). Raises :class:`TrecFormatError` naming the file and
    line for: a line that does not have 4 fields, a gain that is not an integer, a duplicate, an
    empty file (unless ``allow_empty``), corrupt gzip data.
    """
    _check_choice(duplicates, "duplicates", ("error", "first"))
    name = os.fspath(path)
    qrels: Qrels = _core._parse_qrels(_read_bytes(path, progress), name, duplicates)
    if not qrels and not allow_empty:
        raise TrecFormatError(name, None, "empty qrels: the file has no lines")
    return qrels


# --- writing ----------------------------------------------------------------------------------


class _AtomicFile:
    """A text file written under a temporary name beside its target, renamed into place by
    ``commit()``; ``discard()`` removes it. Gzip'd when the target name ends with ``.gz``.

    A target that exists and is not a regular file (``/dev/null``, a FIFO) is written directly:
    renaming over it would replace the device. A symlink's target is the file replaced.
    """

    def __init__(self, path: PathLike, *, compress: Optional[bool] = None) -> None:
        self.path = os.fspath(path)
        gz = self.path.endswith(".gz") if compress is None else compress
        self._tmp: Optional[str] = None
        if os.path.exists(self.path) and not os.path.isfile(self.path):
            self._raw = open(self.path, "wb")  # noqa: SIM115 - a device, FIFO, /dev/stdout
        else:
            target = os.path.realpath(self.path)
            folder, base = os.path.split(target)
            for _ in range(100):
                tmp = os.path.join(folder, f".{base}.{os.urandom(4).hex()}.tmp")
                try:
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                except FileExistsError:  # pragma: no cover - 32 random bits
                    continue
                except OSError as e:  # a missing folder, say: named by the file asked for
                    raise type(e)(e.errno, e.strerror, self.path) from None
                break
            try:  # Ctrl-C here leaves no file behind
                self._tmp = tmp
                self._target = target
                if _made_temporary is not None:
                    _made_temporary(tmp)
                self._raw = os.fdopen(fd, "wb")
            except BaseException:
                with contextlib.suppress(OSError):
                    os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        binary: Any = (
            gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
            if gz
            else self._raw
        )
        self._gz = binary if gz else None
        self._binary = binary
        self.file = io.TextIOWrapper(
            binary, encoding="utf-8", errors="surrogateescape", newline="\n"
        )

    def write_bytes(self, data: bytes) -> None:
        """Writes ``data`` as it is, as writing its text (UTF-8, ``surrogateescape``) to
        ``file`` would: for a file written only this way (flushing ``file`` first would put a
        gzip sync block before the data). A piece at a time (Ctrl-C handled between pieces:
        one write of the 0.45 GB of 18 M lines took up to 0.4 s, gzip's seconds)."""
        view = memoryview(data)
        for start in range(0, len(view), _WRITE_PIECE):
            self._binary.write(view[start : start + _WRITE_PIECE])

    def finish(self) -> None:
        """Completes the file (every byte written, the gzip trailer, closed) under its
        temporary name: what can fail for lack of space fails here, before ``commit``."""
        if self._raw.closed:
            return
        self.file.flush()
        if self._gz is not None:
            self._gz.close()  # writes the gzip trailer; leaves the raw file open
        self._raw.close()

    def commit(self) -> None:
        self.finish()
        if self._tmp is not None:
            try:
                os.replace(self._tmp, self._target)
            except OSError as e:  # named by the file asked for, not its temporary name
                raise type(e)(e.errno, e.strerror, self.path) from None
            self._tmp = None

    def discard(self, close: bool = True) -> None:
        """Removes the temporary file. With ``close=False`` its name is removed and the file
        left open, for a process about to end (``os._exit``) to close: closing a large file
        just written makes the kernel drop its pages then, about 0.1 s a GB (POSIX only: the
        file is closed first elsewhere, which cannot remove an open file)."""
        if close or os.name == "nt":
            try:
                self._raw.close()
            except OSError:  # pragma: no cover
                pass
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except OSError:  # pragma: no cover
                pass
            self._tmp = None

    def __enter__(self) -> IO[str]:
        return self.file

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def _check_id(value: str, what: str) -> None:
    if not isinstance(value, str) or value.split() != [value]:
        raise ValueError(f"{what} must be non-empty and contain no whitespace, got {value!r}")


def _id_text(value: Any, what: str) -> str:
    """An id to write: a str as it is, an int (numpy ints too, not bool) as its digits. Anything
    else (None, a float, bytes) would be written as a text that no reader gives back."""
    if isinstance(value, str):
        return value
    if not isinstance(value, bool) and hasattr(type(value), "__index__"):
        return str(operator.index(value))
    raise ValueError(f"{what} must be a str or an int, got {type(value).__name__} {value!r}")


def _score_value(score: Any, qid: str, docid: str) -> float:
    """A score to write: a real number, not NaN (``read_run`` refuses NaN)."""
    try:
        if isinstance(score, (str, bytes, bytearray)):
            raise TypeError
        value = float(score)
    except (TypeError, ValueError):
        raise ValueError(
            f"query {qid!r}: the score of doc {docid!r} must be a real number, "
            f"got {type(score).__name__} {score!r}"
        ) from None
    if math.isnan(value):
        raise ValueError(f"query {qid!r}: the score of doc {docid!r} is NaN (read_run refuses it)")
    return value


def _ranked_pairs(ranked: Any) -> Tuple[List[Any], List[Any]]:
    """(docids, scores) of a Ranking, a {docid: score} mapping, hits, or (docid, score) pairs."""
    if isinstance(ranked, Ranking):
        return ranked.docids, ranked.scores
    if isinstance(ranked, Mapping):
        return list(ranked.keys()), list(ranked.values())
    items = ranked if isinstance(ranked, list) else list(ranked)
    if items and hasattr(items[0], "key") and hasattr(items[0], "score"):  # fused hits
        return [h.key for h in items], [h.score for h in items]
    return [p[0] for p in items], [p[1] for p in items]


def _run_lines(qid: str, docids: List[Any], scores: List[Any], tag: str) -> str:
    """The lines of one query, scores written exactly (repr). Refuses what ``read_run`` would
    not read back: ValueError naming the query and the doc for an id that is not a str or an
    int, is empty or contains whitespace, and for a score that is not a real number or is NaN."""
    if len(docids) != len(scores):
        raise ValueError(f"query {qid!r}: {len(docids)} doc ids but {len(scores)} scores")
    if not docids:
        return ""
    if set(map(type, docids)) != {str}:
        docids = [_id_text(d, f"doc id of query {qid!r}") for d in docids]
    joined = "".join(docids)
    if not all(docids) or joined.split() != [joined]:  # an empty id, or whitespace in one
        for d in docids:
            _check_id(d, f"doc id of query {qid!r}")
    if set(map(type, scores)) != {float}:
        scores = [_score_value(s, qid, d) for d, s in zip(docids, scores)]
    elif math.isnan(sum(scores)):  # a NaN, or inf + -inf: each is then checked
        for d, s in zip(docids, scores):
            _score_value(s, qid, d)
    head = f"{qid} Q0 "
    tail = f" {tag}\n"
    return "".join(
        [f"{head}{d} {r} {s!r}{tail}" for r, d, s in zip(range(1, len(docids) + 1), docids, scores)]
    )


def write_run(
    run: Mapping[Any, Any],
    path: Union[PathLike, IO[str]],
    *,
    tag: str = "rankfusion",
    progress: Union[bool, Any] = False,
) -> None:
    """Write a run as TREC lines ``qid Q0 docid rank score tag``, ranks 1..n in the given order.

    ``run`` maps each qid to a :class:`Ranking`, a list of fused hits (what :func:`fuse` returns),
    ``(docid, score)`` pairs, or a ``{docid: score}`` mapping (in its own order). Scores are
    written exactly (shortest repr that reads back as the same float64). ``path`` is a file name
    (gzip'd when it ends with ``.gz``; written atomically: a temporary file renamed into place, so
    an error leaves nothing behind) or an open text file (every query is formatted before the
    first character is written to it, so an error writes nothing there either).

    It writes only what :func:`read_run` reads back: ids are ``str`` or ``int`` (numpy ints too;
    written as their digits), scores real numbers (``inf`` included). Raises ValueError, naming
    the query and the doc, when the tag, a qid or a doc id is empty, contains whitespace or is
    of another type (None, a float, bytes), when a score is not a real number or is NaN, or when
    a Ranking's doc ids and scores differ in length; nothing is written then.
    """
    _check_id(tag, "tag")
    if isinstance(path, (str, os.PathLike)):
        pending = _AtomicFile(path)
        try:
            _write_run_to(run, pending.file, tag, progress)
        except BaseException:
            pending.discard()
            raise
        pending.commit()
    else:
        _write_run_to(run, path, tag, progress)


def _write_run_to(run: Mapping[Any, Any], out: IO[str], tag: str, progress: Any) -> None:
    """Formats every query, then writes: an error leaves ``out`` untouched."""
    items: Iterable = run.items()
    bar = _progress_bar(progress, len(run), "writing", unit="query")
    texts = []
    for qid, ranked in items:
        qid = _id_text(qid, "qid")
        _check_id(qid, "qid")
        # Rankings and fused hits of str ids and non-NaN float scores are formatted by the core
        # (None: anything else, which the Python formatter converts or refuses)
        text = None
        if isinstance(ranked, Ranking):
            if len(ranked.docids) == len(ranked.scores):
                text = _core._run_lines(qid, ranked.docids, ranked.scores, tag)
        elif type(ranked) is list:
            text = _core._run_lines(qid, ranked, None, tag)
        if text is None:
            docids, scores = _ranked_pairs(ranked)
            text = _run_lines(qid, docids, scores, tag)
        texts.append(text)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    out.writelines(texts)


def write_qrels(qrels: Mapping[Any, Mapping[Any, int]], path: Union[PathLike, IO[str]]) -> None:
    """Write qrels as ``qid 0 docid gain`` lines (atomically, gzip'd for ``.gz``; see
    :func:`write_run`). Ids are ``str`` or ``int``, as for :func:`write_run`. Raises ValueError
    for a non-integer gain, or an id that is empty, contains whitespace or is of another type."""
    lines = []
    for qid, judged in qrels.items():
        qid = _id_text(qid, "qid")
        _check_id(qid, "qid")
        for docid, gain in judged.items():
            docid = _id_text(docid, f"doc id of query {qid!r}")
            _check_id(docid, f"doc id of query {qid!r}")
            if isinstance(gain, bool) or not isinstance(gain, int):
                if type(gain) is float and gain.is_integer():
                    gain = int(gain)
                else:
                    raise ValueError(f"gain of {qid!r}/{docid!r} must be an integer, got {gain!r}")
            lines.append(f"{qid} 0 {docid} {gain}\n")
    text = "".join(lines)
    if isinstance(path, (str, os.PathLike)):
        with _AtomicFile(path) as out:
            out.write(text)
    else:
        path.write(text)


# --- fusion -----------------------------------------------------------------------------------


def fuse(
    runs: Sequence[Mapping[str, Ranking]],
    fusion: Optional[Fusion] = None,
    *,
    queries: Optional[Iterable[str]] = None,
    progress: Union[bool, Any] = False,
    **settings: Any,
) -> Dict[str, List[Hit]]:
    """Fusion of runs, query by query: ``{qid: [Hit, ...]}``, best first.

    Each query is fused by ``fusion`` (a :class:`rankfusion.Fusion`; or one made from
    ``settings``, its keyword arguments) on the runs' doc id lists, in the order of ``runs`` (so
    ``Contribution.list_index`` is the index of the run). A score-based method reads the runs'
    scores (each must then be finite). A query missing from some runs is fused from the runs that
    have it (a missing run contributes an empty list); queries come in the order they first
    appear in ``runs[0]``, then ``runs[1]``, ... With ``trace=True`` each contribution also
    carries the run's raw score. ``queries`` restricts fusion to those qids (absent ones are left
    out). Raises what the fusion raises (FusionError / FusionTypeError), located at the query
    (its ``qid``), for the first query that fails; the settings are checked against the number
    of runs before any query is fused.
    """
    fusion = _fusion_of(fusion, settings)
    fusion.check(len(runs))
    with_scores = fusion.trace or fusion.reads_scores
    if queries is None:
        qids: Dict[str, None] = {}
        for run in runs:
            qids.update(dict.fromkeys(run))
        order: Iterable[str] = qids
    else:
        order = [q for q in dict.fromkeys(queries) if any(q in run for run in runs)]
    n = len(order) if isinstance(order, (dict, list)) else None
    bar = _progress_bar(progress, n, "fusing", unit="query")
    empty = Ranking([], [])
    fused: Dict[str, List[Hit]] = {}
    for qid in order:
        rankings = [run.get(qid, empty) for run in runs]
        try:
            fused[qid] = fusion(
                [r.docids for r in rankings],
                [r.scores for r in rankings] if with_scores else None,
            )
        except (FusionError, FusionTypeError) as e:
            raise e.located(qid=qid) from None
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return fused


def _fusion_of(fusion: Optional[Fusion], settings: Dict[str, Any]) -> Fusion:
    """``fusion``, or one made from ``settings`` (not both)."""
    if fusion is None:
        return Fusion(**settings)
    if settings:
        raise TypeError(f"give a Fusion or its settings, not both (got {sorted(settings)})")
    if not isinstance(fusion, Fusion):
        raise TypeError(f"fusion must be a rankfusion.Fusion, got {type(fusion).__name__}")
    return fusion


# --- the native path: read + fuse + write without Python run objects --------------------------


def _read_run_files(
    paths: Sequence[PathLike],
    *,
    order: Literal["score", "file"] = "score",
    duplicates: Literal["error", "first", "keep"] = "error",
    progress: Union[bool, Any] = False,
) -> List[Any]:
    """The runs ``[read_run(p, order=order, duplicates=duplicates) for p in paths]`` would
    read, kept by the core as bytes and byte ranges (``_core._RunFile``: ``len()`` queries,
    ``.qids()``) for :func:`_fuse_run_files`; parsed on the core's threads.

    Raises what that list comprehension raises, for the same file: files are read in order, and
    the error of the first one that cannot be read (OSError, corrupt gzip data), does not parse,
    or is empty, is raised.
    """
    _check_choice(order, "order", _ORDERS)
    _check_choice(duplicates, "duplicates", _READ_DUPLICATES)
    datas: List[bytes] = []
    failed: Optional[BaseException] = None
    for path in paths:
        try:
            datas.append(_read_bytes(path, progress))
        except Exception as e:  # raised below, unless a file before it is bad
            failed = e
            break
    names = [os.fspath(p) for p in paths[: len(datas)]]
    files = _core._parse_run_files(datas, names, order, duplicates)
    for name, parsed in zip(names, files):
        if isinstance(parsed, BaseException):
            raise parsed
        if not len(parsed):
            raise TrecFormatError(name, None, "empty run: the file has no lines")
    if failed is not None:
        raise failed
    return files


def _fuse_run_files(
    files: Sequence[Any],
    fusion: Optional[Fusion] = None,
    *,
    tag: str = "rankfusion",
    **settings: Any,
) -> bytes:
    """The bytes :func:`write_run` writes for ``fuse(runs, fusion)`` with ``tag``, where ``runs``
    are the runs ``files`` (from :func:`_read_run_files`) hold: fused and formatted by the core
    (``rust/trec/fuse.rs``) with the GIL released, without a Python object per line. Raises what
    ``fuse`` raises for the first query that fails (located at its qid), and ValueError for a
    bad tag.
    """
    fusion = _fusion_of(fusion, settings)
    _check_id(tag, "tag")
    return _core._fuse_run_files(list(files), fusion, tag=tag.encode("utf-8", "surrogateescape"))


# --- interop ----------------------------------------------------------------------------------


def to_dict(run: Mapping[Any, Any]) -> Dict[str, Dict[str, float]]:
    """``{qid: {docid: score}}`` (ir-measures, pytrec_eval, ranx) from a run or fused hits.

    Each inner dict is in rank order; a doc id that occurs twice keeps its best-ranked score.
    """
    out: Dict[str, Dict[str, float]] = {}
    for qid, ranked in run.items():
        docids, scores = _ranked_pairs(ranked)
        d = dict(zip(docids, scores))
        if len(d) != len(docids):  # duplicates: the first (best-ranked) occurrence wins
            d = {}
            for docid, score in zip(docids, scores):
                d.setdefault(docid, score)
        out[qid] = d
    return out


def from_dict(
    run: Mapping[Hashable, Mapping[Hashable, float]],
    *,
    order: Literal["score", "insertion"] = "score",
) -> Run:
    """A run from ``{qid: {docid: score}}``: ranked as trec_eval ranks it (``order="score"``:
    score descending, ties by doc id descending) or in each inner mapping's own order
    (``"insertion"``). Ids are turned into ``str``. Raises ValueError for a NaN or non-numeric
    score or an id that is empty or contains whitespace."""
    _check_choice(order, "order", ("score", "insertion"))
    out: Run = {}
    for qid, docs in run.items():
        q = qid if isinstance(qid, str) else str(qid)
        _check_id(q, "qid")
        docids = [d if isinstance(d, str) else str(d) for d in docs.keys()]
        for d in docids:
            _check_id(d, f"doc id of query {q!r}")
        try:
            scores = [float(s) for s in docs.values()]
        except (TypeError, ValueError) as e:
            raise ValueError(f"query {q!r}: a score is not a number ({e})") from None
        if any(math.isnan(s) for s in scores):
            raise ValueError(f"query {q!r}: a score is NaN")
        if order == "score":
            docids, scores = _trec_eval_order(docids, scores)
        out[q] = Ranking(docids, scores)
    return out


def _import_ranx() -> Any:
    try:
        import ranx
    except ImportError:
        raise ImportError(
            "ranx is not installed: pip install ranx (or rankfusion[bench])"
        ) from None
    return ranx


def to_ranx(run: Mapping[Any, Any], *, name: Optional[str] = None) -> Any:
    """A ``ranx.Run`` from a run or fused hits. Needs ranx (ImportError otherwise)."""
    ranx = _import_ranx()
    return ranx.Run.from_dict(to_dict(run), name=name)


def from_ranx(run: Any) -> Run:
    """A run from a ``ranx.Run``, ranked by score with trec_eval's tie order. Needs ranx."""
    _import_ranx()
    return from_dict(run.to_dict(), order="score")


# --- evaluation -------------------------------------------------------------------------------

_METRIC_ALIASES = {
    "ndcg": "nDCG",
    "recall": "R",
    "r": "R",
    "precision": "P",
    "p": "P",
    "map": "AP",
    "ap": "AP",
    "mrr": "RR",
    "rr": "RR",
    "success": "Success",
    "bpref": "Bpref",
    "err": "ERR",
    "judged": "Judged",
    "rprec": "Rprec",
    "infap": "infAP",
}


def _import_ir_measures() -> Any:
    try:
        import ir_measures
    except ImportError:
        raise ImportError("evaluation needs ir-measures: pip install 'rankfusion[eval]'") from None
    return ir_measures


def parse_metrics(spec: Union[str, Iterable[str]]) -> List[Any]:
    """ir-measures measures from names such as ``"ndcg@10,recall@100,map,mrr@10"``.

    Accepts ir-measures names (``nDCG@10``, ``R@100``, ``AP``, ``RR@10``, ``P@5``), their
    lower-case forms and common aliases (``recall``, ``precision``, ``map``, ``mrr``), and
    trec_eval names (``ndcg_cut.10``, ``recall.100``). Raises ValueError for an unknown name,
    ImportError when ir-measures is not installed.
    """
    ir_measures = _import_ir_measures()
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    measures: List[Any] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        base, at, cutoff = name.partition("@")
        candidates = [name, _METRIC_ALIASES.get(base.lower(), base) + at + cutoff]
        measure = None
        for candidate in candidates:
            try:
                measure = ir_measures.parse_measure(candidate)
                break
            except Exception:  # ir-measures raises several types for unknown names
                pass
        if measure is None:
            try:
                parsed = ir_measures.parse_trec_measure(name)
                measure = parsed[0] if len(parsed) == 1 else None
            except Exception:
                measure = None
        if measure is None:
            raise ValueError(
                f"unknown metric {name!r} (examples: ndcg@10, recall@100, map, mrr@10, p@5)"
            )
        measures.append(measure)
    if not measures:
        raise ValueError(f"no metric in {spec!r}")
    return measures


#: The largest gain (in size) that evaluation takes: trec_eval counts a query's judgments in an
#: array of ``max gain + 1`` entries, and pytrec_eval reads gains as C ints; beyond that it
#: crashes or misreads them.
MAX_GAIN = 1_000_000


def _gain(value: Any, qid: Any, docid: Any) -> int:
    """A judgment's gain as the int pytrec_eval needs: an integer of any type (numpy's too, as
    a qrels DataFrame gives them) or an integral float (``1.0``); else (a bool, a string, 1.5,
    NaN) a TypeError naming the judgment; a gain beyond ``MAX_GAIN`` in size, a ValueError."""
    gain = None
    if type(value) is int:
        gain = value
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        gain = int(value)  # numpy's ints (numpy's bool is not an Integral)
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        x = float(value)
        if math.isfinite(x) and x.is_integer():
            gain = int(x)
    if gain is not None:
        if abs(gain) > MAX_GAIN:
            raise ValueError(
                f"qrels[{qid!r}][{docid!r}] must be a gain from {-MAX_GAIN} to {MAX_GAIN} "
                f"(what trec_eval evaluates), got {gain}"
            )
        return gain
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    raise TypeError(f"qrels[{qid!r}][{docid!r}] must be an integer gain, got {name} {value!r}")


def _int_gains(qrels: Mapping[Any, Mapping[Any, Any]]) -> Dict[Any, Dict[Any, int]]:
    """``qrels`` with every gain an int (see ``_gain``), as pytrec_eval takes them; a TypeError
    names the first judgment that is not an integer (``qrels['1']['a']``)."""
    out: Dict[Any, Dict[Any, int]] = {}
    for qid, judged in qrels.items():
        if not isinstance(judged, Mapping):
            raise TypeError(
                f"qrels[{qid!r}] must be a mapping {{docid: gain}}, got {type(judged).__name__}"
            )
        out[qid] = {d: _gain(g, qid, d) for d, g in judged.items()}
    return out


def evaluate(
    run: Mapping[Any, Any], qrels: Qrels, metrics: Union[str, Iterable[Any]] = "ndcg@10"
) -> Dict[str, float]:
    """Mean of each metric, computed by ir-measures (pytrec_eval, i.e. trec_eval's definitions):
    ``{"nDCG@10": 0.42, ...}``. The mean is over every judged query: a judged query missing
    from the run counts as 0 (as ``trec_eval -c``); queries without judgments are ignored.

    ``run`` is a run or fused hits; it is evaluated as trec_eval would evaluate the file
    :func:`write_run` writes: trec_eval ranks by score and breaks ties by doc id, whatever the
    rank column says. ``qrels``: ``{qid: {docid: gain}}``, each gain an integer (numpy's too)
    or an integral float (``1.0``); another gain is a TypeError naming it (``qrels['1']['a']``),
    and one beyond ``MAX_GAIN`` (10**6) in size a ValueError (trec_eval cannot evaluate it).
    Raises ImportError when ir-measures is not installed.
    """
    ir_measures = _import_ir_measures()
    qrels = _int_gains(qrels)
    if isinstance(metrics, str):
        measures = parse_metrics(metrics)
    else:
        measures = [parse_metrics(m)[0] if isinstance(m, str) else m for m in metrics]
    result = _calc_aggregate(ir_measures.evaluator(measures, qrels), to_dict(run))
    return {str(m): float(result.get(m, 0.0)) for m in measures}


# pytrec_eval evaluates a run in one call that holds the GIL and never checks for signals
# (~0.3 us an entry): runs are evaluated this many entries at a time, so Ctrl-C is prompt.
_EVALUATE_ENTRIES = 100_000


def _calc_aggregate(evaluator: Any, run: Dict[str, Dict[str, float]]) -> Dict[Any, float]:
    """``evaluator.calc_aggregate(run)``, the same values bit for bit, with an evaluator of
    ir-measures' pytrec_eval provider called on pieces of the run of about
    ``_EVALUATE_ENTRIES`` entries: each measure's values are added in the order ir-measures
    adds them (the run's queries in order, then the judged queries without a value, sorted);
    any other evaluator is called on the whole run."""
    try:
        from ir_measures.providers.pytrec_eval_provider import PytrecEvalEvaluator
    except ImportError:  # pragma: no cover - another ir-measures
        return evaluator.calc_aggregate(run)
    invokers = getattr(evaluator, "invokers", None)
    if type(evaluator) is not PytrecEvalEvaluator or not isinstance(invokers, list):
        return evaluator.calc_aggregate(run)
    aggregators = {m: m.aggregator() for m in evaluator.measures}
    expected = set(itertools.product(evaluator.measures, evaluator.qrel_qids))
    piece: Dict[str, Dict[str, float]] = {}
    size = 0
    queries = iter(run.items())
    while True:
        item = next(queries, None)
        if item is not None:
            piece[item[0]] = item[1]
            size += len(item[1])
            if size < _EVALUATE_ENTRIES:
                continue
        for invoker in invokers:  # a measure is one invoker's: its values in query order
            for metric in invoker.iter_calc(piece):
                expected.discard((metric.measure, metric.query_id))
                aggregators[metric.measure].add(metric.value)
        if item is None:
            break
        piece, size = {}, 0
    for measure, _ in sorted(expected, key=lambda x: (str(x[0]), x[1])):
        aggregators[measure].add(measure.DEFAULT)
    return {m: agg.result() for m, agg in aggregators.items()}


# --- progress ---------------------------------------------------------------------------------


def _progress_bar(progress: Any, total: Optional[int], desc: str, unit: str = "B") -> Any:
    """A tqdm bar on stderr when ``progress`` is truthy (a dict adds tqdm arguments), else None."""
    if not progress:
        return None
    from tqdm import tqdm

    options = {
        "total": total,
        "desc": desc,
        "unit": unit,
        "unit_scale": unit == "B",
        "leave": False,
        "file": sys.stderr,
        "dynamic_ncols": True,
        "delay": 0.5,  # only operations that take a while get a bar
    }
    if isinstance(progress, dict):
        options.update(progress)
    return tqdm(**options)
