"""Under a per-user speed floor (``recommend --min-tokens-per-s X``) each layout is also swept at its own floor rung
(planner.sweep_floor; planner.sweep_attention_dp._floor_plan): the most sequences it runs while each user still
decodes X tokens/s, within its saturation. Before, a row was priced at the power of two below that: the README's
``recommend deepseek-v3 --gpu h200 --top 3 --min-tokens-per-s 33.3`` showed TP 8 x DP 3 at 64 users, where the
ladder's next rung, 128, is too slow for the floor."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_floor import floor_rungs
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, shapes_from_catalog
from anchorgpu.recommend.eligibility import engine_cap
from cli_runner import run_json

CATALOG = load_catalog()
NOW = datetime(2026, 12, 1, tzinfo=UTC)
SERVING = Workload(task="inference")


def _plan(model, row: dict, concurrency: int):  # type: ignore[no-untyped-def,type-arg]
    return plan(model, Workload(task="inference", concurrency=concurrency),
                precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], ep=row["ep"]),
                gpu=get_gpu(row["gpu"]), suggest=False, choose_layout=False)


def _fast_enough(model, row: dict, concurrency: int, floor: float, prompt: int, output: int) -> bool:  # type: ignore[no-untyped-def,type-arg]
    """Whether plan --concurrency N fits that layout and each user decodes at least ``floor`` tokens/s."""
    p = _plan(model, row, concurrency)
    if not p.fits:
        return False
    return plan_performance(p, prompt_tokens=prompt, output_tokens=output)["decode_tokens_per_s_per_user"] >= floor


@pytest.mark.parametrize(("model_name", "prefix", "floor"), [
    ("llama-3.1-70b", "h100-sxm-8x", 33.3),  # plain TP x DP layouts
    ("deepseek-v3", "h200-8x", 20.0),  # attention-DP layouts (EP 8), on one server and on several
    ("qwen3-30b-a3b", "h100-sxm-8x", 33.3),  # attention DP of eight TP-1 replicas
])
def test_each_row_is_plans_and_the_largest_that_meets_the_floor(model_name: str, prefix: str, floor: float) -> None:
    model = load_model(model_name)
    offerings = [o for o in CATALOG.offerings if o.id.startswith(prefix)]
    r = recommend(model, SweepSpec(workload=SERVING), CATALOG, "1month", NOW, min_tokens_per_s_per_user=floor,
                  top=4, offerings=offerings)
    prompt, output = r.workload["prompt_tokens"], r.workload["output_tokens"]
    assert r.results
    for o in r.results:
        row = o.config
        n = row["concurrency"]
        p = _plan(model, row, n)
        perf = plan_performance(p, prompt_tokens=prompt, output_tokens=output)
        assert p.fits
        assert perf["decode_tokens_per_s_per_user"] >= floor
        # the row is plan --concurrency N's: its speed and its memory
        assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-6)
        assert row["decode_tokens_per_s_per_user"] == pytest.approx(perf["decode_tokens_per_s_per_user"], rel=1e-6)
        assert row["per_gpu_total_bytes"] == pytest.approx(p.per_gpu.total_bytes, rel=1e-6)
        # one more sequence a replica breaks the floor or the memory, or passes the engines' sequence caps
        more = n + row["dp"]
        if more <= row["dp"] * engine_cap(SERVING, get_gpu(row["gpu"])):
            assert not _fast_enough(model, row, more, floor, prompt, output), (o.offering, o.servers, n)


def test_the_three_server_deepseek_row_runs_well_past_the_ladders_rung() -> None:
    """DeepSeek-V3 on 3 x 8 H200 as TP 8 x DP 3 under 33.3 tok/s a user: the ladder's best rung that met the floor
    (64, the row shown before) against the floor rung; the same layout, more users, cheaper tokens."""
    model = load_model("deepseek-v3")
    shapes = tuple(s for s in shapes_from_catalog(CATALOG.offerings, max_servers=3) if s.id == "h200-8x-bm")
    result = sweep(model, shapes, SweepSpec(workload=SERVING, weights=("fp8-block128x128",), kv_caches=("bf16",),
                                            min_tokens_per_s_per_user=33.3))
    c = result.columns
    at = (np.asarray(c["servers"]) == 3) & (np.asarray(c["tp"]) == 8) & (np.asarray(c["dp"]) == 3)
    at &= np.asarray(c["fits"], dtype=bool)
    at &= np.nan_to_num(np.asarray(c["decode_tokens_per_s_per_user"], dtype=np.float64)) >= 33.3
    conc = np.asarray(c["concurrency"])
    total = np.nan_to_num(np.asarray(c["decode_tokens_per_s_total"], dtype=np.float64))
    powers = at & ((conc & (conc - 1)) == 0)
    ladder = int(np.argmax(np.where(powers, total, -1.0)))
    best = int(np.argmax(np.where(at, total, -1.0)))
    assert conc[ladder] == 64  # the README's row before this change
    assert conc[best] >= 1.5 * conc[ladder] and conc[best] % 3 == 0  # whole sequences on each of the 3 replicas
    assert total[best] >= 1.25 * total[ladder]
    line = next(a for a in result.assumptions if a.startswith("Swept"))
    assert "each layout at its own floor at each precision" in line and "33.3 tokens/s or faster" in line


def test_no_floor_rung_without_a_floor_or_with_a_concurrency_named() -> None:
    model = load_model("llama-3.1-8b")
    shapes = tuple(s for s in shapes_from_catalog(CATALOG.offerings) if s.id == "h100-sxm-1x-vm")
    plain = sweep(model, shapes, SweepSpec(workload=SERVING))
    floored = sweep(model, shapes, SweepSpec(workload=SERVING, min_tokens_per_s_per_user=33.3))
    # one rung more a layout and precision, on each layout's grid of precisions x concurrencies
    precisions = len(plain.weights) * len(plain.kv_caches)
    rungs = len(plain.concurrency_contexts) + precisions
    assert (floored.evaluated - plain.evaluated) * rungs == plain.evaluated * precisions
    assert not any("own floor" in a for a in plain.assumptions)
    named = sweep(model, shapes, SweepSpec(workload=Workload(task="inference", concurrency=8),
                                           min_tokens_per_s_per_user=33.3))
    assert not any("own floor" in a for a in named.assumptions)


def test_bisection_keeps_a_rung_that_meets_the_floor_below_one_that_does_not() -> None:
    # a user's tokens/s falls with the sequences a replica runs: 120 / (1 + per replica / 10), at least 33.3 up to 26
    # sequences a replica
    dp = np.array([1, 2, 4, 8])
    speed = lambda conc: 120.0 / (1.0 + (-(-conc // dp)) / 10.0)  # noqa: E731
    saturation = np.array([[512, 40, 512, 16]])
    rungs = floor_rungs(speed, dp, saturation, 33.3)
    per_replica = rungs // dp
    assert (speed(rungs) >= 33.3).all()
    # the next sequence a replica is too slow, or past the saturation (DP 2's 20 a replica and DP 8's 2)
    assert ((speed((per_replica + 1) * dp) < 33.3) | ((per_replica + 1) * dp > saturation)).all()
    assert rungs.tolist() == [[26, 40, 104, 16]]


def test_the_interactive_lines_flag_works_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    """recommend's line for chat names a flag; run with it, every row meets it and the rows serve more users than
    the ladder's powers of two alone would have given them."""
    doc = run_json(capsys, "recommend", "llama-3.1-70b", "--gpu", "h100", "--top", "3")
    line = next(a for a in doc["assumptions"] if a.startswith("Each offering runs the concurrency"))
    flag = re.search(r"set (--min-tokens-per-s-per-user) ([0-9.]+)", line)
    assert flag is not None
    floored = run_json(capsys, "recommend", "llama-3.1-70b", "--gpu", "h100", "--top", "3", flag[1], flag[2])
    assert floored["results"]
    for row in floored["results"]:
        assert row["decode_tokens_per_s_per_user"] >= float(flag[2])
    assert any(row["concurrency"] & (row["concurrency"] - 1) for row in floored["results"])  # not a power of two
    swept = next(a for a in floored["assumptions"] if a.startswith("Swept"))
    assert f"{float(flag[2]):g} tokens/s or faster" in swept


