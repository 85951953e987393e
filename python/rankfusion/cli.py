"""The ``rankfusion`` command: fuse, explain and evaluate TREC runs.

Exit status: 0 success; 2 bad usage (an unknown option, a bad value, a missing input file, an
unknown metric, an option whose extra is not installed); 1 bad data (a malformed line, a corrupt
gzip file, a query or doc that is not there, an I/O error while reading or writing); 141 the
reader of stdout went away (``| head``: quietly, as a process SIGPIPE ends); 130 interrupted. On
any error nothing is written: every output file is written under a temporary name and renamed
into place only after everything succeeded. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import gc
import io
import math
import os
import signal as _signal
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple

from . import trec

__all__ = ["main"]

PROG = "rankfusion"

FUSE_EXAMPLES = """\
examples:
  # fuse two runs with RRF (k=60), top 1000 per query, to a file
  rankfusion fuse bm25.run.gz minilm.run.gz -o fused.run

  # weight the second run by half, keep the top 100 of each run, tag the output
  rankfusion fuse bm25.run minilm.run --weights 1,0.5 --window 100 --tag hybrid -o fused.run

  # evaluate the inputs and the fusion (the table goes to stdout because -o is given)
  rankfusion fuse bm25.run.gz minilm.run.gz --qrels qrels.txt \\
      --metrics ndcg@10,recall@100 -o fused.run.gz

  # keep a JSON Lines trace of every fused score, per run
  rankfusion fuse a.run b.run c.run -o fused.run --trace fused.trace.jsonl

  # Elasticsearch's linear retriever: min-max normalised scores, weighted
  rankfusion fuse bm25.run minilm.run --method wsum --norm min-max --weights 0.3,0.7 -o fused.run

  # Qdrant's DBSF; a run of distances (smaller is better)
  rankfusion fuse bm25.run dist.run --method dbsf --lower-is-better false,true -o fused.run
"""

EXPLAIN_EXAMPLES = """\
examples:
  # how the fused top 10 of query 1 were made
  rankfusion explain bm25.run.gz minilm.run.gz --query 1

  # why doc 184 ranks where it does for query 1, with the same options as the fusion
  rankfusion explain bm25.run.gz minilm.run.gz --query 1 --doc 184 --weights 1,0.5
"""


OPTIMIZE_EXAMPLES = """\
examples:
  # RRF's k on nDCG@10 (k = 10, 20, ..., 100), with 5-fold cross-validation
  rankfusion optimize bm25.run.gz minilm.run.gz --qrels qrels.txt --method rrf \\
      --metric ndcg@10 --folds 5

  # weights of a min-max weighted sum: every triple of tenths summing to 1 (66 settings),
  # then the fused run with the best weights
  rankfusion optimize a.run b.run c.run --qrels qrels.txt --method wsum --norm min-max \\
      --metric map --step 0.1 -o best.run

  # weighted RRF: k and the weights at once; every setting's score to a TSV file
  rankfusion optimize a.run b.run --qrels qrels.txt --method rrf --metric ndcg@10 \\
      --grid k=20,60,100 --grid weights --table settings.tsv

  # which normalisation suits CombSUM
  rankfusion optimize a.run b.run --qrels qrels.txt --method sum --metric ndcg@10 \\
      --grid norm=min-max,z-score,max,rank
"""


EXIT_BROKEN_PIPE = 141
"""The exit status when the reader of stdout goes away (``| head``): 128 + SIGPIPE, what a shell
reports for cat, seq or grep ended by SIGPIPE there."""


class UsageError(Exception):
    """A command line that cannot be carried out: exit status 2."""


class DataError(Exception):
    """Input data that cannot be used: exit status 1."""


# --- argument parsing -------------------------------------------------------------------------


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def _k(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return int(value) if value.is_integer() else value


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _integer(text: str) -> int:
    """Any integer (``--seed``: negative too, as ``rankfusion.optimize(seed=...)`` takes)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _weights(text: str) -> List[float]:
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    return [_number(p) for p in parts]


def _tag(text: str) -> str:
    if text.split() != [text]:
        raise argparse.ArgumentTypeError(f"must be non-empty without whitespace, got {text!r}")
    return text


def _flags(text: str) -> List[bool]:
    words = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    parts = [p.strip().lower() for p in text.split(",")]
    if not all(p in words for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated true/false (or yes/no, 1/0), got {text!r}"
        )
    return [words[p] for p in parts]


def _add_fusion_options(parser: argparse.ArgumentParser) -> None:
    from ._tables import METHODS, NORMS

    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run files: TREC (plain or .gz) or Parquet (.parquet, .pq)",
    )
    parser.add_argument(
        "--method",
        choices=tuple(METHODS),
        default="rrf",
        metavar="M",
        help="the fusion method (default rrf): rank-based rrf, rbc, isr, log_isr, logn_isr, "
        "bordafuse, condorcet; score-based sum, wsum, mnz, anz, gmnz, max, min, med, wmnz, "
        "mixed, dbsf, relative_score, arithmetic_mean, geometric_mean, harmonic_mean",
    )
    parser.add_argument(
        "--norm",
        choices=NORMS,
        metavar="N",
        help="a score-based method's normalisation of each run per query (default none): "
        + ", ".join(NORMS),
    )
    parser.add_argument(
        "-k", type=_k, default=None, metavar="K", help="RRF constant: w / (K + rank) (default 60)"
    )
    parser.add_argument(
        "--weights",
        type=_weights,
        metavar="W1,W2,...",
        help="one weight per run, for weighted methods (default all 1; 0 skips a run, "
        "negative demotes)",
    )
    parser.add_argument(
        "--lower-is-better",
        type=_flags,
        metavar="B1,B2,...",
        help="per run, true when its scores are distances (smaller is better), e.g. false,true",
    )
    parser.add_argument(
        "--phi", type=_number, metavar="PHI", help="rbc's persistence, 0 <= PHI < 1"
    )
    parser.add_argument("--gamma", type=_number, metavar="G", help="gmnz's exponent")
    parser.add_argument(
        "--sigma", type=_number, metavar="S", help="logn_isr's constant, 0 <= S <= 1 (default 0.01)"
    )
    parser.add_argument(
        "--window",
        type=_int_at_least(1),
        metavar="N",
        help="read only the top N documents of each run per query (default all)",
    )
    parser.add_argument(
        "--duplicates",
        choices=("first", "sum", "error"),
        default="first",
        help="a doc id twice in one query of one run: count its best rank (first, default), "
        "count every line (sum), or stop with an error naming the line (error)",
    )
    parser.add_argument(
        "--order",
        choices=("score", "file"),
        default="score",
        help="how a run ranks a query's documents: by score with trec_eval's tie order "
        "(doc id descending; default), or in the order of the file's lines",
    )
    parser.add_argument(
        "--format",
        choices=("trec", "parquet"),
        default=None,
        help="the format of every RUN (and of -o FILE); default: by file name, Parquet for "
        ".parquet/.pq, TREC otherwise. Parquet needs the 'arrow' extra",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bar and no warnings on stderr"
    )


