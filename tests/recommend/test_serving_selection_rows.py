"""recommend's serving pick under the stages rule (``best_serving_per_group``), which ranks each (shape, servers)
group once over its own layouts, against the rule as stated: the fastest usable configuration of every group, and
where TP alone runs in a group, the fastest usable without stages on scale-up servers (two rankings of the whole
grid). Over a whole-catalog serving ladder and random subsets of it, so that the groups where TP alone runs vary."""

from __future__ import annotations

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from anchorgpu.recommend.selection import best_per_group, best_serving_per_group, stages_on_scale_up_grid


@pytest.fixture(scope="module")
def ladder():  # type: ignore[no-untyped-def]
    shapes = shapes_from_catalog(load_catalog().offerings)
    return sweep(
        load_model("llama-3.1-70b"),
        shapes,
        SweepSpec(workload=Workload(task="inference", context_tokens=8192)),
        flatten=False,
    )


def _as_stated(result, usable):  # type: ignore[no-untyped-def]
    c = result.columns
    inside = stages_on_scale_up_grid(result)
    best = best_per_group(result, usable)
    tp_alone = best_per_group(
        result, usable & ~inside & c.widen(np.asarray(c.compact("ep")) <= np.asarray(c.compact("tp")))
    )
    without = best_per_group(result, usable & ~inside)
    return {key: (without[key] if key in tp_alone else i) for key, i in best.items()}


@pytest.mark.parametrize("keep", [1.0, 0.5, 0.05, 0.005])
def test_each_group_ranked_once_picks_what_the_rule_picks(ladder, keep: float) -> None:  # type: ignore[no-untyped-def]
    fits = np.asarray(ladder.columns["fits"], dtype=bool)
    usable = fits & (np.random.default_rng(58).random(fits.size) < keep)
    inside = stages_on_scale_up_grid(ladder)
    assert keep < 0.01 or bool((inside & usable).any())  # the rule has stages to leave out
    got = best_serving_per_group(ladder, usable)
    expected = _as_stated(ladder, usable)
    assert got == expected and list(got) == list(expected)
