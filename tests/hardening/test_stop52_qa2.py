"""The four items stop 52's QA pass left (benchmarks/hardening/stop52_qa.md, "Left (with why)"), each decided:
1. ``--tp-overlap`` with TP 1 is refused as ``--sequence-parallel`` with TP 1 is, and the layout chooser tries TP 2
   and up for it; 2. the "MoE kernel:" line says why TensorRT-LLM runs CUTLASS where AUTO asked for TRTLLM-gen;
3. counts in refusals carry thousands separators; 4. ZeRO with one data-parallel rank was already warned about
(``zero_without_data_parallel``): pinned here, nothing changed. Items 1-3 fail on the main they branched from
(ce82c344)."""

from __future__ import annotations

import pytest

from anchorgpu.errors import InvalidWorkload
from anchorgpu.units import quotable_term
from cli_runner import run_json
from hardening.conftest import Served, cli_refusal, problem_of

TRAIN_8B = ("plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train")


# 1. --tp-overlap with TP 1 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", [("--tp", "1"), ("--gpus", "1"), ("--gpus", "4", "--tp", "1", "--pp", "2")])
def test_tp_overlap_with_tp_1_is_refused_as_sequence_parallel_is(capsys: pytest.CaptureFixture[str],
                                                                layout: tuple[str, ...]) -> None:
    """``--tp-overlap --tp 1`` was planned with the switch doing nothing, while ``--sequence-parallel --tp 1`` is
    refused (sequence_parallel.resolve_sequence_parallel), as are the other switches with nothing to act on
    (``--virtual-stages`` with PP 1, ``--ep-overlap`` on a dense model). Now one line naming TP 1, exit 2."""
    err = cli_refusal(capsys, *TRAIN_8B, "--tp-overlap", *layout)
    assert "--tp-overlap with TP 1" in err and "give --tp 2 or more" in err, err


def test_the_api_refuses_tp_overlap_with_tp_1(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": "train",
                                                           "tp": 1, "tp_overlap": True})
    problem = problem_of(response)
    assert problem["status"] == 422 and "tp_overlap with TP 1" in problem["detail"], problem


@pytest.mark.parametrize("gpus", [(), ("--gpus", "8")])
def test_the_chooser_gives_tp_overlap_tensor_parallelism(capsys: pytest.CaptureFixture[str],
                                                         gpus: tuple[str, ...]) -> None:
    """Without --tp the chooser picked TP 1 x DP 8 on 8 GPUs with --tp-overlap (the switch then idle); as for
    --sequence-parallel (speed.layouts._candidates) it now tries TP 2 and up, and says the switch was kept."""
    doc = run_json(capsys, *TRAIN_8B, "--tp-overlap", *gpus)
    assert doc["layout"]["tp"] >= 2 and doc["layout"]["tp_overlap"] is True, doc["layout"]
    chosen = next(line for line in doc["assumptions"] if line.startswith("Layout chosen"))
    assert "--tp-overlap" in chosen, chosen


def test_tp_overlap_with_tp_2_is_planned(capsys: pytest.CaptureFixture[str]) -> None:
    """Control: with TP 2 the switch is planned as before (passes on both)."""
    doc = run_json(capsys, *TRAIN_8B, "--tp-overlap", "--gpus", "2", "--tp", "2")
    assert doc["layout"]["tp"] == 2 and doc["layout"]["tp_overlap"] is True


# 2. the MoE kernel line of gpt-oss in BF16 on Blackwell -------------------------------------------------------------


def _moe_line(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    doc = run_json(capsys, "plan", "gpt-oss-120b", "--gpu", "b200", "--engine", "trtllm", *extra)
    return next(line for line in doc["performance"]["assumptions"] if line.startswith("MoE kernel:"))


def test_the_moe_kernel_line_says_why_trtllm_falls_back_to_cutlass(capsys: pytest.CaptureFixture[str]) -> None:
    """AUTO picks TRTLLM for gpt-oss on Blackwell (model_config.resolve_moe_backend); with BF16 weights TensorRT-LLM's
    get_moe_cls (tensorrt_llm/_torch/modules/fused_moe/create_moe.py @ NVIDIA/TensorRT-LLM 01f8de5) logs
    "TRTLLMGenFusedMoE only supports fp8_block_scales, nvfp4, w4a16_mxfp4, ... Using CutlassFusedMoE instead". The
    line called CUTLASS "its AUTO choice" without that step."""
    line = _moe_line(capsys, "--weights", "bf16")
    assert "CUTLASS kernels (CutlassFusedMoE)" in line, line
    assert "take no bf16 weights" in line and "falls back to CUTLASS" in line, line
    assert "\n" not in line


def test_the_moe_kernel_line_of_mxfp4_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    """Control: gpt-oss in its MXFP4 runs TRTLLM-gen and says no fallback (passes on both)."""
    line = _moe_line(capsys)
    assert "TRTLLM-gen kernels (TRTLLMGenFusedMoE), its AUTO choice" in line and "falls back" not in line, line


# 3. thousands separators in refusals ----------------------------------------------------------------------------


def test_the_term_refusal_has_a_thousands_separator() -> None:
    with pytest.raises(Exception, match=r"at most 87,600 hours \(10 years\)"):
        quotable_term("1000000month")


def test_the_quantity_refusal_has_a_thousands_separator(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "quote", "h100-sxm-1x-vm", "--quantity", "5000", "--term", "1month")
    assert "quantity 5000: a whole number of servers from 1 to 1,000" in err, err


def test_the_stock_refusal_has_a_thousands_separator() -> None:
    from anchorgpu.allocations.errors import InvalidQuantity
    from anchorgpu.allocations.stock import set_stock

    with pytest.raises(InvalidQuantity, match="from 0 to 100,000"):
        set_stock(None, offering="h100-sxm-1x-vm", servers=100_001, clock=None)  # type: ignore[arg-type]


def test_a_layout_that_is_not_its_gpus_names_the_count_with_a_separator() -> None:
    from anchorgpu.architectures import load_model
    from anchorgpu.planner.speed.train_layout import TrainLayout, _check

    lay = TrainLayout(gpus=1024, tp=8, pp=1, cp=1, dp=64)
    with pytest.raises(InvalidWorkload, match="= 512 is not the 1,024 GPUs"):
        _check(load_model("llama-3.1-8b"), lay, 4096)


# 4. ZeRO / FSDP with one data-parallel rank -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", [("--zero", "1"), ("--zero", "2"), ("--zero", "1", "--gpus", "2", "--pp", "2"),
                                    ("--fsdp", "--gpus", "2", "--tp", "2")])
def test_zero_with_one_data_parallel_rank_says_it_shards_nothing(capsys: pytest.CaptureFixture[str],
                                                                 layout: tuple[str, ...]) -> None:
    """Already so on main (checks._layout_warnings, code zero_without_data_parallel, registered in
    planner/warnings.py): pinned, not changed. ``--zero 1`` on 8B without --gpus is PP 2 x DP 1."""
    doc = run_json(capsys, *TRAIN_8B, *layout)
    assert doc["layout"]["dp"] * doc["layout"]["cp"] == 1, doc["layout"]
    said = {w["code"]: w["message"] for w in doc["warnings"]}
    assert "shards nothing" in said.get("zero_without_data_parallel", ""), said


def test_the_api_warns_that_zero_with_one_data_parallel_rank_shards_nothing(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": "train",
                                                           "zero": 1})
    assert response.status_code == 200, response.text[:300]
    assert "zero_without_data_parallel" in {w["code"] for w in response.json()["warnings"]}