class _VersionAction(argparse.Action):
    """``--version``: the installed version, read from the package metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show the version and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from . import __version__

        print(f"{parser.prog} {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``rankfusion`` command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Fuse, explain and evaluate TREC runs with Reciprocal Rank Fusion and "
        "21 other rank- and score-based methods: fast and deterministic.",
        epilog="Run 'rankfusion COMMAND --help' for a command's options and examples. "
        "Exit status: 0 ok, 1 bad data, 2 bad usage, 141 stdout's reader gone (| head), 130 "
        "interrupted.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    fuse = commands.add_parser(
        "fuse",
        help="fuse runs into one run; optionally trace and evaluate",
        description="Fuse TREC runs, by default with Reciprocal Rank Fusion: each run "
        "contributes weight / (k + rank) to each document it ranks, per query (--method picks "
        "one of 21 other rank- and score-based methods). Writes the fused run "
        "(qid Q0 docid rank score tag, ranks 1..n) to stdout or -o. A query missing from "
        "some runs is fused from the runs that have it.",
        epilog=FUSE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_fusion_options(fuse)
    fuse.add_argument(
        "--limit",
        type=_int_at_least(0),
        default=1000,
        metavar="N",
        help="keep the top N fused documents per query (default 1000; 0 keeps all)",
    )
    fuse.add_argument(
        "--tag",
        type=_tag,
        default="rankfusion",
        help="run tag, the 6th column (default %(default)s)",
    )
    fuse.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="fused run file (.gz compresses; default stdout)",
    )
    fuse.add_argument(
        "--trace",
        metavar="TRACE.jsonl",
        help="write one JSON object per fused hit: its per-run ranks, raw scores, weights "
        "and contributions",
    )
    fuse.add_argument(
        "--qrels",
        metavar="QRELS",
        help="evaluate every input run and the fusion against these judgments (needs the "
        "'eval' extra); the table goes to stdout when -o is given, else to stderr",
    )
    fuse.add_argument(
        "--metrics",
        default=None,
        metavar="M1,M2,...",
        help="metrics for --qrels, ir-measures or trec_eval names (default ndcg@10,recall@100)",
    )
    fuse.set_defaults(handler=_fuse_command)

    explain = commands.add_parser(
        "explain",
        help="show how fused scores of one query were made",
        description="Show, for one query, how each fused score was made: per run the rank, "
        "the raw score, the normalised score (score-based methods), the weight and the "
        "contribution, as the method makes it (below), and what the method applied to their "
        "sum. Use the same fusion options as for 'rankfusion fuse'.",
        epilog=_formulas_text() + "\n" + EXPLAIN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_fusion_options(explain)
    explain.add_argument("--query", required=True, metavar="Q", help="the query id")
    which = explain.add_mutually_exclusive_group()
    which.add_argument("--doc", metavar="D", help="explain this document only")
    which.add_argument(
        "--top",
        type=_int_at_least(1),
        default=10,
        metavar="N",
        help="explain the fused top N (default 10)",
    )
    explain.set_defaults(handler=_explain_command)

    optimize = commands.add_parser(
        "optimize",
        help="tune a fusion's parameters on qrels (exact grids, cross-validation)",
        description="Grid-search a fusion's parameters on relevance judgments: every setting of "
        "an exact grid fuses the runs and is scored per query by ir-measures (pytrec_eval); the "
        "best is the first setting of the grid with the highest mean. With --folds K the queries "
        "are split into K folds and each fold is scored with the setting chosen on the other "
        "folds, beside the in-sample best. Needs the 'eval' extra (ir-measures).",
        epilog=OPTIMIZE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_optimize_options(optimize)
    optimize.set_defaults(handler=_optimize_command)
    _add_compare_command(commands, fuse)
    return parser


def _grid_option(text: str) -> Tuple[str, Optional[List[Any]]]:
    """``NAME`` or ``NAME=V1,V2,...``; weights as ``W1:W2:...`` per vector."""
    name, eq, values = text.partition("=")
    name = name.strip()
    if name not in ("k", "weights", "phi", "gamma", "sigma", "norm"):
        raise argparse.ArgumentTypeError(
            f"expected NAME or NAME=V1,V2,... with NAME one of k, weights, phi, gamma, sigma, "
            f"norm; got {text!r}"
        )
    if not eq:
        return name, None
    parts = [p.strip() for p in values.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"expected comma-separated values, got {text!r}")
    if name == "norm":
        return name, parts
    if name == "weights":
        vectors = []
        for part in parts:
            items = [w.strip() for w in part.split(":")]
            if not all(items):
                raise argparse.ArgumentTypeError(
                    f"expected weight vectors W1:W2:... separated by commas, got {text!r}"
                )
            vectors.append([_number(w) for w in items])
        return name, vectors
    return name, [_k(p) if name == "k" else _number(p) for p in parts]


def _add_optimize_options(parser: argparse.ArgumentParser) -> None:
    from ._tables import METHODS, NORMS

    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run files (two or more): TREC (plain or .gz) or Parquet (.parquet, .pq)",
    )
    parser.add_argument("--qrels", required=True, metavar="QRELS", help="relevance judgments")
    parser.add_argument(
        "--method",
        required=True,
        choices=tuple(METHODS),
        metavar="M",
        help="the fusion method: " + ", ".join(METHODS),
    )
    parser.add_argument(
        "--norm",
        choices=NORMS,
        metavar="N",
        help="a score-based method's normalisation (default none): " + ", ".join(NORMS),
    )
    parser.add_argument(
        "--metric",
        required=True,
        metavar="M",
        help="the measure to maximise, an ir-measures or trec_eval name (ndcg@10, map, "
        "recall@100, P@5, ...)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        type=_grid_option,
        metavar="NAME[=V1,V2,...]",
        help="a parameter to tune (repeat for several; the settings are the product, the "
        "first varying slowest): k, weights, phi, gamma, sigma or norm, with its values or, "
        "without, its default grid (k 10..100 by 10; phi, gamma, sigma 0.01..1 by 0.01, phi "
        "< 1; weights: every vector of multiples of --step summing to 1). Weight vectors are "
        "written W1:W2:..., e.g. weights=0.3:0.7,0.5:0.5. Default: the method's own parameter "
        "(rrf k, rbc phi, gmnz gamma, logn_isr sigma), else its weights",
    )
    parser.add_argument(
        "--step",
        type=_number,
        metavar="S",
        help="the weights grid's step (default 0.1); 1/S must be a whole number",
    )
    parser.add_argument(
        "--folds",
        type=_int_at_least(2),
        metavar="K",
        help="K-fold cross-validation over the judged queries",
    )
    parser.add_argument(
        "--seed",
        type=_integer,
        default=0,
        metavar="S",
        help="the folds' seed, any integer (default 0): the same seed, the same folds",
    )
    parser.add_argument(
        "--lower-is-better",
        type=_flags,
        metavar="B1,B2,...",
        help="per run, true when its scores are distances (smaller is better)",
    )
    parser.add_argument(
        "--window",
        type=_int_at_least(1),
        metavar="N",
        help="read only the top N documents of each run per query (default all)",
    )
    parser.add_argument(
        "--limit",
        type=_int_at_least(0),
        default=1000,
        metavar="N",
        help="cut each fused list to its top N before it is evaluated and written (default "
        "1000, as 'rankfusion fuse' writes; 0 keeps all)",
    )
    parser.add_argument(
        "--duplicates",
        choices=("first", "sum", "error"),
        default="first",
        help="a doc id twice in one query of one run: as for 'rankfusion fuse'",
    )
    parser.add_argument(
        "--order",
        choices=("score", "file"),
        default="score",
        help="how a run ranks a query's documents (default score: trec_eval's order)",
    )
    parser.add_argument(
        "--format",
        choices=("trec", "parquet"),
        default=None,
        help="the format of every RUN and of -o FILE (default: by file name)",
    )
    parser.add_argument(
        "--top",
        type=_int_at_least(0),
        default=10,
        metavar="N",
        help="show the N best settings (default 10)",
    )
    parser.add_argument(
        "--table",
        metavar="FILE",
        help="write every setting and its score as tab-separated values",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the run fused with the chosen setting (the in-sample best), as "
        "'rankfusion fuse' writes it with that setting",
    )
    parser.add_argument(
        "--tag", type=_tag, default="rankfusion", help="run tag of -o (default %(default)s)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no warnings")


# --- shared steps -----------------------------------------------------------------------------


def _progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _warn(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"{PROG}: warning: {message}", file=sys.stderr)


def _check_inputs(paths: Sequence[str]) -> None:
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"no such file: {path}")
        if os.path.isdir(path):
            raise UsageError(f"is a directory: {path}")
        if not os.access(path, os.R_OK):
            raise UsageError(f"cannot read: {path}")


def _check_output(path: Optional[str], what: str) -> None:
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise UsageError(f"{what} is a directory: {path}")
    if os.path.exists(path) and not os.path.isfile(path):
        return  # a device or a FIFO (/dev/null, /dev/stdout): written directly
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{what}: no such directory: {os.path.dirname(path) or '.'}")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{what}: cannot write in {folder}")


def _check_stdout(what: str = "") -> None:
    """A DataError when stdout is closed (``>&-``: Python then has no ``sys.stdout``)."""
    if sys.stdout is None:
        raise DataError(f"stdout is closed: nowhere to write to{what}")


def _write_stdout(text: str) -> None:
    """Writes ``text`` to stdout and flushes it: every character is out, or an OSError is raised
    (BrokenPipeError when the reader went away).

    Unbuffered stdout (``python -u``, PYTHONUNBUFFERED=1) hands each text straight to write(2)
    and ignores a short count -- which is what a pipe returns when its reader closes during the
    write -- so the rest would be lost without an error. There the text is encoded as stdout
    encodes it and written until every byte is out.

    The text goes out a piece at a time (``trec._WRITE_PIECE`` characters), Ctrl-C handled
    between pieces: a run of 18 M lines is 0.45 GB.
    """
    out = sys.stdout
    raw = getattr(out, "buffer", None)
    pieces = range(0, len(text), trec._WRITE_PIECE)
    with _writing("stdout"):
        if (
            isinstance(out, io.TextIOWrapper)
            and isinstance(raw, io.RawIOBase)
            and os.linesep == "\n"
        ):
            out.flush()
            encoder = codecs.getincrementalencoder(out.encoding)(out.errors or "strict")
            for start in pieces:
                piece = text[start : start + trec._WRITE_PIECE]
                data = memoryview(encoder.encode(piece, final=start + len(piece) == len(text)))
                while data:
                    n = raw.write(data)
                    if n is None:  # a non-blocking stdout that is full
                        raise BlockingIOError(0, "stdout cannot take more now")
                    data = data[n:]
        else:
            for start in pieces:
                out.write(text[start : start + trec._WRITE_PIECE])
            out.flush()


def _write_stdout_bytes(data: bytes) -> None:
    """Writes ``data`` (UTF-8, ``surrogateescape``: what the core writes) to stdout as its text,
    as the Python path writes its text: in stdout's encoding and error handler. Decoded and
    written a piece at a time (see :func:`_write_stdout`)."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    view = memoryview(data)
    for start in range(0, max(len(view), 1), trec._WRITE_PIECE):
        end = start + trec._WRITE_PIECE
        _write_stdout(decoder.decode(view[start:end], final=end >= len(view)))


