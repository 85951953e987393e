"""Third runs for the three-run checks of ``rankfusion.optimize``, made from the shipped ones:

- ``write_noisy_run``: a shipped run (MiniLM) with each score moved by a deterministic amount in
  [-amplitude, amplitude] drawn from the BLAKE2b hash of ``qid:docid`` (no random generator, so
  every platform and numpy version writes the same file). On MiniLM's cosine scores the default
  amplitude (0.05) reorders a query's documents about as much as a different dense model would;
- ``write_fused_run``: the RRF fusion (k=60) of two shipped runs, its top 100 per query, as a run
  whose scores are the fused scores (a run strongly correlated with both of the others)."""

from __future__ import annotations

import hashlib

from rankfusion import trec


def jitter(qid: str, docid: str) -> float:
    """A number in [-1, 1) that depends only on ``qid`` and ``docid``."""
    digest = hashlib.blake2b(f"{qid}:{docid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**63 - 1.0


def write_noisy_run(source: str, out: str, amplitude: float = 0.05) -> str:
    """Writes ``source`` with every score moved by ``amplitude * jitter(qid, docid)`` (ranked
    by the new scores) to ``out``; returns ``out``."""
    run = trec.read_run(source)
    noisy = {
        qid: trec.from_dict({qid: {d: s + amplitude * jitter(qid, d) for d, s in ranking.pairs()}})[
            qid
        ]
        for qid, ranking in run.items()
    }
    trec.write_run(noisy, out, tag="noisy")
    return out


def write_fused_run(sources: "list[str]", out: str, depth: int = 100) -> str:
    """Writes the RRF fusion (k=60) of the runs ``sources``, the first ``depth`` documents of each
    query, to ``out``; returns ``out``."""
    fused = trec.fuse([trec.read_run(s) for s in sources], limit=depth)
    trec.write_run(fused, out, tag="rrf")
    return out
