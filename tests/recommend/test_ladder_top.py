"""recommend without --concurrency tries 1, 2, 4, ..., 512 users, then doubles on while a layout swept could run that
many at once (planner.sweep_ladder): a replica runs at most its engine's sequence cap (vLLM's max_num_seqs, 1,024 on
large GPUs: planner.engine_limits.engine_limits) and each data-parallel replica is an engine of its own. With the top fixed
at 512, `recommend deepseek-v3 --gpu h200` showed 1, 2 and 3 servers of 8 H200 all at 512 users, the 3-server row at
15.8 tok/s a user and $3.05 a million tokens: 512 users spread over 24 GPUs."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.serving_request import request_media
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import BATCH_LADDER, sweep
from anchorgpu.planner.sweep_grid import layout_grid
from anchorgpu.planner.sweep_ladder import most_sequences
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from cli_runner import run_json


def _text_model(name: str) -> ModelSpec:
    model = load_model(name)
    assert isinstance(model, ModelSpec)
    return model


DEEPSEEK_V3 = _text_model("deepseek-v3")


def _swept_ladder(doc: dict) -> list[int]:  # type: ignore[type-arg]
    line = next(a for a in doc["assumptions"] if a.startswith("Swept"))
    return [int(c) for c in line.split(" x concurrency ")[1].split(" ")[0].rstrip(".").split(",")]


def test_three_servers_of_h200_run_deepseek_v3_past_512_users_as_plan_gives_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "recommend", "deepseek-v3", "--gpu", "h200", "--top", "3")
    row = next(r for r in doc["results"] if r["offering"] == "h200-8x-bm" and r["servers"] == 3)
    conc, lay = row["concurrency"], row["layout"]
    assert conc > 512  # main: 512, the ladder's fixed top
    assert conc <= lay["dp"] * 1024  # within vLLM's default max_num_seqs on an H200, a replica
    # (one server's attention-DP engine on each of several servers runs that many times each rung:
    # sweep_attention_dp._scaled_columns)
    scale = row["servers"] if lay["ep"] > lay["tp"] and lay["ep"] < row["gpus"] else 1
    assert _swept_ladder(doc)[:len(BATCH_LADDER)] == list(BATCH_LADDER) and max(_swept_ladder(doc)) * scale >= conc
    assert any("doubling past 512" in a for a in doc["assumptions"])
    # the row is plan --concurrency N's, sequences sized at the default request as plan sizes them
    p = plan(DEEPSEEK_V3, Workload(task="inference", concurrency=conc),
             precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
             layout=Layout(gpus=row["gpus"], tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], ep=lay["ep"]),
             gpu=get_gpu("h200"), suggest=False, choose_layout=False)
    assert p.fits
    assert row["per_gpu"]["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes
    assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes and row["budget_bytes"] == p.budget_bytes
    perf = plan_performance(p)
    # a user's pace is the busiest replica's (the users split unevenly over 3 replicas), as plan gives it; the total
    # adds up each replica's own users, as plan's does
    assert row["decode_tokens_per_s_per_user"] == pytest.approx(perf["decode_tokens_per_s_per_user"], abs=0.05)
    assert row["output_tokens_per_s"] == pytest.approx(perf["output_tokens_per_s"], abs=0.05)
    assert row["ttft_s"] == pytest.approx(perf["ttft_s"], abs=5e-5)
    # the price of a million tokens follows: more users on the same servers, a lower price than at 512
    at_512 = plan_performance(plan(DEEPSEEK_V3, Workload(task="inference", concurrency=512),
                                   precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                                   layout=Layout(gpus=row["gpus"], tp=lay["tp"], pp=lay["pp"], dp=lay["dp"],
                                                 ep=lay["ep"]),
                                   gpu=get_gpu("h200"), suggest=False, choose_layout=False))
    assert row["output_tokens_per_s"] > at_512["output_tokens_per_s"]


@pytest.mark.parametrize(("model", "gpu", "engine"), [("deepseek-v3", "h200", "vllm"), ("llama-3.1-70b", "h200", "sglang"),
                                                      ("llama-3.1-8b", "l40s", "vllm"), ("qwen3-30b-a3b", "h100", "trtllm"),
                                                      ("qwen2.5-vl-7b", "h100", "vllm"), ("whisper-large-v3", "l4", "vllm")])
def test_no_configuration_past_the_bound_fits_and_runs_within_its_cap(model: str, gpu: str,
                                                                     engine: Literal["vllm", "trtllm", "sglang"]) -> None:
    """The ladder stops at the largest power of two within most_sequences; swept further by hand, no configuration
    past that bound both fits its memory and runs within its engines' caps (what recommend counts as usable)."""
    spec_model = _text_model(model)
    shapes = [s for s in shapes_from_catalog(load_catalog().offerings) if s.gpu.name == get_gpu(gpu).name]
    w = Workload(task="inference", engine=engine)
    lay = layout_grid(spec_model, shapes, training=False, max_pp=8, zero_stages=(0,))
    auto = sweep(spec_model, shapes, SweepSpec(workload=w))
    weights, kvs = auto.weights, auto.kv_caches
    # the request's cross-attention K/V (Whisper's frames) counted as the sweep counts it
    media = request_media(spec_model, replace(w, concurrency=BATCH_LADDER[-1]))
    bound = most_sequences(spec_model, shapes, w, lay, weights, kvs, auto.context_at(2), media)
    ladder = [c for c, _ in auto.concurrency_contexts]
    assert ladder[:len(BATCH_LADDER)] == list(BATCH_LADDER) and all(b == 2 * a for a, b in zip(ladder[:-1], ladder[1:], strict=True))
    assert ladder[-1] <= max(bound, 512) < 2 * ladder[-1]
    beyond = sweep(spec_model, shapes, SweepSpec(workload=w, weights=weights, kv_caches=kvs,
                                                 concurrencies=(ladder[-1] * 2, ladder[-1] * 4)))
    c = beyond.columns
    caps = np.array([engine_limits(w, large_gpu=large_engine_defaults(s.gpu))[1] for s in shapes])
    usable = np.asarray(c["fits"], dtype=bool) & (np.asarray(c["concurrency"]) <= np.asarray(c["dp"]) * caps[c["shape"]])
    # but one server's attention-DP engine on each of several servers, which the ladder runs at that many times each
    # rung (sweep_attention_dp._scaled_columns), not at the rungs themselves
    several = (np.asarray(c["ep"]) > np.asarray(c["tp"])) & (np.asarray(c["servers"]) > 1)
    assert not (usable & ~several).any()


