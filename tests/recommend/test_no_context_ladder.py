"""recommend with no --context and no --concurrency sizes each concurrency of its ladder as ``plan --concurrency N``
sizes it (issue 11: "the context the request needs"): one sequence at the model's window, more at the request the
speed figures time (1,024 + 256 tokens). It used to size every sequence at the whole 131,072-token window, so Llama 3.1
8B on an L40S came out at one user, 44 tok/s and $6.73 per million tokens, while plan gives the same GPU ~128 users of
the default request at ~1,650 tok/s. An engine that cannot hold one whole-window sequence still gets plan's launch:
its maximum length lowered to what its KV cache holds (recipes.serving)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.inputs import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, shapes_from_catalog
from cli_runner import run_json

NOW = datetime(2026, 12, 1, tzinfo=UTC)
LLAMA_8B = load_model("llama-3.1-8b")
REQUEST = DEFAULT_PROMPT_TOKENS + DEFAULT_OUTPUT_TOKENS  # 1,280: plan's default request (planner.inputs)
WINDOW = LLAMA_8B.max_context_tokens  # 131,072 (the registry's Llama 3.1 8B)


def _plan_of(row: dict[str, Any], concurrency: int):  # type: ignore[no-untyped-def]
    """``plan llama-3.1-8b --gpu GPU --concurrency N`` with the row's layout and formats, no length given."""
    return plan(LLAMA_8B, Workload(task="inference", concurrency=concurrency),
                precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                layout=Layout(gpus=row["gpus"], tp=row["layout"]["tp"], pp=row["layout"]["pp"], dp=row["layout"]["dp"]),
                gpu=get_gpu(row["gpu"]), suggest=False, choose_layout=False)


