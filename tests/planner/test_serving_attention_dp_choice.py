"""Serving a mixture of experts whose KV cache a TP split cannot divide: attention data parallelism chosen for the
user. DeepSeek-R1 keeps one MLA latent per token and layer, which every TP rank holds whole, so on 8 H200s at 512
users of 1,000 + 1,000 tokens TP 8 needs 150.96 GiB a GPU (67 GiB of it cache) and does not fit; 8 replicas of the
attention (TP 1), each with its own 64 users' cache, and the routed experts split over the 8 GPUs (EP 8) hold them.
That is how the model is served on such a server: TensorRT-LLM's DeepSeek-R1 guide ran it on 8 H200 as
``--tp 8 --ep 8`` with ``enable_attention_dp`` (row TRT-DSR1-ADP-H200 of measured_runs.json, from
NVIDIA/TensorRT-LLM docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md, commit 01c4ece), and
SGLang's and vLLM's DeepSeek guides launch it with DP attention and expert parallelism."""

from __future__ import annotations

import shlex

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.recipes import build_recipe

H200 = get_gpu("h200")
R1 = load_model("deepseek-r1")
REQUEST = Workload(task="inference", prompt_tokens=1000, output_tokens=1000, concurrency=512)


def _split(p) -> tuple[int, int, int, int, int]:  # type: ignore[no-untyped-def]
    lay = p.layout
    return lay.gpus, lay.tp, lay.pp, lay.dp, lay.ep


def test_tp_across_the_server_cannot_hold_the_users() -> None:
    tp8 = plan(R1, REQUEST, layout=Layout(gpus=8, tp=8), gpu=H200)
    assert tp8.fits is False
    # the latent cache is whole on every TP rank: 512 x 2,000 tokens x 61 layers x 576 values x 2 bytes
    assert tp8.per_gpu.kv_cache_bytes >= 512 * 2000 * 61 * 576 * 2
    offered = {s.change: s for s in tp8.suggestions}
    assert offered["--tp 1 --dp 8 --ep 8"].gpus == 8


def test_on_the_8_gpus_asked_attention_data_parallelism_is_chosen() -> None:
    chosen = plan(R1, REQUEST, layout=Layout(gpus=8), gpu=H200)
    # of the six layouts that hold the users (attention DP of TP 1, 2 and 4 replicas, then PP splits), the first: TP 2 is predicted
    # 4% faster, inside the calibration's layout margin between layouts on NVLink that split the experts
    # (scale-up-adp), so the first is kept
    assert _split(chosen) == (8, 1, 1, 8, 8) and chosen.fits
    tp8 = plan(R1, REQUEST, layout=Layout(gpus=8, tp=8), gpu=H200)
    assert chosen.per_gpu.kv_cache_bytes * 8 <= tp8.per_gpu.kv_cache_bytes * 1.01  # each GPU: an eighth of the users
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen on the 8 GPUs asked"))
    assert "attention data parallelism" in reason and "of the 6 layouts on them that hold 512 sequences" in reason
    assert "the default, TP 8, does not hold them" in reason
    codes = {w.code for w in chosen.warnings}  # the replicas pool the experts, not nothing
    assert "attention_dp_replicas" in codes and "ddp_no_memory_pooling" not in codes
    perf = plan_performance(chosen)
    assert perf["output_tokens_per_s"] > 0 and any(a.startswith("Attention data parallelism") for a in perf["assumptions"])


def test_without_a_gpu_count_one_server_is_enough() -> None:
    """Before, the fewest GPUs were 16 (two TP 8 replicas); with attention data parallelism 8 hold the users."""
    chosen = plan(R1, REQUEST, gpu=H200)
    assert _split(chosen) == (8, 1, 1, 8, 8) and chosen.fits
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen: 8 GPUs"))
    assert "the fewest h200 that hold 512 sequences; of the 6 layouts on them that do, the planner's first" in reason


@pytest.mark.parametrize(("model", "workload"), [
    ("llama-3.1-70b", Workload(task="inference", context_tokens=8192, concurrency=64)),  # dense
    ("deepseek-r1", Workload(task="inference", prompt_tokens=1000, output_tokens=1000, concurrency=64)),  # TP 8 fits
])
def test_a_default_that_fits_is_kept(model: str, workload: Workload) -> None:
    p = plan(load_model(model), workload, layout=Layout(gpus=8), gpu=H200)
    assert _split(p)[1:] == (8, 1, 1, 1) and p.fits
    assert any(a.startswith("Layout not given: inference shards by TP") for a in p.assumptions)
    assert not any(a.startswith("Layout chosen") for a in p.assumptions)


def test_nothing_on_the_gpus_asked_leaves_the_default() -> None:
    """2,000 users: attention data parallelism holds 1,536 on 8 H200s, so nothing there holds them; the plan is the
    default's (TP 8), which says it does not fit, with nothing chosen."""
    many = plan(R1, Workload(task="inference", prompt_tokens=1000, output_tokens=1000, concurrency=2000),
                layout=Layout(gpus=8), gpu=H200)
    assert _split(many)[1:] == (8, 1, 1, 1) and many.fits is False
    assert not any(a.startswith("Layout chosen") for a in many.assumptions)


def _words(command: str) -> list[str]:
    return shlex.split(command.replace("\\\n", " "))