@contextlib.contextmanager
def _writing(name: str) -> Iterator[None]:
    """An OSError raised while writing ``name`` (an output file, ``stdout``) as a DataError
    that names it (``/dev/full: No space left on device``); a broken pipe is left alone (the
    reader of stdout went away: see ``main``)."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as e:
        if e.filename is not None:  # it names its file already
            raise
        raise DataError(f"{name}: {e.strerror or e}") from None


def _commit(pending: Sequence[Any], stdout: Optional[Callable[[], None]] = None) -> None:
    """Completes the temporary files ``pending`` (``trec._AtomicFile``s, written), then renames
    each into place; ``stdout`` first writes what goes to stdout (the run, a table), so that a
    stdout that fails (full, closed, a broken pipe) leaves every output file untouched. On any
    error every temporary file is removed.

    Ctrl-C (SIGINT) waits for the renames to end (microseconds): the outputs are all in place
    or none is. In the command's own process SIGINT is then ignored: the command has done its
    work and ends with its status (Ctrl-C at that moment would say "interrupted", or print a
    traceback, over outputs in place)."""
    try:
        for p in pending:
            with _writing(p.path):
                p.finish()
        if stdout is not None:
            stdout()
        with _renaming():
            for p in pending:
                with _writing(p.path):
                    p.commit()
    except BaseException:
        for p in pending:
            _discard(p)
        raise


@contextlib.contextmanager
def _renaming() -> Iterator[None]:
    """SIGINT (and, in the worker, SIGTERM and SIGHUP) recorded, not acted on, during the block,
    where Python handles them. At its end, in the command's own process, the outputs are in
    place: SIGINT is ignored for the rest of the command, SIGTERM and SIGHUP get their default
    action back, and one recorded ends the process now. Else, or when the block failed, the
    handlers before are put back and the signals recorded delivered to them."""
    caught: List[int] = []
    before: Dict[int, Any] = {}
    _tell(b"busy")  # the supervisor waits for the renames, however long a Ctrl-C waits
    done = False
    try:
        try:
            for name in ("SIGINT", *_CLEANED_UP):
                signo = getattr(_signal, name, None)
                if signo is not None and callable(_signal.getsignal(signo)):
                    before[signo] = _signal.signal(signo, lambda signo, frame: caught.append(signo))
        except ValueError:  # not the main thread: signals are not ours to handle
            pass
        yield
        done = True
    finally:
        if done and _LEFT is not None:
            for signo in before:
                _signal.signal(
                    signo, _signal.SIG_IGN if signo == _signal.SIGINT else _signal.SIG_DFL
                )
            for signo in caught:
                if signo != _signal.SIGINT:
                    _end_by(signo)
        else:
            for signo, handler in before.items():
                _signal.signal(signo, handler)
            for signo in dict.fromkeys(caught):
                _signal.raise_signal(signo)


_OPTION_NAMES = {
    "lower_is_better": "--lower-is-better",
    "k": "-k",
    "weights": "--weights",
    "norm": "--norm",
    "phi": "--phi",
    "gamma": "--gamma",
    "sigma": "--sigma",
    "window": "--window",
    "limit": "--limit",
    "duplicates": "--duplicates",
    "method": "--method",
}


def _check_fusion(args: argparse.Namespace) -> Any:
    """The fusion of the options, checked once (and against the number of runs): a usage error
    (exit 2) naming the option before anything is read."""
    from . import Fusion, FusionError, FusionTypeError

    try:
        fusion = Fusion(**_fusion_options(args))
        fusion.check(len(args.runs))
    except (FusionError, FusionTypeError) as e:
        option = _OPTION_NAMES.get(e.argument or "", f"--{e.argument}" if e.argument else "")
        raise UsageError(f"argument {option}: {e.reason}" if option else e.reason) from None
    return fusion


def _read_mode(args: argparse.Namespace) -> Any:
    # With --duplicates first/sum every line is kept and rrf decides; with error the reader
    # stops at the second line and names it.
    return "error" if args.duplicates == "error" else "keep"


def _warn_missing(args: argparse.Namespace, qids: Sequence[Sequence[str]]) -> None:
    """Warns about the queries some runs lack; ``qids[i]`` are the query ids of run i."""
    if args.quiet or len(qids) < 2:
        return
    every: Dict[str, None] = {}
    for run in qids:
        every.update(dict.fromkeys(run))
    for path, run in zip(args.runs, qids):
        have = set(run)
        missing = [q for q in every if q not in have]
        if missing:
            shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            _warn(
                args,
                f"{path} has no results for {len(missing)} of {len(every)} queries "
                f"({shown}); they are fused from the other runs",
            )


def _warn_unjudged(args: argparse.Namespace, qrels: trec.Qrels, runs: Sequence[Any]) -> None:
    """Warns when no query that the qrels judge is in a run (``001`` against ``1``): every mean
    of the table is then 0."""
    if any(q in run for run in runs for q in qrels if qrels[q]):
        return
    held: Dict[str, None] = {}
    for run in runs:
        held.update(dict.fromkeys(run))

    def shown(ids: List[str]) -> str:
        listed = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        return f"{len(ids)} quer{'y' if len(ids) == 1 else 'ies'} ({listed})"

    _warn(
        args,
        f"no judged query has results: {args.qrels} judges {shown(list(qrels))}, none of "
        f"which a run has (the runs have {shown(list(held))}); every mean is 0",
    )


def _read_runs(args: argparse.Namespace) -> List[trec.Run]:
    progress = _progress(args)
    runs = []
    for path in args.runs:
        if _format(args, path) == "parquet":
            table = _read_table(args, path)
            frame = _frame()
            try:
                run = frame._to_run(
                    table, path, "qid", "docid", "score", args.order, _read_mode(args)
                )
            except frame.TableError as e:
                raise DataError(str(e)) from None
        else:
            run = trec.read_run(
                path, order=args.order, duplicates=_read_mode(args), progress=progress
            )
        runs.append(run)
    _warn_missing(args, [list(run) for run in runs])
    return runs


# --- Parquet ----------------------------------------------------------------------------------


def _format(args: argparse.Namespace, path: Optional[str]) -> str:
    """The format of a run file or of -o: --format, else Parquet for .parquet/.pq names."""
    if path is None or path == "-":
        return "trec"  # stdout
    if args.format:
        return str(args.format)
    return "parquet" if path.lower().endswith((".parquet", ".pq")) else "trec"


def _frame() -> Any:
    """rankfusion.frame; a UsageError when pyarrow is missing."""
    try:
        from . import frame
    except ImportError as e:
        raise UsageError(f"Parquet: {e}") from None
    return frame


def _read_table(args: argparse.Namespace, path: str) -> Any:
    """A run file as a table ``qid, docid, score`` (Parquet: any preset's column names)."""
    frame = _frame()
    if _format(args, path) == "trec":
        return frame.read_trec(path, order=args.order, duplicates=_read_mode(args))
    try:
        table = frame.read_table(path, format="parquet")
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: {e}") from None
    if table.num_rows == 0:
        raise DataError(f"{path}: empty run: the table has no rows")
    return table


def _fuse_tables(args: argparse.Namespace, fusion: Any) -> int:
    """``fuse`` when a run or -o is Parquet (no --qrels, --trace): the runs as Arrow tables,
    fused by rankfusion.frame; the same output, warnings and errors as the TREC paths."""
    frame = _frame()
    tables = [_read_table(args, path) for path in args.runs]
    qids = [frame._query_ids(t, "qid") for t in tables]
    _warn_missing(args, qids)
    files = dict(zip(frame._run_names(len(tables)), args.runs))  # runs[i] is args.runs[i]
    try:
        fused = frame.fuse(tables, fusion, order=args.order)
    except frame.TableError as e:  # named by its file
        path = files.get(e.run, e.run)
        raise DataError(str(frame.TableError(path, e.row, e.column, e.reason))) from None
    except frame.ColumnTypeError as e:
        path = files.get(e.run, e.run)
        raise DataError(str(frame.ColumnTypeError(path, e.column, e.reason))) from None
    del tables
    _write_tables(args, fused)
    return 0


def _write_tables(args: argparse.Namespace, fused: Any) -> None:
    """The fused table to -o (Parquet or TREC text) or to stdout (TREC text), named in an
    error, nothing half-written."""
    frame = _frame()
    if args.output and args.output != "-":
        parquet = _format(args, args.output) == "parquet"
        run_file = trec._AtomicFile(args.output, compress=False if parquet else None)
        try:
            with _writing(args.output):
                if parquet:
                    frame._write_parquet_file(fused, run_file)
                else:
                    frame.write_trec(fused, run_file.file, tag=args.tag)
        except BaseException:
            _discard(run_file)
            raise
        _commit([run_file])
    else:  # as the other paths write to stdout
        text = io.StringIO()
        frame.write_trec(fused, text, tag=args.tag)
        _write_stdout(text.getvalue())


# --- fuse -------------------------------------------------------------------------------------


def _trace_lines(fused: Dict[str, List[Any]], names: Sequence[str], out: TextIO) -> None:
    import json

    # raw scores may be +-inf (a valid run score): written as Infinity, as Python's json does
    encode = json.JSONEncoder(ensure_ascii=False).encode
    for qid, hits in fused.items():
        lines = []
        for rank, hit in enumerate(hits, 1):
            contributions = []
            for c in hit.contributions:
                item = {
                    "run": names[c.list_index],
                    "list_index": c.list_index,
                    "rank": c.rank,
                    "score": c.score,
                    "weight": c.weight,
                    "contribution": c.contribution,
                }
                if c.normalized is not None:
                    item["normalized"] = c.normalized
                contributions.append(item)
            record = {
                "qid": qid,
                "docid": hit.key,
                "rank": rank,
                "score": hit.score,
                "contributions": contributions,
            }
            for name in ("factor", "divisor"):
                if getattr(hit, name) is not None:
                    record[name] = getattr(hit, name)
            lines.append(encode(record))
        if lines:
            out.write("\n".join(lines) + "\n")


def _metric_table(rows: List[tuple], measures: List[str]) -> str:
    header = ["run", *measures]
    body = [[name, *(f"{values[m]:.4f}" for m in measures)] for name, values in rows]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = []
    for row in [header, *body]:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def _fuse_command(args: argparse.Namespace) -> int:
    fusion = _check_fusion(args)
    _check_inputs(args.runs + ([args.qrels] if args.qrels else []))
    _check_output(args.output, "-o")
    _check_output(args.trace, "--trace")
    if args.trace == "-":
        raise UsageError("--trace needs a file name (/dev/stdout prints it, with -o FILE)")
    if args.trace and args.output and os.path.realpath(args.trace) == os.path.realpath(args.output):
        raise UsageError("--trace and -o name the same file")
    measures: List[Any] = []
    if args.metrics is not None and not args.qrels:
        raise UsageError("--metrics needs --qrels")
    if args.compare and not args.qrels:
        raise UsageError("--compare needs --qrels")
    if args.qrels:
        try:
            measures = trec.parse_metrics(args.metrics or "ndcg@10,recall@100")
        except ImportError as e:
            raise UsageError(f"--qrels: {e}") from None
        except ValueError as e:
            raise UsageError(f"--metrics: {e}") from None
    if not args.output or args.output == "-":
        _check_stdout(" (write the run with -o FILE)")
    elif args.qrels:
        _check_stdout(" (the --qrels table goes to stdout with -o)")

    tables = any(_format(args, p) == "parquet" for p in [*args.runs, args.output])
    if _native(args):
        return _fuse_tables(args, fusion) if tables else _fuse_native(args, fusion)
    runs = _read_runs(args)
    qrels = trec.read_qrels(args.qrels, progress=_progress(args)) if args.qrels else None
    if qrels is not None:
        _warn_unjudged(args, qrels, runs)
    if args.trace:
        fusion = fusion.replace(trace=True)
    fused = trec.fuse(runs, fusion, progress=_progress(args))

    table = None
    if qrels is not None:
        names = [str(m) for m in measures]
        rows = [(path, trec.evaluate(run, qrels, measures)) for path, run in zip(args.runs, runs)]
        rows.append((f"fused ({_method_label(args)})", trec.evaluate(fused, qrels, measures)))
        table = _metric_table(rows, names)
        if args.compare:
            table += "\n" + _fused_comparison(args, runs, fused, qrels, measures)

    pending = []
    try:
        if args.trace:
            trace_file = trec._AtomicFile(args.trace)
            pending.append(trace_file)
            with _writing(args.trace):
                _trace_lines(fused, args.runs, trace_file.file)
        if _format(args, args.output) == "parquet":
            run_file = trec._AtomicFile(args.output, compress=False)
            pending.append(run_file)
            frame = _frame()
            with _writing(args.output):
                frame._write_parquet_file(frame.from_run(fused), run_file)
        elif args.output and args.output != "-":
            run_file = trec._AtomicFile(args.output)
            pending.append(run_file)
            with _writing(args.output):
                trec.write_run(fused, run_file.file, tag=args.tag, progress=_progress(args))
    except BaseException:
        for p in pending:
            _discard(p)
        raise

    def stdout() -> None:  # before the files are renamed into place: a failure leaves them
        if not args.output or args.output == "-":
            text = io.StringIO()
            trec.write_run(fused, text, tag=args.tag)
            _write_stdout(text.getvalue())
            if table is not None:
                sys.stderr.write(table)
        elif table is not None:
            _write_stdout(table)

    _commit(pending, stdout)
    _leave(locals())
    return 0


def _fusion_options(args: argparse.Namespace) -> Dict[str, Any]:
    """The settings of the fusion the options give (those not given left out)."""
    options = {
        "method": args.method,
        "norm": args.norm,
        "k": args.k,
        "weights": args.weights,
        "window": args.window,
        "duplicates": args.duplicates,
        "limit": getattr(args, "limit", None) or None,
        "lower_is_better": args.lower_is_better,
        "phi": args.phi,
        "gamma": args.gamma,
        "sigma": args.sigma,
    }
    return {name: value for name, value in options.items() if value is not None}


def _method_label(args: argparse.Namespace) -> str:
    """The fusion in a few words: ``RRF k=60``, ``wsum, min-max``, ``rbc phi=0.8``."""
    if args.method == "rrf":
        return f"RRF k={60 if args.k is None else args.k}"
    parts = [args.method + (f", {args.norm}" if args.norm else "")]
    for name in ("phi", "gamma", "sigma"):
        if getattr(args, name) is not None:
            parts.append(f"{name}={getattr(args, name)}")
    return " ".join(parts)


def _native(args: argparse.Namespace) -> bool:
    """Whether ``fuse`` takes the native path: when it needs no Python run objects."""
    return not args.qrels and not args.trace


def _fuse_native(args: argparse.Namespace, fusion: Any) -> int:
    """``fuse`` without --qrels and --trace: read, fuse and write in the core, without Python
    run objects; the same bytes, warnings, errors and exit status as the Python path."""
    files = trec._read_run_files(
        args.runs, order=args.order, duplicates=_read_mode(args), progress=_progress(args)
    )
    _warn_missing(args, [f.qids() for f in files])
    data = trec._fuse_run_files(files, fusion, tag=args.tag)
    del files
    if args.output and args.output != "-":
        run_file = trec._AtomicFile(args.output)
        try:
            with _writing(args.output):
                run_file.write_bytes(data)
        except BaseException:
            _discard(run_file)
            raise
        _commit([run_file])
    else:
        _write_stdout_bytes(data)
    return 0


# --- explain ----------------------------------------------------------------------------------


class _Absent:
    """A doc that some run ranks but that gets no fused score (outside the window, weight 0)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.score = None
        self.contributions = ()


def _fmt(x: Optional[float]) -> str:
    return "-" if x is None else repr(float(x))


def _formula(method: str) -> str:
    """How ``method`` makes each run's term and a doc's score, in ``METHODS``' own words (a new
    method brings its line with its row), for explain's header and ``explain --help``."""
    from ._tables import METHODS

    info = METHODS[method]
    own = f" ({info.norm})" if info.norm else ""
    return f"term = {info.term}{own}, score = {info.combine}"


