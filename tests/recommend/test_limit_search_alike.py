"""The per-user limit search (planner.sweep_floor.limit_sequences, sweep_serving_limits.layout_limit_rungs): layouts it
finds alike are searched once, held to the search over every layout; the search interpolates on the figures (stop 61),
held to the exhaustive answer where they fall steadily and to a valid transition where they do not."""

from __future__ import annotations

import numpy as np
import pytest

import anchorgpu.planner.sweep_serving as sweep_serving
import anchorgpu.planner.sweep_serving_limits as sweep_serving_limits
from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_floor import INTERPOLATED_ROUNDS, UserLimits, limit_rungs, limit_sequences
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog


def _table_gauge(table: np.ndarray, slack: np.ndarray, dp: np.ndarray):  # type: ignore[no-untyped-def,type-arg]
    """A made-up gauge: ``table`` (meets) and ``slack`` per (row, sequences a replica), read at each concurrency's
    sequences a replica on each layout's DP; counts its calls in ``calls``."""
    calls: list[int] = []

    def gauge(conc: np.ndarray, _asked: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[type-arg]
        calls.append(conc.shape[0])
        at = np.minimum(-(-conc // dp), table.shape[1] - 1)
        rows = np.arange(table.shape[0])[None, :, None]
        return table[rows, at], slack[rows, at]

    return gauge, calls


def _transition(table: np.ndarray, per_replica: np.ndarray, top: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    """Where ``per_replica`` is a valid answer of limit_sequences: it meets and one more misses (or it is the top),
    or it is 1 and misses."""
    rows = np.arange(table.shape[0])[:, None]
    at, after = table[rows, per_replica], table[rows, np.minimum(per_replica + 1, table.shape[1] - 1)]
    return (at & ((per_replica == top) | ~after)) | ((per_replica == 1) & ~at)  # type: ignore[no-any-return]


@pytest.mark.parametrize("seed", range(4))
def test_on_figures_that_fall_steadily_the_search_finds_the_last_count_that_meets_them(seed: int) -> None:
    """Figures that fall steadily (stop 61's search assumes so; run.py's calls' 1,602 searches all do): a user's step
    linear in the sequences a replica with a kink (a regime change, up to 7 times the slope) and a jump (up to 10%)
    at random places, a random floor. Every answer is the largest count that meets it (the exhaustive one)."""
    rng = np.random.default_rng(61 + seed)
    rows, layouts, size = 6, 200, 2000
    x = np.arange(size, dtype=np.float64)[None, :]
    kink, jump = rng.integers(1, 600, (2, rows * layouts, 1))
    step = (1.0 + rng.random((rows * layouts, 1)) * 0.05 * x + rng.random((rows * layouts, 1)) * 0.3
            * np.maximum(x - kink, 0.0) + rng.random((rows * layouts, 1)) * 0.1 * (x > jump))
    per_user = 1.0 / step
    floor = rng.uniform(0.005, 1.2, (rows * layouts, 1))
    limits = UserLimits(min_tokens_per_s_per_user=1.0)
    met, slack = limits.gauge(per_user / floor, None)
    dp = np.tile(np.array([1, 2, 4, 8]), layouts // 4)
    saturation = rng.integers(1, 1000, (rows, layouts)) * dp
    top = np.maximum(saturation // dp, 1)
    # one table row a (row, layout): gauge reads column ``layout`` of row ``row`` at row x L + layout
    table, slack_t = met.reshape(rows, layouts, size), slack.reshape(rows, layouts, size)

    calls: list[int] = []  # the searches each call asks

    def gauge(conc: np.ndarray, asked: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[type-arg]
        calls.append(rows * layouts if asked is None else int(asked.sum()))
        at = -(-conc // dp)
        r, layout = np.arange(rows)[None, :, None], np.arange(layouts)[None, None, :]
        return table[r, layout, at], slack_t[r, layout, at]

    found = limit_sequences(gauge, dp, saturation)
    counts = np.arange(size)[None, None, :]
    misses = ~table & (counts >= 1) & (counts <= top[..., None])
    first_miss = np.where(misses.any(axis=2), np.argmax(misses, axis=2), top + 1)
    assert np.array_equal(found, np.maximum(first_miss - 1, 1))
    assert ((found > 1) & (found < top)).sum() > rows * layouts // 2  # most brackets narrowed, not settled at an end
    # the ends and two interpolated rounds settle most searches (these kinks and jumps are harsher than the sweep's:
    # stop61_recmono.md, 1,599 of run.py's 1,602 searches); the cut rounds end the others, each bracket at most a
    # quarter as wide a round (saturations under 1,000 sequences a replica: 5 rounds at most)
    assert calls[3] < 0.2 * calls[0]
    assert len(calls) <= 1 + INTERPOLATED_ROUNDS + 5


def test_on_figures_that_do_not_fall_steadily_every_answer_is_a_transition() -> None:
    """Figures that do not fall steadily: every layout's answer meets the limits with one more sequence a replica
    missing them (or is its saturation's, which meets them, or 1, which misses), for saturations from 1 to 300
    sequences a replica and DP 1 to 3, with a slack that says nothing (random) and one that says the opposite."""
    rng = np.random.default_rng(53)
    table = rng.random((3, 4000)) < 0.8  # a made-up 'meets' per (row, sequences a replica), 20% misses anywhere
    table[:, 0:3] = True
    dp = np.tile(np.array([1, 2, 3]), 100)
    saturation = (np.arange(300) + 1)[None, :] * dp * np.array([[1], [2], [3]])
    top = np.maximum(saturation // dp, 1)
    for slack in (rng.normal(size=table.shape), np.where(table, -1.0, 1.0)):
        gauge, calls = _table_gauge(table, slack, dp)
        found = limit_sequences(gauge, dp, saturation)
        assert _transition(table, found, top).all()
        assert (found < top).any() and (found == top).any()  # brackets that narrowed, and ones at the top
        assert len(calls) < 20  # the cut rounds end every search


@pytest.mark.parametrize("limits", [UserLimits(20.0, 2.0), UserLimits(33.3, None), UserLimits(None, 0.5)])
def test_layouts_searched_once_a_set_get_every_layouts_own_rung(limits: UserLimits,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep's limit rungs of every layout of a 70B catalog sweep (3 weight formats x 2 KV dtypes), searched once
    a set of alike layouts (_alike_searches), are those the search over every layout gives: the same arrays."""
    seen: list[tuple[tuple[object, ...], np.ndarray]] = []
    searched = sweep_serving.layout_limit_rungs

    def keep(*args: object, **kwargs: object) -> np.ndarray:
        rungs = searched(*args, **kwargs)  # type: ignore[arg-type]
        seen.append((args, rungs))
        return rungs

    monkeypatch.setattr(sweep_serving, "layout_limit_rungs", keep)
    model = load_model("llama-3.1-70b")
    shapes = shapes_from_catalog(load_catalog().offerings, max_servers=2)
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192), weights=("bf16", "fp8", "int4-awq"),
                     kv_caches=("bf16", "fp8"), min_tokens_per_s_per_user=limits.min_tokens_per_s_per_user,
                     max_ttft_s=limits.max_ttft_s)
    sweep(model, shapes, spec)
    (args, rungs), = seen
    (model_, shapes_, spec_, lay, weights, kvs, context, prompt, output, media, cross, limits_, saturation) = args
    figures = sweep_serving_limits.user_figures(model_, shapes_, spec_, lay, weights, kvs, context, prompt, output,  # type: ignore[arg-type]
                                          media, cross, ttft=limits.max_ttft_s is not None)  # type: ignore[arg-type]
    every = limit_rungs(lambda c, asked: limits_.gauge(*figures(c, asked)), lay.dp, saturation)  # type: ignore[attr-defined]
    assert np.array_equal(rungs, every)
    firsts, _ = sweep_serving_limits.alike_searches(lay.dp, sweep_serving_limits._tick_groups(lay)[1], saturation)  # type: ignore[attr-defined]
    assert firsts.size < len(lay)  # layouts that differ only in DP share a search


@pytest.mark.parametrize("seed", range(6))
def test_alike_sets_are_numpys_unique_columns(seed: int) -> None:
    """_alike_searches' sets by a stable lexsort (recfast, stop 59) are np.unique(axis=1)'s: the same first column of
    each distinct one, in the same order, and the same set of every column, over keys with many repeats (few
    groups, DPs and saturations, as a catalog sweep has) and none."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 400))
    group = rng.integers(0, 1 + size // (1 + seed), size)
    dp = rng.choice(np.array([1, 2, 3, 4, 8]), size)
    saturation = rng.integers(1, 3 + 40 * seed, (1 + seed % 3, size))
    keys = np.vstack((group, dp == 1, np.maximum(saturation // dp, 1)))
    _, firsts, inverse = np.unique(keys, axis=1, return_index=True, return_inverse=True)
    got_firsts, got_inverse = sweep_serving_limits.alike_searches(dp, group, saturation)  # type: ignore[attr-defined]
    assert got_firsts.tolist() == firsts.tolist()
    assert got_inverse.tolist() == inverse.ravel().tolist()