def test_a_concurrency_given_or_small_gpus_keep_the_old_ladder() -> None:
    llama = _text_model("llama-3.1-8b")
    shapes = [s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.id == "l4-1x-vm"]
    # an L4's vLLM runs at most 256 sequences (its small defaults) and holds fewer: nothing past 512
    small = sweep(llama, shapes, SweepSpec(workload=Workload(task="inference")))
    assert tuple(c for c, _ in small.concurrency_contexts) == BATCH_LADDER
    assert not any("doubling past" in a for a in small.assumptions)
    big = [s for s in shapes_from_catalog(load_catalog().offerings) if s.id == "h200-8x-bm"]
    given = sweep(llama, big, SweepSpec(workload=Workload(task="inference", concurrency=64)))
    assert [c for c, _ in given.concurrency_contexts] == [64]
    listed = sweep(llama, big, SweepSpec(workload=Workload(task="inference"), concurrencies=(1, 8)))
    assert [c for c, _ in listed.concurrency_contexts] == [1, 8]


def test_the_readme_states_the_three_server_row(capsys: pytest.CaptureFixture[str]) -> None:
    """README.md's recommend section: the 3 x 8 H200 row of `recommend deepseek-v3 --gpu h200 --top 3`."""
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    doc = run_json(capsys, "recommend", "deepseek-v3", "--gpu", "h200", "--top", "3")
    row = next(r for r in doc["results"] if r["offering"] == "h200-8x-bm" and r["servers"] == 3)
    assert (f"puts three 8 x H200 servers at {row['concurrency']:,} users, {row['decode_tokens_per_s_total']:,.0f} tok/s "
            f"and ${row['usd_per_million_output_tokens']} a million tokens") in readme
    # the interactive-target paragraph: one server at its best concurrency, a few tokens a second per user
    one = next(r for r in doc["results"] if r["offering"] == "h200-8x-bm" and r["servers"] == 1)
    assert (f"(DeepSeek-V3 on 8 x H200: {one['concurrency']:,} users at {one['decode_tokens_per_s_per_user']:.1f} tok/s "
            "each)") in readme
    # the three-server row is one server's engine on each: the README's one-server figure (it read 11,715 beside a
    # three-server total of 3 x 11,827)
    assert (f"EP 8, {one['concurrency']:,} users at {one['decode_tokens_per_s_total']:,.0f} tok/s) on each of the "
            "three") in readme


def test_the_ladder_of_an_encoder_decoder_counts_its_cross_attention_cache(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Whisper large-v3 keeps 245,760,000 B of cross-attention K/V a sequence in bf16 (README: its 1,500 frames),
    far more than its 260 decoder tokens: four servers of eight H100s hold at most 32 x 85.5 GB / 245.76 MB, about
    11,000 sequences, whatever their engines' caps. The bound left that cache out and the 'Swept' line claimed a
    layout could run 32,768 users at once."""
    offerings = [o for o in load_catalog().offerings if get_gpu(o.gpu).name == "h100-sxm"]
    gpus = 4 * max(o.gpus for o in offerings)  # --max-servers 4, the default (cli.recommend)
    held = gpus * get_gpu("h100").memory_bytes // 245_760_000
    ladder = _swept_ladder(run_json(capsys, "recommend", "whisper-large-v3", "--gpu", "h100", "--top", "1"))
    assert ladder[-1] <= held < 2 * ladder[-1] or ladder[-1] == BATCH_LADDER[-1]


def test_the_ladder_of_a_vision_model_counts_the_image_tokens_its_sequences_hold(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen2.5-VL-7B's sequences hold 1,280 text + 1,369 image tokens (README's vision journey: a 1024x1024 image is
    1,369 tokens); the bound sized them at the text alone, so on H100s the ladder ran to 16,384 users where the
    memory holds fewer than 16,384 sequences of 2,649 tokens on any layout swept."""
    model = _text_model("qwen2.5-vl-7b")
    doc = run_json(capsys, "recommend", "qwen2.5-vl-7b", "--gpu", "h100", "--top", "1")
    held = doc["workload"]["context_tokens"]
    assert held == 1280 + 1369
    shapes = [s for s in shapes_from_catalog(load_catalog().offerings) if s.gpu.name == get_gpu("h100").name]
    w = Workload(task="inference")
    lay = layout_grid(model, shapes, training=False, max_pp=8, zero_stages=(0,))
    bound = most_sequences(model, shapes, w, lay, ("bf16",), ("bf16",), held)
    ladder = _swept_ladder(doc)
    assert ladder[-1] <= max(bound, BATCH_LADDER[-1]) < 2 * ladder[-1]