def _formulas_text() -> str:
    """Each method's term and score, for ``explain --help``."""
    from ._tables import METHODS

    width = max(map(len, METHODS))
    lines = ["each run's term and the fused score, by --method:"]
    lines += [f"  {name.ljust(width)}  {_formula(name)}" for name in METHODS]
    lines.append(
        "  (w: the run's weight; r: the doc's rank in the run; v: its score after --norm; "
        "S: the sum of the doc's terms; |present|: the runs that hold it)"
    )
    return "\n".join(lines) + "\n"


def _explain_command(args: argparse.Namespace) -> int:
    fusion = _check_fusion(args).replace(trace=True)
    _check_inputs(args.runs)
    _check_stdout()
    runs = _read_runs(args)
    qid = args.query
    if not any(qid in run for run in runs):
        raise DataError(f"query {qid!r} is in none of the runs")
    fused = trec.fuse(runs, fusion, queries=[qid])[qid]
    weights = args.weights or [1.0] * len(runs)
    positions = []  # per run: doc id -> (rank, raw score) of its best-ranked line
    for run in runs:
        ranking = run.get(qid)
        where: Dict[str, tuple] = {}
        if ranking is not None:
            for rank, (docid, score) in enumerate(ranking.pairs(), 1):
                where.setdefault(docid, (rank, score))
        positions.append(where)

    selected: List[Tuple[Optional[int], Any]]
    if args.doc is not None:
        selected = [(rank, hit) for rank, hit in enumerate(fused, 1) if hit.key == args.doc]
        if not selected:
            if not any(args.doc in where for where in positions):
                raise DataError(f"no run ranks doc {args.doc!r} for query {qid!r}")
            selected = [(None, _Absent(args.doc))]
    else:
        selected = list(enumerate(fused[: args.top], 1))

    out = []
    total = len(fused)
    out.append(
        f"query {qid}: {total} fused document{'s' if total != 1 else ''}"
        + (f", top {args.top} shown" if args.doc is None and total > args.top else "")
        + f"; {_method_label(args)}, {_formula(args.method)}"
    )
    for fused_rank, hit in selected:
        out.append("")
        if fused_rank is None:
            out.append(f"doc {hit.key}: no fused score (no run counts it)")
        else:
            applied = [
                f"{name} {_fmt(getattr(hit, name))}"
                for name in ("factor", "divisor", "boost")
                if getattr(hit, name, None) is not None
            ]
            out.append(
                f"#{fused_rank}  doc {hit.key}  score {_fmt(hit.score)}"
                + "".join(f"  ({a})" for a in applied)
            )
        rows = [("run", "rank", "raw score", "normalised", "weight", "contribution")]
        by_run: Dict[int, List[Any]] = {}
        for c in hit.contributions or ():
            by_run.setdefault(c.list_index, []).append(c)
        for i, path in enumerate(args.runs):
            counted = by_run.get(i)
            if counted:
                for c in counted:
                    rank = str(c.rank) if c.rank else "-"  # 0: a value for a doc not in the run
                    rows.append(
                        (
                            path,
                            rank,
                            _fmt(c.score),
                            _fmt(c.normalized),
                            _fmt(c.weight),
                            _fmt(c.contribution) + ("" if c.rank else " (not in run)"),
                        )
                    )
                continue
            seen = positions[i].get(hit.key)
            if seen is None:
                why = "not in run" if qid in runs[i] else "query not in run"
                rows.append((path, "-", "-", "-", _fmt(weights[i]), why))
            elif weights[i] == 0:
                rows.append(
                    (path, str(seen[0]), _fmt(seen[1]), "-", _fmt(0.0), "skipped: weight 0")
                )
            else:
                rows.append(
                    (path, str(seen[0]), _fmt(seen[1]), "-", _fmt(weights[i]), "outside the window")
                )
        widths = [max(len(r[j]) for r in rows) for j in range(6)]
        for row in rows:
            cells = [row[0].ljust(widths[0])]
            cells += [c.rjust(w) for c, w in zip(row[1:5], widths[1:5])]
            out.append(("  " + "  ".join([*cells, row[5]])).rstrip())
    _write_stdout("\n".join(out) + "\n")
    return 0