def test_every_layouts_floor_rung_in_the_sweep() -> None:
    """Over every plain layout and precision of a sweep (3 weight formats x 2 KV dtypes): the floor rung's per-user
    speed, as the sweep's grid gives it, meets the floor, or the rung is one sequence a replica (none does); one more
    sequence a replica, timed as the sweep times it, is too slow or past the layout's saturation rung."""
    from anchorgpu.planner.sweep_serving_limits import per_user_speed

    model = load_model("llama-3.1-70b")
    shapes = tuple(s for s in shapes_from_catalog(CATALOG.offerings, max_servers=2)
                   if s.id in ("h100-sxm-8x-bm", "a100-80gb-sxm-8x-bm"))
    assert len(shapes) == 2
    spec = SweepSpec(workload=SERVING, weights=("bf16", "fp8", "int4-awq"), kv_caches=("bf16", "fp8"),
                     min_tokens_per_s_per_user=33.3)
    result = sweep(model, shapes, spec)
    precisions = 6
    grid = (-1, 3, 2, len(result.concurrency_contexts) + 2 * precisions)

    def on_grid(name: str) -> np.ndarray:  # type: ignore[type-arg]
        return np.asarray(result.columns[name]).reshape(grid)

    conc, speed, dp = on_grid("concurrency"), on_grid("decode_tokens_per_s_per_user"), on_grid("dp")[:, 0, 0, 0]
    at = np.arange(precisions)
    # the saturation rungs, then the floor rungs, each (layout, precision) at its own: (L, W x K)
    saturation = conc[..., -2 * precisions:-precisions].reshape(-1, precisions, precisions)[:, at, at]
    rung = conc[..., -precisions:].reshape(-1, precisions, precisions)[:, at, at]
    rung_speed = speed[..., -precisions:].reshape(-1, precisions, precisions)[:, at, at]
    one_each = rung <= np.maximum(dp, 2)[:, None]
    assert ((rung_speed >= 33.3) | one_each).all()
    assert (rung <= saturation).all()
    ctx = result.context_at(int(conc.max()))
    per_user = per_user_speed(model, shapes, spec, _plain_layouts(result, len(dp)), spec.weights, spec.kv_caches,
                               ctx, result.prompt_tokens, result.output_tokens, None, None)
    # the search's own timing is the grid's, to the bit
    assert np.array_equal(per_user(rung.T[None])[0].T, rung_speed)
    more = (rung // dp[:, None] + 1) * dp[:, None]
    slower = per_user(more.T[None])[0].T < 33.3
    assert (slower | (more > saturation) | ~(rung_speed >= 33.3)).all()
    assert (rung > 64).any() and (rung & (rung - 1)).any()  # rungs the ladder did not have


def _plain_layouts(result, n: int):  # type: ignore[no-untyped-def]
    """The sweep's layouts (one row a layout on its grid), as the serving columns took them."""
    from anchorgpu.planner.sweep_grid import Layouts

    cols = ("shape", "servers", "gpus", "tp", "pp", "dp", "zero", "ep", "cp")
    per = result.evaluated // n  # configurations a layout
    return Layouts(*(np.asarray(result.columns[name])[::per].astype(np.int64) for name in cols))


def test_the_readme_states_the_three_server_floor_row(capsys: pytest.CaptureFixture[str]) -> None:
    """README.md's recommend section: the 3 x 8 H200 row of `recommend deepseek-v3 --gpu h200 --top 3
    --min-tokens-per-s 33.3`, and the ladder's rung it replaced (the same layout's best power of two that met the
    floor, priced at the same servers' term total)."""
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    doc = run_json(capsys, "recommend", "deepseek-v3", "--gpu", "h200", "--top", "3", "--min-tokens-per-s", "33.3")
    row = next(r for r in doc["results"] if r["offering"] == "h200-8x-bm" and r["servers"] == 3)
    assert (row["layout"]["tp"], row["layout"]["pp"], row["layout"]["dp"]) == (8, 1, 3)
    assert (f"puts 3 x 8 H200 as TP 8 x DP 3 at {row['concurrency']:,} users, {row['decode_tokens_per_s_total']:,.0f} "
            f"tok/s and ${row['usd_per_million_output_tokens']} a million tokens") in readme
    model = load_model("deepseek-v3")
    shapes = tuple(s for s in shapes_from_catalog(CATALOG.offerings, max_servers=3) if s.id == "h200-8x-bm")
    result = sweep(model, shapes, SweepSpec(workload=SERVING, weights=(row["weights"],), kv_caches=(row["kv_cache"],)))
    c = result.columns
    conc = np.asarray(c["concurrency"])
    at = (np.asarray(c["servers"]) == 3) & (np.asarray(c["tp"]) == 8) & (np.asarray(c["dp"]) == 3)
    at &= np.asarray(c["fits"], dtype=bool) & ((conc & (conc - 1)) == 0)
    at &= np.nan_to_num(np.asarray(c["decode_tokens_per_s_per_user"], dtype=np.float64)) >= 33.3
    total = np.nan_to_num(np.asarray(c["decode_tokens_per_s_total"], dtype=np.float64))
    ladder = int(np.argmax(np.where(at, total, -1.0)))
    # the servers' term total over the tokens they decode in the term's 720 hours, as recommend prices a row
    usd = float(row["total_usd"]) / (total[ladder] * 720 * 3600 / 1e6)
    assert (f"where the ladder's rung below the floor, {conc[ladder]:,} users, gave {total[ladder]:,.0f} tok/s and "
            f"${usd:.3f}") in readme