def test_an_l40s_serves_many_users_of_the_default_request_as_plan_sizes_them(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--gpu", "l40s", "--top", "1")
    row = doc["results"][0]
    assert row["offering"] == "l40s-1x-vm" and row["servers"] == 1
    conc = row["concurrency"]
    assert conc > 1  # was 1: one 131,072-token sequence filled the KV cache
    p = _plan_of(row, conc)
    assert p.fits and p.workload.context_tokens == REQUEST
    assert row["per_gpu"]["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes
    assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes and row["budget_bytes"] == p.budget_bytes
    perf = plan_performance(p)
    assert row["output_tokens_per_s"] == pytest.approx(perf["output_tokens_per_s"], abs=0.05)
    assert row["ttft_s"] == pytest.approx(perf["ttft_s"], abs=5e-5)
    # the plan CLI gives the same row
    cli = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "l40s", "--concurrency", str(conc))
    assert cli["gpus"] == 1 and cli["workload"]["context_tokens"] == REQUEST
    assert cli["per_gpu"]["kv_cache_bytes"] == row["per_gpu"]["kv_cache_bytes"]
    assert cli["performance"]["output_tokens_per_s"] == pytest.approx(row["output_tokens_per_s"], abs=0.05)
    # what is assumed, said once: no more "the model's context length, 131072 tokens per sequence"
    assert not any("131072 tokens per sequence" in a for a in doc["assumptions"])
    line = next(a for a in doc["assumptions"] if a.startswith("Context not given"))
    swept = next(a for a in doc["assumptions"] if a.startswith("Swept"))
    top = int(swept.split(" x concurrency ")[1].split(" ")[0].rstrip(".").split(",")[-1])
    assert top >= 512  # the ladder's top: 512, or past it where a layout swept runs more users (planner.sweep_ladder)
    assert f"1 sequence at {WINDOW:,} tokens" in line and f"2 to {top:,} sequences at {REQUEST:,} tokens each" in line
    assert (doc["workload"]["context_tokens"], doc["workload"]["one_sequence_context_tokens"]) == (REQUEST, WINDOW)


def test_one_sequence_is_still_sized_at_the_window_as_plan_sizes_it() -> None:
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.id == "l40s-1x-vm")
    result = sweep(LLAMA_8B, shapes, SweepSpec(workload=Workload(task="inference"), weights=("bf16",),
                                                kv_caches=("bf16",)))
    assert dict(result.concurrency_contexts)[1] == WINDOW and result.context_at(2) == REQUEST
    rows = {r["concurrency"]: r for r in (result.row(i) for i in range(result.evaluated)) if r["tp"] == 1}
    for conc in (1, 2, 64):
        row = rows[conc]
        p = plan(LLAMA_8B, Workload(task="inference", concurrency=conc), precision=PrecisionPlan(weights="bf16"),
                 layout=Layout(gpus=1), gpu=get_gpu("l40s"), suggest=False, choose_layout=False)
        assert p.workload.context_tokens == result.context_at(conc)
        assert row["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes and row["fits"] == p.fits


def test_a_gpu_whose_cache_holds_no_whole_window_launches_at_the_length_plan_gives(
        capsys: pytest.CaptureFixture[str]) -> None:
    """RTX 4090 (24 GB): after Llama 3.1 8B's 15 GiB of weights its KV cache holds ~40k tokens, short of one
    131,072-token sequence, which vLLM at its default max_model_len refuses to start with; the row's launch is plan's,
    with --max-model-len lowered to what the cache holds."""
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--gpu", "rtx-4090", "--top", "1", "--recipe", "vllm")
    row = doc["results"][0]
    assert row["offering"] == "rtx-4090-1x-vm" and row["concurrency"] > 1  # main rejected it: 131,072 tokens a GPU
    from anchorgpu.recipes import Target, build_recipe

    expected = build_recipe(_plan_of(row, row["concurrency"]), "vllm", target=Target(nodes=1, gpus_per_node=1))
    assert row["recipe"]["command"] == expected.command
    length = int(expected.command.split("--max-model-len ")[1].split()[0])
    assert REQUEST < length < WINDOW
    assert row["max_model_len_tokens"] == length  # the row says it without --recipe too


def test_the_maximum_length_is_said_only_where_the_cache_holds_no_whole_window(
        capsys: pytest.CaptureFixture[str]) -> None:
    """An L40S's KV cache holds a whole 131,072-token sequence (its launch keeps the window); an RTX 4090's does not,
    and the text answer names the length, as the JSON does. With --context the rows carry no such figure."""
    rows = [r for gpu in ("l40s", "rtx-4090")
            for r in run_json(capsys, "recommend", "llama-3.1-8b", "--gpu", gpu, "--top", "3")["results"]]
    assert {r["gpu"] for r in rows} == {"l40s", "rtx-4090"}
    for r in rows:
        assert ("max_model_len_tokens" in r) == (r["gpu"] == "rtx-4090"), r["offering"]
    given = run_json(capsys, "recommend", "llama-3.1-8b", "--gpu", "rtx-4090", "--context", "4096", "--top", "1")
    assert "max_model_len_tokens" not in given["results"][0]
    from cli_runner import run

    _, out, _ = run(capsys, "recommend", "llama-3.1-8b", "--gpu", "rtx-4090", "--top", "1")
    text = " ".join(out.split())
    first = next(r for r in rows if r["gpu"] == "rtx-4090")
    assert f"#1 rtx-4090-1x-vm {first['max_model_len_tokens']:,} tokens" in text and "vLLM refuses to start" in text


def test_a_context_or_a_concurrency_still_sizes_every_concurrency_alike() -> None:
    for workload, spec_kw in ((Workload(task="inference", context_tokens=8192), {}),
                              (Workload(task="inference", concurrency=1), {}),
                              (Workload(task="inference"), {"prompt_tokens": 1000, "output_tokens": 200})):
        rec = recommend(LLAMA_8B, SweepSpec(workload=workload, **spec_kw), load_catalog(), "1month", NOW, top=1)
        assert "one_sequence_context_tokens" not in rec.workload
        assert not any(a.startswith("Context not given: each sequence sized as plan") for a in rec.assumptions)


def test_the_readme_states_what_recommend_answers(capsys: pytest.CaptureFixture[str]) -> None:
    """README.md's recommend section: the first row of `recommend llama-3.1-8b --top 3` and its launch length."""
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    doc = run_json(capsys, "recommend", "llama-3.1-8b", "--top", "3", "--recipe", "vllm")
    row = doc["results"][0]
    assert (f"starts at `{row['offering']}` with {row['concurrency']} users, {row['decode_tokens_per_s_total']:,.0f} "
            f"tok/s and ${row['usd_per_million_output_tokens']} a million tokens") in readme
    length = row["recipe"]["command"].split("--max-model-len ")[1].split()[0]
    assert f"holds {int(length):,} tokens after the weights" in readme and f"`--max-model-len {length}`" in readme
    assert f"context {REQUEST:,} ({WINDOW:,} at concurrency 1)" in readme
    whole = run_json(capsys, "recommend", "llama-3.1-8b", "--context", str(WINDOW), "--top", "1")["results"][0]
    assert (f"`--context {WINDOW}`, the sweep's old default) starts at `{whole['offering']}` with "
            f"{whole['concurrency']} user, {whole['decode_tokens_per_s_total']:,.0f} tok/s and "
            f"${whole['usd_per_million_output_tokens']} a million tokens") in readme


def test_every_model_times_the_same_request_alone_as_with_others() -> None:
    """The sweep sizes each concurrency's sequence apart but times the ladder with one request and one set of images
    or encoder input (its probe's, at the ladder's first concurrency): exact only while plan times the same request
    for one sequence at the window as for many at the default request. It does for every registry model."""
    from anchorgpu.architectures import list_models
    from anchorgpu.architectures.spec import ModelSpec
    from anchorgpu.planner.inference import request_media
    from anchorgpu.planner.media import text_request
    from anchorgpu.planner.sweep_request import timed_request

    checked = 0
    for name in list_models():
        model = load_model(name)
        if not isinstance(model, ModelSpec):
            continue
        timed = []
        for conc in (1, 2):
            w = Workload(task="inference", concurrency=conc)
            p = plan(model, w, precision=PrecisionPlan(weights="bf16", kv_cache="bf16"), layout=Layout(gpus=1),
                     suggest=False, choose_layout=False)
            ctx = p.workload.context_tokens or model.max_context_tokens
            media = request_media(model, w) if model.encoder is not None or model.image is not None else None
            cross = timed_request(model, w, media, ctx)
            timed.append((cross or text_request(w, ctx), media))
        assert timed[0] == timed[1], model.name
        checked += 1
    assert checked > 100
