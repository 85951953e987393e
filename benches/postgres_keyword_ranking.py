"""Which keyword ranking holds up in PostgreSQL? BM25 (PostgresStore's) against ts_rank_cd and
ts_rank, alone and fused with the vector list, on Cranfield.

    python benches/postgres_keyword_ranking.py [--dsn DSN]

Every ranking matches the same documents -- the query's lexemes OR-ed (``websearch_to_tsquery``
ANDs them and matches almost nothing on natural-language questions) -- and only orders them
differently: BM25 from term statistics (PostgresStore.keyword_search), ``ts_rank_cd`` (cover
density) and ``ts_rank`` (term frequency), each with normalisation 0 (none) and 1 (divided by
1 + the log of the document's length). Each keyword list is fused with the store's exact vector
list by ``hybrid_search`` (RRF, k=60, window 100); nDCG@10 and R@100 by ir-measures.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

import hybrid_cranfield  # noqa: E402
import hybrid_postgres  # noqa: E402

from rankfusion import hybrid_search  # noqa: E402


class TsRank:
    """A keyword index ranking the store's OR-query matches by a ts_rank function."""

    filtering = "none"

    def __init__(self, store, function: str, normalization: int) -> None:
        self.store, self.function, self.normalization = store, function, normalization

    def keyword_search(self, text: str, k: int):
        statement = f"""
            WITH terms AS (
                SELECT lexeme FROM unnest(to_tsvector('english', %(text)s))
                EXCEPT SELECT lexeme FROM unnest(to_tsvector('english', %(stopwords)s))
            ), query AS (
                SELECT string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''')
                                  || '''', ' | ')::tsquery AS q FROM terms
            )
            SELECT id, {self.function}(tsv, q, {self.normalization}) AS score
            FROM cranfield, query WHERE tsv @@ q AND NOT deleted
            ORDER BY score DESC, pk LIMIT %(k)s
        """
        params = {"text": text, "stopwords": " ".join(sorted(self.store.stopwords)), "k": k}
        conn = self.store.snapshot_connection  # hybrid_search's snapshot
        return [(row[0], row[1]) for row in conn.execute(statement, params).fetchall()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a PostgreSQL server (default: a private one)")
    args = parser.parse_args()
    docs, embeddings, queries, query_embeddings, qrels = hybrid_cranfield.load(
        hybrid_cranfield.DATA
    )
    with contextlib.ExitStack() as stack:
        dsn = args.dsn
        if dsn is None:
            from rankfusion.pgserver import EmbeddedServer

            dsn = stack.enter_context(EmbeddedServer()).dsn
        store = stack.enter_context(
            hybrid_postgres.build_store(docs, embeddings, dsn, index=None, progress=False)
        )
        rankings = {"BM25 (PostgresStore)": store}
        for function in ("ts_rank_cd", "ts_rank"):
            for normalization in (0, 1):
                rankings[f"{function}, normalization {normalization}"] = TsRank(
                    store, function, normalization
                )
        print(f"{'keyword ranking':<28}{'keyword alone':>22}{'hybrid (RRF)':>22}")
        print(f"{'':<28}" + f"{'nDCG@10':>12}{'R@100':>10}" * 2)
        for name, index in rankings.items():
            runs: dict = {"keyword": {}, "hybrid": {}}
            for (qid, text), vector in zip(queries, query_embeddings):
                for run, v in (("keyword", None), ("hybrid", vector)):
                    hits = hybrid_search(store, text, v, keyword_index=index, limit=100, window=100)
                    runs[run][qid] = [str(h.id) for h in hits]
            scores = hybrid_postgres.evaluate(qrels, runs)
            line = f"{name:<28}"
            for run in ("keyword", "hybrid"):
                line += f"{scores[run]['nDCG@10']:>12.4f}{scores[run]['R@100']:>10.4f}"
            print(line)


if __name__ == "__main__":
    main()
