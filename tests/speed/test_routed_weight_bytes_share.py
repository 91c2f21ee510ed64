"""A mixture of experts' serving step scales the routed experts' share of the weight BYTES a GPU reads by the experts
its tokens touch; that share was the experts' share of the PARAMETERS, which is the same only where every part is
stored alike. gpt-oss-120b ships its experts in MXFP4 (4.25 bits, 32 FP4 values and an 8-bit scale; padded from 2,880
to 3,072 wide by vLLM's MXFP4 MoE kernels: formats.WEIGHT_FORMATS["mxfp4"]) beside BF16 attention, embeddings and
head (OpenAI model card): 0.981 of its parameters but 65.0 of its 69.3 GB, 0.937 of the bytes
(benchmarks/trtllm_gptoss_findings.md, item (3) of the DEP2 note). At small batch the 4.3 GB of dense weights are
read whole every step, not scaled down with the experts. Of what a step reads, the 16-bit token embedding (201,088 x
2,880, 1.158 GB, untied) is not: a lookup gathers its rows (speed.lookup_tables), so the experts are 64.98 of the
68.15 GB a step streams, 0.953."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.experts import routed_weight_bytes_share_per_gpu
from anchorgpu.planner.speed.step_constants import _constants
from anchorgpu.planner.weight_parts import model_param_parts, model_weight_parts

GPT_OSS = load_model("gpt-oss-120b")
MXFP4 = format_for_model(GPT_OSS, "mxfp4")


def test_gpt_oss_120b_mxfp4_experts_are_0_953_of_the_bytes_read_and_0_986_of_the_parameters_read() -> None:
    params, stored = model_param_parts(GPT_OSS), model_weight_parts(GPT_OSS, MXFP4)
    assert params.experts / params.total == pytest.approx(0.981, abs=5e-4)
    assert stored.experts / 1e9 == pytest.approx(64.98, abs=0.01) and stored.total / 1e9 == pytest.approx(69.31, abs=0.01)
    assert stored.embed / 1e9 == pytest.approx(1.158, abs=5e-4)  # 201,088 x 2,880 x 2 bytes, gathered, not streamed
    for tp in (1, 2, 8):  # the experts split as the rest (TP, or EP as wide as TP): the whole model's share
        assert routed_weight_bytes_share_per_gpu(GPT_OSS, MXFP4, tp=tp, ep=1) == pytest.approx(0.9534, abs=5e-4)
    # stored in BF16 every part takes two bytes a parameter: the byte share is the share of the parameters read
    bf16 = format_for_model(GPT_OSS, "bf16")
    assert routed_weight_bytes_share_per_gpu(GPT_OSS, bf16, tp=1, ep=1) == pytest.approx(
        params.experts / (params.total - params.embed))


def test_a_plans_serving_step_reads_the_experts_byte_share() -> None:
    """gpt-oss-120b as shipped (MXFP4) on two H100s: the step constants' routed share is the share of the bytes read,
    0.953, and the setup takes the untied table's half a GPU (579 M parameters x 2 bytes / 2) off what it reads."""
    gpu = get_gpu("h100-sxm")
    p = plan(GPT_OSS, Workload(task="inference", concurrency=4), precision=PrecisionPlan(weights="mxfp4"),
             layout=Layout(gpus=2, tp=2), gpu=gpu, suggest=False)
    setup = serving_setup(p, prompt_tokens=1024, output_tokens=1024)
    assert setup.weights_format == "mxfp4"
    routed = _constants(GPT_OSS, gpu, setup, calibration(), False).routed_share
    assert routed == pytest.approx(0.9534, abs=5e-4)
    assert setup.lookup_table_bytes_per_gpu == 579_133_440.0
    # the streamed bytes times the share are the experts a GPU holds (half of them at TP 2), to the small per-layer
    # tensors every GPU holds whole (the share splits them with TP: 0.12% here)
    streamed = setup.weights_bytes_per_gpu - setup.lookup_table_bytes_per_gpu
    assert streamed * routed == pytest.approx(model_weight_parts(GPT_OSS, MXFP4).experts / 2, rel=2e-3)