def test_each_engine_launches_the_chosen_layout_as_one_engine() -> None:
    chosen = plan(R1, REQUEST, layout=Layout(gpus=8), gpu=H200)  # TP 1 x DP 8 x EP 8
    vllm = _words(build_recipe(chosen, "vllm").command)
    assert vllm[vllm.index("--tensor-parallel-size") + 1] == "1" and vllm[vllm.index("--data-parallel-size") + 1] == "8"
    assert "--enable-expert-parallel" in vllm
    # SGLang: --tp-size is every GPU of the engine, --dp-size the attention groups (sglang docs, DP attention)
    sglang = _words(build_recipe(chosen, "sglang").command)
    assert sglang[sglang.index("--tp-size") + 1] == "8" and sglang[sglang.index("--dp-size") + 1] == "8"
    assert "--enable-dp-attention" in sglang and sglang[sglang.index("--ep-size") + 1] == "8"
    # TensorRT-LLM runs each GPU's attention alone under attention DP: planned for it, the layout is TP 1 x DP 8,
    # launched as --tp_size 8 --ep_size 8 with enable_attention_dp, as the DeepSeek-R1 guide runs it; one server
    for_trt = plan(R1, Workload(task="inference", prompt_tokens=1000, output_tokens=1000, concurrency=512,
                                engine="trtllm"), layout=Layout(gpus=8), gpu=H200)
    assert _split(for_trt) == (8, 1, 1, 8, 8)
    trt = build_recipe(for_trt, "trtllm")
    words = _words(trt.command)
    assert words[words.index("--tp_size") + 1] == "8" and words[words.index("--ep_size") + 1] == "8"
    assert "enable_attention_dp: true" in dict(trt.files)["trtllm_config.yaml"]
    assert not any("load balancer" in a for a in trt.assumptions)


def test_attention_groups_wider_than_one_gpu_are_not_written_for_tensorrt_llm() -> None:
    p = plan(R1, REQUEST, layout=Layout(gpus=8, tp=2, dp=4, ep=8), gpu=H200)
    with pytest.raises(InvalidWorkload, match="enable_attention_dp runs each GPU's attention alone"):
        build_recipe(p, "trtllm")


def test_the_cli_answers_with_the_chosen_layout(capsys) -> None:  # type: ignore[no-untyped-def]
    from cli_runner import run_json

    out = run_json(capsys, "plan", "deepseek-r1", "--gpu", "h200", "--gpus", "8", "--prompt", "1000",
                   "--output-tokens", "1000", "--concurrency", "512")
    assert out["fits"] is True and (out["layout"]["tp"], out["layout"]["dp"], out["layout"]["ep"]) == (1, 8, 8)
    assert out["performance"]["tpot_s_low"] <= out["performance"]["tpot_s"] <= out["performance"]["tpot_s_high"]


def test_the_readme_quotes_these_figures() -> None:
    """The README's DeepSeek-R1 journey and its recommend paragraph say what the planner answers."""
    from datetime import UTC, datetime
    from pathlib import Path

    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import recommend

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    tp8 = plan(R1, REQUEST, layout=Layout(gpus=8, tp=8), gpu=H200)
    chosen = plan(R1, REQUEST, layout=Layout(gpus=8), gpu=H200)
    assert f"(TP 8: {tp8.per_gpu.total_bytes / 2**30:.0f} GiB a GPU)" in readme
    assert f"({chosen.per_gpu.total_bytes / 2**30:.0f} GiB a GPU;" in readme
    catalog = load_catalog()
    spec = SweepSpec(workload=Workload(task="inference", concurrency=512), prompt_tokens=1000, output_tokens=1000)
    rec = recommend(R1, spec, catalog, "1month", datetime(2026, 12, 5, tzinfo=UTC),
                    offerings=[catalog.offering("h200-8x-bm")], top=3)
    best = next(r for r in rec.results if r.servers == 1)
    c = best.config
    assert (f"TP {c['tp']} x DP {c['dp']} x EP {c['ep']}, {c['decode_tokens_per_s_total']:,.0f} tok/s and "
            f"${best.usd_per_million_output_tokens:,} a million tokens") in readme
    split = plan(R1, REQUEST, layout=Layout(gpus=8, tp=4, pp=2), gpu=H200)
    assert f"{plan_performance(split)['output_tokens_per_s']:,.0f} tok/s" in readme
    # the serving bullet: recommend's row beside the layout plan keeps within the margin, and the line naming it
    kept = plan_performance(chosen)["output_tokens_per_s"]
    row = plan_performance(plan(R1, REQUEST, layout=Layout(gpus=8, tp=c["tp"], dp=c["dp"], ep=c["ep"]),
                                gpu=H200))["output_tokens_per_s"]
    assert (f"its row is TP {c['tp']} x DP {c['dp']} x EP {c['ep']} ({row:,.0f} tok/s) where `plan` keeps TP 1 x DP 8 "
            f"x EP 8 ({kept:,.0f} tok/s)") in readme
    line = next(a for a in chosen.assumptions if a.startswith("Layout chosen on the 8 GPUs asked"))
    assert f"(the fastest, TP {c['tp']}, DP {c['dp']}, EP {c['ep']}, by {row / kept - 1:.1%} at {row:,.0f};" in line
    assert f"faster layout and by how much ({row / kept - 1:.1%})" in readme
