"""The per-user limit search's figures (planner.sweep_serving_limits.user_figures, what ``recommend --max-ttft-s`` cuts
the rungs with) time the first token as the sweep's rows do (serving_columns' ``prefill_s``, which
tests/recommend/test_sweep_agrees_with_plan.py holds to plan): by Little's law, the request's ``O`` mean steps less its
``O - 1`` gaps (speed.batching.little_ttft_s) wherever a replica runs more than one user, below the engine's token
budget as past it (stop57_ttftcont.md)."""

from __future__ import annotations

import numpy as np
import pytest

import anchorgpu.planner.sweep_serving as sweep_serving
import anchorgpu.planner.sweep_serving_limits as sweep_serving_limits
from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog

SHAPES = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1)
               if s.id in ("h100-sxm-8x-bm", "l40s-1x-vm"))


def test_the_limit_searchs_first_token_is_the_rows_on_both_sides_of_the_token_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-3.1-8b, 4,000 / 10 (stop56_qa16.md L2): on one H100 (budget 8,192) 20 users a replica are below the
    budget, 21 and 64 past it, 2 below it; the limit search's TTFT at each is the rows' to rounding."""
    seen: list[tuple[object, ...]] = []
    searched = sweep_serving.layout_limit_rungs

    def keep(*args: object, **kwargs: object) -> np.ndarray:
        seen.append(args)
        return searched(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sweep_serving, "layout_limit_rungs", keep)
    model = load_model("llama-3.1-8b")
    spec = SweepSpec(workload=Workload(task="inference"), prompt_tokens=4000, output_tokens=10,
                     weights=("bf16", "fp8"), kv_caches=("bf16",), max_ttft_s=2.0)
    sweep(model, SHAPES, spec)
    (args,) = seen
    (model_, shapes, spec_, lay, weights, kvs, context, prompt, output, media, cross, _limits, _sat) = args
    assert (prompt, output) == (4000, 10)
    concs = (2, 20, 21, 64)
    figures = sweep_serving_limits.user_figures(model_, shapes, spec_, lay, weights, kvs, context, prompt, output,  # type: ignore[arg-type]
                                          media, cross, ttft=True)  # type: ignore[arg-type]
    rows = len(weights) * len(kvs)  # type: ignore[arg-type]
    conc = np.broadcast_to(np.array(concs)[:, None, None] * lay.dp[None, None, :],  # type: ignore[attr-defined]
                           (len(concs), rows, len(lay))).copy()  # type: ignore[arg-type]
    speed, first = figures(conc, None)
    assert first is not None
    for m, c in enumerate(concs):
        # the same users a replica on every layout: the columns at concurrency c x dp, one layout at a time
        for dp in np.unique(lay.dp):  # type: ignore[attr-defined]
            at = np.flatnonzero(lay.dp == dp)  # type: ignore[attr-defined]
            cols = sweep_serving.serving_columns(model_, shapes, spec_, lay, weights, kvs, (int(c * dp),),  # type: ignore[arg-type]
                                                 (context,), prompt, output, None, media, cross)  # type: ignore[arg-type]
            prefill = cols["prefill_s"][at, :, :, 0].reshape(at.size, rows).T  # (W x K, layouts of this DP)
            per_user = cols["decode_tokens_per_s_per_user"][at, :, :, 0].reshape(at.size, rows).T
            ok = np.isfinite(prefill)
            assert ok.any()
            assert np.allclose(first[m][:, at][ok], prefill[ok], rtol=1e-9, atol=0)
            assert np.allclose(speed[m][:, at][ok], per_user[ok], rtol=1e-9, atol=0)