# --- optimize ---------------------------------------------------------------------------------


def _setting_text(setting: Dict[str, Any]) -> str:
    """``k=60``, ``weights=0.2,0.7,0.1``, ``norm=min-max``; several joined by spaces."""
    parts = []
    for name, value in setting.items():
        if name == "weights":
            value = ",".join(repr(float(w)) for w in value)
        parts.append(f"{name}={value}")
    return " ".join(parts) or "(the method's defaults)"


def _optimize_command(args: argparse.Namespace) -> int:
    from . import _optimize

    if len(args.runs) < 2:
        raise UsageError("optimize needs at least 2 runs")
    _check_inputs([*args.runs, args.qrels])
    for name, path in (("-o", args.output), ("--table", args.table)):
        _check_output(path, name)
        if path == "-":
            raise UsageError(f"{name} needs a file name")
    if args.output and args.table and os.path.realpath(args.output) == os.path.realpath(args.table):
        raise UsageError("--table and -o name the same file")
    if args.lower_is_better is not None and len(args.lower_is_better) != len(args.runs):
        raise UsageError(
            f"--lower-is-better has {len(args.lower_is_better)} values for {len(args.runs)} runs"
        )
    grid: Optional[Dict[str, Any]] = None
    if args.grid:
        grid = {}
        for name, values in args.grid:
            if name in grid:
                raise UsageError(f"--grid names {name} twice")
            grid[name] = values
    try:
        import ir_measures  # noqa: F401
    except ImportError:
        raise UsageError("optimize needs ir-measures: pip install 'rankfusion[eval]'") from None
    try:
        plan = _optimize._plan(
            args.runs,
            args.method,
            args.norm,
            args.metric,
            args.step,
            grid,
            args.seed,
            args.order,
            args.window,
            args.duplicates,
            args.lower_is_better,
            args.limit or None,
        )
    except (ValueError, TypeError) as e:
        message = str(e)
        if message.startswith("unknown metric"):
            message = "--metric: " + message
        for name, option in (
            ("grid", "--grid"),
            ("step", "--step"),
            ("metric", "--metric"),
            ("norm is given", "--norm is given"),
        ):
            if message.startswith(name):
                message = option + message[len(name) :]
        raise UsageError(message) from None
    _check_stdout()
    # (its gains checked as evaluation takes them, as optimize() checks a qrels file's)
    qrels = trec._int_gains(trec.read_qrels(args.qrels, progress=_progress(args)))
    if args.folds is not None and args.folds > len(qrels):
        raise UsageError(f"--folds {args.folds}: the qrels judge only {len(qrels)} queries")
    n = len(plan.settings)
    head = (
        f"{args.method}" + (f" (norm {args.norm})" if args.norm else "")
        + f", {plan.measure} over {len(qrels)} judged queries: {n} setting{'s' if n != 1 else ''}"
        + f" ({plan.grid.description})"
    )  # fmt: skip
    _write_stdout(head + "\n")
    runs = _read_runs(args)
    result = _optimize._search(plan, runs, qrels, args.folds, _progress(args), threads=None)
    del runs
    zero = _optimize._all_zero(result)
    if zero is not None:
        _warn(args, zero)
    _write_stdout(_optimize_report(args, result))

    # the fused run first (it fuses every query of the runs, judged or not), then both files
    # are written under temporary names and renamed into place once both are complete
    fused: Any = None
    if args.output:
        best = result.fusion()
        parquet = any(_format(args, p) == "parquet" for p in [*args.runs, args.output])
        if parquet:
            frame = _frame()
            tables = [_read_table(args, path) for path in args.runs]
            fused = frame.fuse(tables, best, order=args.order)
            del tables
        else:
            files = trec._read_run_files(args.runs, order=args.order, duplicates=_read_mode(args))
            fused = trec._fuse_run_files(files, best, tag=args.tag)
            del files
    pending = []
    try:
        if args.table:
            table_file = trec._AtomicFile(args.table)
            pending.append(table_file)
            with _writing(args.table):
                _write_table(result, table_file.file)
        if isinstance(fused, bytes):
            run_file = trec._AtomicFile(args.output)
            pending.append(run_file)
            with _writing(args.output):
                run_file.write_bytes(fused)
        elif fused is not None and _format(args, args.output) == "parquet":
            run_file = trec._AtomicFile(args.output, compress=False)
            pending.append(run_file)
            with _writing(args.output):
                _frame()._write_parquet_file(fused, run_file)
        elif fused is not None:
            run_file = trec._AtomicFile(args.output)
            pending.append(run_file)
            with _writing(args.output):
                _frame().write_trec(fused, run_file.file, tag=args.tag)
    except BaseException:
        for p in pending:
            _discard(p)
        raise
    _commit(pending)
    _leave(locals())
    return 0


