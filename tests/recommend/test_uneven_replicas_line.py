"""recommend states what a row with users split unevenly over its replicas assumes: every user at the busiest
replica's pace, where plan --concurrency N adds each replica's own rate (a stop-47 walk: 64 users on 3 RTX 4090
replicas read 1,916.5 tok/s against plan's 1,941.7, with nothing said)."""

from __future__ import annotations

from datetime import UTC, datetime

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json

NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)


def _answer(concurrency: int | None) -> dict:  # type: ignore[type-arg]
    catalog = load_catalog()
    offerings = tuple(o for o in catalog.offerings if o.gpu == "rtx-4090")
    spec = SweepSpec(workload=Workload(task="inference", concurrency=concurrency))
    return recommendation_to_json(recommend(load_model("llama-3.1-8b"), spec, catalog, "1month", NOW, top=4,
                                            offerings=offerings))


def test_an_uneven_row_says_it_is_timed_at_the_busiest_replica() -> None:
    # 64 users (the walk's): over the ladder each layout now also runs at its own saturation, DP x a replica's, even
    answer = _answer(64)
    uneven = [(i, r) for i, r in enumerate(answer["results"], 1)
              if r["layout"]["dp"] > 1 and r["concurrency"] % r["layout"]["dp"]]
    assert uneven, "64 users on the RTX 4090 offerings left no uneven row: pick another case"
    line = next(a for a in answer["assumptions"] if a.startswith("Users split unevenly over replicas"))
    for i, r in uneven:
        assert f"#{i}: {r['concurrency']:,} over {r['layout']['dp']}" in line
        assert f"{-(-r['concurrency'] // r['layout']['dp']):,}" in line


def test_even_rows_say_nothing() -> None:
    answer = _answer(12)  # 12 users divide over 1, 2, 3 and 4 replicas
    assert all(r["concurrency"] % r["layout"]["dp"] == 0 for r in answer["results"])
    assert not any(a.startswith("Users split unevenly") for a in answer["assumptions"])
