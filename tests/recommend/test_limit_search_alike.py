"""The per-user limit search (planner.sweep_floor.limit_sequences, sweep_serving._limit_rungs) made cheaper without
moving an answer: layouts it finds alike are searched once, and the ends are asked in one call with the first round's
cuts. Each is held here to the search it replaced, step for step."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import anchorgpu.planner.sweep_serving as sweep_serving
from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_floor import UserLimits, limit_rungs, rung_of
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog


def _reference_rungs(meets: Callable[[np.ndarray], np.ndarray], dp: np.ndarray, saturation: np.ndarray,
                     ways: int = 4) -> np.ndarray:
    """The search as it was before (stop 53, b8862d62): the ends in one call, then one call a round."""
    top = np.maximum(saturation // dp, 1)
    meets_lo, meets_top = meets(rung_of(dp, np.stack((np.ones_like(top), top))))
    lo = np.where(meets_top, top, 1)
    hi = np.where(meets_top | ~meets_lo, lo, top)
    parts = np.arange(1, ways)[:, None, None]
    while (open_ := hi - lo > 1).any():
        cut = np.where(open_, np.clip(lo + -(-(hi - lo) * parts // ways), lo + 1, hi - 1), lo)
        slow = ~meets(rung_of(dp, cut))
        first = np.argmax(slow, axis=0)
        any_slow = slow.any(axis=0)
        below = np.take_along_axis(cut, np.maximum(first - 1, 0)[None], axis=0)[0]
        at = np.take_along_axis(cut, first[None], axis=0)[0]
        new_lo = np.where(any_slow, np.where(first > 0, below, lo), cut[-1])
        lo, hi = np.where(open_, new_lo, lo), np.where(open_, np.where(any_slow, at, hi), hi)
    return np.minimum(rung_of(dp, lo), np.maximum(saturation, 2))


def test_the_first_round_asked_with_the_ends_finds_what_one_call_a_round_found() -> None:
    """Figures that do not fall steadily (a bracket's answer depends on where it was cut): every layout's rung is the
    one the search found before, for saturations from 1 to 300 sequences a replica and DP 1 to 3."""
    rng = np.random.default_rng(53)
    table = rng.random((3, 4000)) < 0.8  # a made-up 'meets' per (row, sequences a replica), 20% misses anywhere
    table[:, 0:3] = True
    dp = np.tile(np.array([1, 2, 3]), 100)
    saturation = (np.arange(300) + 1)[None, :] * dp * np.array([[1], [2], [3]])

    def meets(conc: np.ndarray) -> np.ndarray:
        per_replica = -(-conc // dp)
        return np.take_along_axis(np.broadcast_to(table[None], (conc.shape[0], *table.shape)),
                                  np.minimum(per_replica, 3999), axis=2)

    found = limit_rungs(lambda c, _asked: meets(c), dp, saturation)
    assert np.array_equal(found, _reference_rungs(meets, dp, saturation))
    assert (found < saturation).any() and (found == saturation).any()  # brackets that narrowed, and ones at the top


@pytest.mark.parametrize("limits", [UserLimits(20.0, 2.0), UserLimits(33.3, None), UserLimits(None, 0.5)])
def test_layouts_searched_once_a_set_get_every_layouts_own_rung(limits: UserLimits,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep's limit rungs of every layout of a 70B catalog sweep (3 weight formats x 2 KV dtypes), searched once
    a set of alike layouts (_alike_searches), are those the search over every layout gives: the same arrays."""
    seen: list[tuple[tuple[object, ...], np.ndarray]] = []
    searched = sweep_serving._limit_rungs

    def keep(*args: object, **kwargs: object) -> np.ndarray:
        rungs = searched(*args, **kwargs)  # type: ignore[arg-type]
        seen.append((args, rungs))
        return rungs

    monkeypatch.setattr(sweep_serving, "_limit_rungs", keep)
    model = load_model("llama-3.1-70b")
    shapes = shapes_from_catalog(load_catalog().offerings, max_servers=2)
    spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192), weights=("bf16", "fp8", "int4-awq"),
                     kv_caches=("bf16", "fp8"), min_tokens_per_s_per_user=limits.min_tokens_per_s_per_user,
                     max_ttft_s=limits.max_ttft_s)
    sweep(model, shapes, spec)
    (args, rungs), = seen
    (model_, shapes_, spec_, lay, weights, kvs, context, prompt, output, media, cross, limits_, saturation) = args
    figures = sweep_serving._user_figures(model_, shapes_, spec_, lay, weights, kvs, context, prompt, output,  # type: ignore[arg-type]
                                          media, cross, ttft=limits.max_ttft_s is not None)  # type: ignore[arg-type]
    every = limit_rungs(lambda c, asked: limits_.met(*figures(c, asked)), lay.dp, saturation)  # type: ignore[attr-defined]
    assert np.array_equal(rungs, every)
    firsts, _ = sweep_serving._alike_searches(lay.dp, sweep_serving._tick_groups(lay)[1], saturation)  # type: ignore[attr-defined]
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
    got_firsts, got_inverse = sweep_serving._alike_searches(dp, group, saturation)  # type: ignore[attr-defined]
    assert got_firsts.tolist() == firsts.tolist()
    assert got_inverse.tolist() == inverse.ravel().tolist()