def _optimize_report(args: argparse.Namespace, result: Any) -> str:
    metric = result.metric
    lines = []
    order = sorted(range(len(result.settings)), key=lambda i: (-result.scores[i], i))
    shown = order[: args.top]
    if shown:
        rows = [("rank", "setting", metric)]
        for place, i in enumerate(shown, 1):
            rows.append((str(place), _setting_text(result.settings[i]), f"{result.scores[i]:.4f}"))
        widths = [max(len(r[j]) for r in rows) for j in range(3)]
        lines.append("")
        for r in rows:
            lines.append(
                f"{r[0].rjust(widths[0])}  {r[1].ljust(widths[1])}  {r[2].rjust(widths[2])}"
            )
    lines.append("")
    tie = (
        f" ({result.ties} settings share this score; the first in grid order is chosen)"
        if result.ties > 1
        else ""
    )
    lines.append(
        f"best (in-sample): {_setting_text(result.best)}  {metric} {result.best_score:.4f}{tie}"
    )
    if result.folds is not None:
        k = len(result.folds)
        lines.append(
            f"cross-validated ({k} folds, seed {result.seed}): {metric} {result.cv_score:.4f} "
            f"(each query scored with the setting chosen on the other {k - 1} folds)"
        )
        rows = [("fold", "queries", "chosen on the other folds", "there", "held out")]
        for f in result.folds:
            rows.append(
                (
                    str(f.index + 1),
                    str(len(f.queries)),
                    _setting_text(f.choice),
                    f"{f.train_score:.4f}",
                    f"{f.score:.4f}",
                )
            )
        widths = [max(len(r[j]) for r in rows) for j in range(5)]
        lines.append("")
        for r in rows:
            lines.append(
                "  ".join(
                    [r[0].rjust(widths[0]), r[1].rjust(widths[1]), r[2].ljust(widths[2])]
                    + [c.rjust(w) for c, w in zip(r[3:], widths[3:])]
                ).rstrip()
            )
        n = len(result.queries)
        lines.append(
            "the cross-validated figure is the mean over the "
            f"{n} queries of their held-out values: sum of (queries x held out) / {n}"
        )
    return "\n".join(lines) + "\n"


def _write_table(result: Any, out: TextIO) -> None:
    names: List[str] = []
    for setting in result.settings[:1]:
        names = list(setting)
    out.write("\t".join(["index", *names, result.metric]) + "\n")
    for i, (setting, score) in enumerate(zip(result.settings, result.scores)):
        cells = [str(i)]
        for name in names:
            value = setting[name]
            cells.append(
                ",".join(repr(float(w)) for w in value) if name == "weights" else str(value)
            )
        cells.append(repr(score))
        out.write("\t".join(cells) + "\n")


# --- entry point ------------------------------------------------------------------------------

# --- compare ----------------------------------------------------------------------------------

COMPARE_EXAMPLES = """\
examples:
  # every pair of runs on nDCG@10: randomization test (100,000 sign vectors), Holm's correction
  rankfusion compare bm25.run.gz minilm.run.gz fused.run --qrels qrels.txt

  # each run against a baseline on three metrics, with a report to open in a browser
  rankfusion compare bm25.run.gz minilm.run.gz fused.run --qrels qrels.txt \\
      --metrics ndcg@10,map,recall@100 --baseline bm25.run.gz --report report.html

  # the paired t-test, Benjamini-Hochberg, the numbers as JSON and a LaTeX table
  rankfusion compare a.run b.run c.run --qrels qrels.txt --test t --correction bh \\
      --json comparison.json --latex table.tex
"""


