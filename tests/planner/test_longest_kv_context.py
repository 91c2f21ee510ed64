"""``memory.longest_kv_context`` (the capacity search of ``plan()``) against a plain bisection over
``kv_cache_bytes``, on registry models with full, sliding-window and latent (MLA) attention."""

from __future__ import annotations

import random

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner import memory as mm


def _bisect(model: ModelSpec, capacity: int, seqs: int, bpv: float, tp: int, pp: int, block: int, limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        used = mm.kv_cache_bytes(model, context_tokens=mid, sequences=seqs, bytes_per_value=bpv, tp=tp, pp=pp,
                                 block_size=block)
        if used <= capacity:
            lo = mid
        else:
            hi = mid - 1
    return lo


@pytest.mark.parametrize("name", ["llama-3.1-70b", "gemma-3-27b", "gpt-oss-20b", "deepseek-v3", "jamba-1.5-mini",
                                  "mistral-7b-v0.1"])
def test_same_answer_as_bisection(name: str) -> None:
    model = load_model(name)
    assert isinstance(model, ModelSpec)
    rng = random.Random(name)
    for _ in range(60):
        seqs, tp, pp = rng.choice([1, 3, 32, 257]), rng.choice([1, 2, 8]), rng.choice([1, 3])
        bpv, block = rng.choice([1, 2, 0.5]), rng.choice([1, 16, 64])
        limit = rng.choice([model.max_context_tokens, 1000, 2**20 + 7])
        full = mm.kv_cache_bytes(model, context_tokens=limit, sequences=seqs, bytes_per_value=bpv, tp=tp, pp=pp,
                                 block_size=block)
        capacity = rng.choice([-1, 0, 1, rng.randrange(0, max(2, full)), full, full - 1, rng.randrange(0, 2**36)])
        expected = _bisect(model, capacity, seqs, bpv, tp, pp, block, limit)
        assert mm.longest_kv_context(model, capacity=capacity, sequences=seqs, bytes_per_value=bpv, tp=tp, pp=pp,
                                     block_size=block, limit=limit) == expected, (seqs, tp, pp, bpv, block, limit, capacity)
