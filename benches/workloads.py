"""Synthetic ranked lists shared by the benchmarks: string ids with ~40% overlap between lists."""

from __future__ import annotations

import random


def str_lists(n_lists: int, depth: int, overlap: float = 0.4, seed: int = 0) -> list[list[str]]:
    """`n_lists` lists of `depth` distinct string ids; about `overlap` of each list is shared."""
    rng = random.Random(seed)
    shared = [f"doc-{i}" for i in range(depth)]
    lists = []
    for j in range(n_lists):
        own = [f"doc-{j}-{i}" for i in range(depth)]
        n_shared = int(depth * overlap)
        items = rng.sample(shared, n_shared) + own[: depth - n_shared]
        rng.shuffle(items)
        lists.append(items)
    return lists