def _add_compare_command(commands: Any, fuse: argparse.ArgumentParser) -> None:
    """The ``compare`` command, and ``fuse --compare``."""
    # the choices from the core, not from rankfusion._compare, which imports numpy: every
    # command builds this parser, and numpy's import doubled `rankfusion fuse`'s start
    from ._core import _CORRECTIONS as CORRECTIONS
    from ._core import _TESTS as TESTS

    fuse.add_argument(
        "--compare",
        action="store_true",
        help="with --qrels: test the fused run against each input run (as 'rankfusion "
        "compare' does by default: randomization test, 100,000 sign vectors, Holm's "
        "correction) and add the table",
    )
    parser = commands.add_parser(
        "compare",
        help="compare runs with paired significance tests (report, JSON, LaTeX)",
        description="Evaluate runs per query with ir-measures and test every pair of them (or "
        "each against --baseline) with a paired test: the randomization test (default), the "
        "paired t-test or the paired bootstrap; correct the p-values over all the tests; "
        "report each pair's mean difference, p-value, corrected p-value, effect size "
        "(paired Cohen's d), interval and wins/ties/losses. Needs the 'eval' extra "
        "(ir-measures); --report needs the 'report' extra (matplotlib). See docs/compare.md.",
        epilog=COMPARE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run files (TREC, or Parquet)")
    parser.add_argument("--qrels", required=True, metavar="QRELS", help="relevance judgments")
    parser.add_argument(
        "--metrics",
        default="ndcg@10",
        metavar="M1,M2,...",
        help="ir-measures or trec_eval names (default %(default)s)",
    )
    parser.add_argument(
        "--baseline",
        metavar="RUN",
        help="test each run against this one (a RUN as given, its file name, or its 1-based "
        "position); default: every pair of runs",
    )
    parser.add_argument(
        "--test", choices=TESTS, default="randomization", help="default %(default)s"
    )
    parser.add_argument(
        "--permutations",
        type=_int_at_least(1),
        default=100_000,
        metavar="N",
        help="random sign vectors (randomization) or resamples (bootstrap); default 100000",
    )
    parser.add_argument("--seed", type=_int_at_least(0), default=0, help="default %(default)s")
    parser.add_argument(
        "--correction", choices=CORRECTIONS, default="holm", help="default %(default)s"
    )
    parser.add_argument(
        "--alpha", type=_number, default=0.05, metavar="A", help="default %(default)s"
    )
    parser.add_argument(
        "--confidence",
        type=_number,
        default=0.95,
        metavar="C",
        help="of the interval of each mean difference (default %(default)s)",
    )
    parser.add_argument("--report", metavar="HTML", help="write the HTML report")
    parser.add_argument("--json", metavar="JSON", help="write the comparison as JSON")
    parser.add_argument("--latex", metavar="TEX", help="write the tables in LaTeX")
    parser.add_argument(
        "--threads", type=_int_at_least(1), metavar="N", help="threads of the tests"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=_compare_command)


def _baseline_of(text: Optional[str], paths: Sequence[str], names: Sequence[str]) -> Any:
    """--baseline as an index into the runs: a path as given, a name, or a 1-based position."""
    if text is None:
        return None
    for candidates in (list(paths), list(names)):
        if text in candidates:
            return candidates.index(text)
    if text.isdigit() and 1 <= int(text) <= len(paths):
        return int(text) - 1
    raise UsageError(f"--baseline {text!r} is none of the runs: {', '.join(paths)}")


# compare's arguments that the command's options give (its FusionError's ``argument`` -> option)
_COMPARE_OPTIONS = {
    "names": "RUN",
    "metrics": "--metrics",
    "baseline": "--baseline",
    "test": "--test",
    "permutations": "--permutations",
    "seed": "--seed",
    "correction": "--correction",
    "alpha": "--alpha",
    "confidence": "--confidence",
    "threads": "--threads",
}


def _compare_command(args: argparse.Namespace) -> int:
    from . import _compare

    if len(args.runs) < 2:
        raise UsageError("compare needs at least 2 runs")
    _check_inputs([*args.runs, args.qrels])
    outputs = [("--report", args.report), ("--json", args.json), ("--latex", args.latex)]
    for option, path in outputs:
        _check_output(path, option)
        if path == "-":
            raise UsageError(f"{option} needs a file name")
    given = [os.path.realpath(p) for _, p in outputs if p]
    if len(set(given)) != len(given):
        raise UsageError("--report, --json and --latex must name different files")
    _check_stdout()
    try:
        measures = trec.parse_metrics(args.metrics)
    except ImportError as e:
        raise UsageError(f"compare needs ir-measures: {e}") from None
    except ValueError as e:
        raise UsageError(f"--metrics: {e}") from None
    if args.report:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError(
                "--report needs matplotlib: pip install 'rankfusion[report]'"
            ) from None
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    from . import FusionError, FusionTypeError

    try:  # compare checks its arguments before it reads a run
        names = _compare._run_names(args.runs, None)
        comparison = _compare.compare(
            args.runs,
            args.qrels,
            metrics=metrics if len(metrics) == len(measures) else measures,
            names=names,
            baseline=_baseline_of(args.baseline, args.runs, names),
            test=args.test,
            permutations=args.permutations,
            seed=args.seed,
            correction=args.correction,
            alpha=args.alpha,
            confidence=args.confidence,
            progress=_progress(args),
            threads=args.threads,
        )
    except (FusionError, FusionTypeError) as e:
        option = _COMPARE_OPTIONS.get(e.argument or "")
        if option is None:
            raise
        raise UsageError(f"argument {option}: {e.reason}") from None
    renderings = {
        args.report: comparison.to_html,
        args.json: comparison.to_json,
        args.latex: comparison.to_latex,
    }
    texts = [(path, renderings[path]()) for _, path in outputs if path]
    pending = []
    try:
        for path, text in texts:
            out = trec._AtomicFile(path, compress=False)
            pending.append(out)
            out.file.write(text)
    except BaseException:
        for out in pending:
            _discard(out)
        raise
    _commit(pending, stdout=lambda: _write_stdout(comparison.table()))
    _leave(locals())
    return 0


def _fused_comparison(
    args: argparse.Namespace, runs: List[Any], fused: Any, qrels: Any, measures: List[Any]
) -> str:
    """``fuse --qrels --compare``: the fused run tested against each input run."""
    from . import _compare

    fused_name = f"fused ({_method_label(args)})"
    if len(set(args.runs)) == len(args.runs):
        names = _compare._run_names(args.runs, None)
    else:  # a run fused twice: told apart by its place
        names = [f"{path} (#{i + 1})" for i, path in enumerate(args.runs)]
    comparison = _compare.compare(
        [*runs, trec.to_dict(fused)],
        qrels,
        metrics=measures,
        names=[*names, fused_name],
        pairs=[(len(runs), i) for i in range(len(runs))],
        progress=_progress(args),
    )
    return comparison.table()


# --- main -------------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    While it runs, Python's cyclic garbage collector is off (and then back as it was): the
    command makes millions of objects (a run on the Python path: a str and a float per line,
    hits, trace records) and no reference cycles, and each full collection would stop it for
    up to seconds, not interruptible by Ctrl-C, to find none. With ``argv`` None (the
    process's own command line: the ``rankfusion`` script, ``python -m rankfusion``), the
    command runs in a forked worker (:func:`_supervise`) and ends at once (``os._exit``, the
    process started not waiting for the kernel to free the worker's memory) once its outputs
    are in place, or, on Ctrl-C, with status 130 once the message is out and the partial
    outputs are removed: freeing what it read would take longer than the work it
    interrupted."""
    if argv is None:
        _supervise()  # returns in the worker; the supervisor ends with the worker's status
        global _LEFT
        _LEFT = []
    if sys.stderr is None:  # closed (2>&-): warnings and errors go nowhere, never to stdout
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 -- for the life of the process
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            status = _main(argv)
        finally:
            if collecting:
                gc.enable()
    except KeyboardInterrupt:  # as the command ended, past _main's own handler
        if argv is not None:
            raise
        _tell(b"busy")
        print(f"{PROG}: interrupted", file=sys.stderr)
        status = 130
    except _Terminated as e:  # SIGTERM or SIGHUP in the worker: its partial outputs removed
        if argv is not None:  # pragma: no cover - only the worker handles them
            raise
        _end_by(e.signo)
    if argv is None:  # the process's own command: done, end now (see _exit_now)
        _exit_now(status)
    return status


def _main(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 on bad usage, 0 for --help / --version
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    command = f"{PROG} {args.command}"
    _tell(b"name:" + command.encode())
    try:
        return int(args.handler(args))
    except UsageError as e:
        print(f"{command}: error: {e}", file=sys.stderr)
        return 2
    except (DataError, trec.TrecFormatError) as e:
        print(f"{command}: error: {e}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as e:  # rrf rejecting the data or an option
        print(f"{command}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader of stdout went away (`| head -1`): quietly, with the status of a process
        # that SIGPIPE ended (128 + 13), as cat, seq or grep end there (docs/cli.md); stdout
        # goes to /dev/null so that the interpreter's last flush finds no pipe
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:  # pragma: no cover
            pass
        return EXIT_BROKEN_PIPE
    except OSError as e:
        print(f"{command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _tell(b"busy")  # its outputs removed: the supervisor waits for the message and the end
        print(f"{command}: interrupted", file=sys.stderr)
        if argv is None:  # the process's own command: end it now, freeing nothing (see main)
            _exit_now(130)
        return 130


def _flush_streams() -> None:
    """Flushes stdout and stderr, each as far as it can (closed, or None: nothing to do)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


def _end_by(signo: int) -> None:
    """Ends the process by the signal ``signo`` (its default action), stdout and stderr
    flushed: in the worker, the supervisor then ends the same way."""
    _flush_streams()
    _signal.signal(signo, _signal.SIG_DFL)
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {signo})
    os.kill(os.getpid(), signo)
    os._exit(128 + signo)  # pragma: no cover - not reached


def _exit_now(status: int) -> None:
    """Ends the process with ``status`` at once (``os._exit``), stdout and stderr flushed: no
    interpreter teardown, which frees every object one by one (seconds, for runs read on the
    Python path). Every output file is complete and in place, or discarded already (each is
    written under a temporary name that an error removes).

    Under a supervisor (see :func:`_supervise`) the standard streams are closed first (a reader
    of our stdout sees its end now) and the supervisor is told ``status``: it exits with it at
    once, while the kernel frees this process's memory (about 0.1 s a GiB)."""
    with contextlib.suppress(ValueError):  # the command has ended: a late Ctrl-C changes nothing
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        for name in _CLEANED_UP:  # and SIGTERM / SIGHUP end it as they would
            if _signal.getsignal(getattr(_signal, name)) == _terminate:
                _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
    _flush_streams()
    if _SUPERVISOR is not None and os.getppid() == _SUPERVISOR[0]:
        for fd in (0, 1, 2):
            with contextlib.suppress(OSError):
                os.close(fd)
        _tell(b"exit:%d" % (status & 0xFF))
        with contextlib.suppress(OSError):
            os.kill(_SUPERVISOR[0], _signal.SIGUSR1)
    os._exit(status)


# In the command's own process (main with argv None): the objects finished commands left to
# the process's end (os._exit), else None.
_LEFT: Optional[List[Any]] = None


def _leave(objects: Dict[str, Any]) -> None:
    """Keeps a finished command's objects (its ``locals()``) for the process's end
    (``os._exit``) in the command's own process: freeing runs read on the Python path one
    object at a time takes seconds (0.4 s for 4 M lines), deaf to Ctrl-C. Under ``main(argv)``,
    called by a program, it keeps nothing."""
    if _LEFT is not None:
        _LEFT.append(objects)


def _discard(pending: Any) -> None:
    """Removes an output's temporary file (``trec._AtomicFile``); in the command's own process
    the file is left open for ``os._exit`` to close (see ``_AtomicFile.discard``): Ctrl-C
    during the writing of a 2 GB trace ends the command without waiting for its pages."""
    pending.discard(close=_LEFT is None)
    _leave({"pending": pending})


# --- the supervisor -------------------------------------------------------------------------

# In the worker (set by _supervise): the supervisor's pid and the pipe to tell it the status.
_SUPERVISOR: Optional[Tuple[int, int]] = None
# How long the supervisor lets its worker take to act on Ctrl-C (seconds) before it ends the
# command itself: a worker inside a long call that holds Python (a pyarrow or numpy function on
# 18 M rows can take 0.4 s) does not run its handler before the call returns.
_GRACE = 0.05


def _tell(record: bytes) -> None:
    """In the worker: a record for the supervisor, down the pipe (see :func:`_supervise`)."""
    if _SUPERVISOR is not None and os.getppid() == _SUPERVISOR[0]:
        with contextlib.suppress(OSError):
            os.write(_SUPERVISOR[1], record + b"\0")


def _tell_temporary(path: str) -> None:
    """``trec._AtomicFile``'s hook in the worker: a temporary file made, for the supervisor to
    remove if it ends the command itself."""
    _tell(b"tmp:" + os.fsencode(path))


class _Told:
    """In the supervisor: what the worker said (records ended by NUL, read as they come)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.rest = fd, b""
        self.name, self.busy = PROG, False
        self.status: Optional[int] = None
        self.temporary: List[bytes] = []
        os.set_blocking(fd, False)

    def read(self) -> None:
        while True:
            try:
                data = os.read(self.fd, 65536)
            except (BlockingIOError, InterruptedError):
                return
            if not data:
                return
            *records, self.rest = (self.rest + data).split(b"\0")
            for record in records:
                kind, _, value = record.partition(b":")
                if kind == b"tmp":
                    self.temporary.append(value)
                elif kind == b"name":
                    self.name = value.decode(errors="replace")
                elif kind == b"busy":
                    self.busy = True
                elif kind == b"exit":
                    self.status = int(value)


# The signals the supervisor passes on to the worker.
_PASSED_ON = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
# The signals after which the worker removes its partial outputs before it ends by them.
_CLEANED_UP = ("SIGTERM", "SIGHUP")


class _Terminated(BaseException):
    """Raised in the worker by SIGTERM or SIGHUP (:func:`_terminate`): the partial outputs are
    removed as on any error, then the worker ends by the signal (see :func:`main`)."""

    def __init__(self, signo: int) -> None:
        super().__init__(signo)
        self.signo = signo


def _supervise() -> None:
    """Runs the command in a forked worker process, this one waiting: returns in the worker
    (which goes on with the command), and never in the supervisor, which ends with the worker's
    status.

    Why: a process that read large runs takes a while to end (the kernel frees its pages, about
    0.1 s a GiB), so Ctrl-C could not end the command within 0.1 s. The worker, once its
    outputs are complete or removed and its streams closed, tells the supervisor its status
    (an ``exit:`` record down a pipe, then SIGUSR1), and the supervisor ends with it at once while the
    worker's memory is freed. A signal that ends the command (SIGINT, SIGTERM, SIGHUP, SIGQUIT)
    sent to the supervisor alone is passed on to the worker; Ctrl-C at a terminal reaches both,
    and the worker's SIGINT handler acts once (see :func:`_interrupt_once`). A worker inside
    one long call that holds Python (pyarrow, numpy) runs no handler before the call returns:
    if it has not said within ``_GRACE`` of the SIGINT that it is removing its outputs (or
    renaming them into place), the supervisor ends the command itself, as the handler would
    have: the worker killed, the temporary files it reported removed, the message, 130. A
    worker that ends
    without a word (SystemExit from argparse, a crash, a signal) ends the supervisor the same
    way. A signal the command was started with ignored (``trap '' INT``, a background job of a
    script) stays ignored: it is neither passed on nor handled. Where ``os.fork`` or
    ``signal.sigwaitinfo`` is missing (Windows, macOS), or with threads already running (forking
    them is unsafe), the command runs in this process."""
    import threading

    if (
        not hasattr(os, "fork")
        or not hasattr(_signal, "sigwaitinfo")
        or not hasattr(_signal, "sigtimedwait")
        or threading.active_count() > 1
    ):
        return
    passed_on = {
        signo
        for signo in (getattr(_signal, name) for name in _PASSED_ON)
        if _signal.getsignal(signo) != _signal.SIG_IGN
    }
    watched = passed_on | {_signal.SIGCHLD, _signal.SIGUSR1}
    before = _signal.pthread_sigmask(_signal.SIG_BLOCK, watched)  # none lost before the wait
    # An ignored SIGCHLD (inherited from whoever started us) would reap the worker unseen.
    child_handler = _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
    parent = os.getpid()
    try:
        word, told = (_above_streams(fd) for fd in os.pipe())
        os.set_blocking(told, False)  # a record that does not fit is dropped, never waited for
        pid = os.fork()
    except OSError:
        _signal.signal(_signal.SIGCHLD, child_handler)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, before)
        return
    if pid == 0:  # the worker
        global _SUPERVISOR
        os.close(word)
        _SUPERVISOR = (parent, told)
        trec._made_temporary = _tell_temporary
        _signal.signal(_signal.SIGCHLD, child_handler)
        if _signal.SIGINT in passed_on:
            _signal.signal(_signal.SIGINT, _interrupt_once)
        for name in _CLEANED_UP:
            signo = getattr(_signal, name)
            if signo in passed_on:
                _signal.signal(signo, _terminate)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, before)
        return
    os.close(told)
    told_us = _Told(word)
    interrupted: Optional[float] = None  # when Ctrl-C came, until the worker acts on it
    while True:
        info: Optional[Any]
        if interrupted is None:
            info = _signal.sigwaitinfo(watched)
        else:
            info = _signal.sigtimedwait(watched, max(0.0, interrupted + _GRACE - time.monotonic()))
        if info is None:  # the grace is over
            # Stopped first, so that what it has said is all it says before it is killed (it
            # cannot print its message after the check).
            with contextlib.suppress(OSError):
                os.kill(pid, _signal.SIGSTOP)
                done, status = os.waitpid(pid, os.WUNTRACED)
                if done == pid and not os.WIFSTOPPED(status):  # it ended meanwhile
                    told_us.read()
                    _end_as_worker(status, told_us.status)
            told_us.read()
            if told_us.status is not None:  # it ended as it was stopped
                os._exit(told_us.status)
            if told_us.busy:  # removing its outputs, or renaming them: wait for its word
                with contextlib.suppress(OSError):
                    os.kill(pid, _signal.SIGCONT)
                interrupted = None
                continue
            # Inside a long call: end the command here, as its handler would have.
            with contextlib.suppress(OSError):
                os.kill(pid, _signal.SIGKILL)
            for path in told_us.temporary:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            with contextlib.suppress(OSError):
                os.write(2, f"{told_us.name}: interrupted\n".encode())
            os._exit(130)
        signo = info.si_signo
        if signo == _signal.SIGUSR1:
            if info.si_pid == pid:  # its outputs complete or removed, its streams closed
                told_us.read()
                os._exit(1 if told_us.status is None else told_us.status)
        elif signo == _signal.SIGCHLD:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                _end_as_worker(status, None)
        elif info.si_pid != pid:
            try:
                os.kill(pid, signo)
            except ProcessLookupError:  # reaped already: it cannot say how it ended
                os._exit(128 + signo)
            if signo == _signal.SIGINT and interrupted is None:
                interrupted = time.monotonic()


def _end_as_worker(status: int, told: Optional[int]) -> None:
    """The supervisor ends as its worker ended (``status``: ``waitpid``'s): by its signal, or
    with the status it told (``told``), else its exit status."""
    if os.WIFSIGNALED(status):
        _end_by(os.WTERMSIG(status))
    os._exit(told if told is not None else os.waitstatus_to_exitcode(status))


def _above_streams(fd: int) -> int:
    """``fd`` moved to 3 or above (closed on exec): with stdin, stdout or stderr closed at the
    start a pipe can get their numbers, which the worker closes before its last word."""
    import fcntl  # Unix only, as the worker

    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _terminate(signo: int, frame: Any) -> None:
    """The worker's SIGTERM and SIGHUP handler: :class:`_Terminated`, once (later signals of
    either kind and SIGINT are ignored while the outputs are removed)."""
    for name in ("SIGINT", *_CLEANED_UP):
        _signal.signal(getattr(_signal, name), _signal.SIG_IGN)
    raise _Terminated(signo)


def _interrupt_once(signo: int, frame: Any) -> None:
    """The worker's SIGINT handler: KeyboardInterrupt, as Python's own, once; later SIGINTs are
    ignored (Ctrl-C at a terminal reaches the worker twice: from the terminal and passed on by
    the supervisor), so that the cleaning of the outputs runs to its end."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
