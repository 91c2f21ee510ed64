"""Where FP8 and FP4 TRAINING run is a sourced fact of the GPU data (gpus.toml ``training_stacks``, sources S32 and
S33), apart from the FP8/FP4 units themselves: plan refuses a precision no framework trains in on a GPU (one line,
exit 2, HTTP 422) and recommend leaves that GPU's offerings out with the reason.

Sources (sources.toml):
- S32, NVIDIA/TransformerEngine@001597e9 transformer_engine/pytorch/quantization.py: FP8 recipes on compute capability
  8.9+ (Ada with cuBLASLt 12.1.3), NVFP4BlockScaling on 10.0+ (sm_120 passes the check; its default Hadamard and
  stochastic-rounding kernels crashed there: NVIDIA/TransformerEngine#2956, #2968, #3062).
- S33, ROCm/TransformerEngine@030b7921 transformer_engine/pytorch/quantization.py: FP8 on gfx942/gfx950,
  MXFP4BlockScaling on gfx950 only (check_mxfp4_support), run forward and backward in
  tests/pytorch/mxfp4/test_mxfp4_module_exact.py@2b5a7ef0. Its README (@01b4205e) lists FP8/MXFP8 only.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.cli import main
from anchorgpu.errors import DataFileError, InvalidWorkload
from anchorgpu.hardware import get_gpu, list_gpus, parse_gpus
from anchorgpu.hardware.registry import gpu_index, source_descriptions
from anchorgpu.planner import Workload, plan
from anchorgpu.recommend.eligibility import able_to_run
from anchorgpu.units import parse_term

FP4_TRAIN = Workload(task="train", seq_tokens=4096, train_precision="fp4")


def test_every_shipped_gpu_with_fp8_or_fp4_units_says_which_framework_trains_in_them_with_a_source() -> None:
    for gpu in list_gpus():
        units = sorted(p for p in ("fp8", "fp4") if gpu.computes_in(p))
        assert sorted(gpu.training_stacks) == units, gpu.name
        assert (not units) or set(gpu.training_sources) <= {"S32", "S33"} and gpu.training_sources, gpu.name


def test_fp4_training_runs_in_transformer_engine_on_blackwell_and_rocm_te_mxfp4_on_the_mi355x() -> None:
    """S32 (NVFP4 needs compute capability 10.0+) and S33 (MXFP4 on gfx950 only): every GPU with FP4 units has one."""
    for name in ("b200", "b300", "gb200", "gb300"):
        assert get_gpu(name).training_stack("fp4") == "Transformer Engine"
    assert get_gpu("rtx-pro-6000").training_stack("fp4").startswith("Transformer Engine (NVFP4BlockScaling with the "
                                                                    "Hadamard transform and stochastic rounding off")
    mi355x = get_gpu("mi355x")
    assert mi355x.rocm_gfx_target == "gfx950" and mi355x.training_stack("fp4") == "ROCm Transformer Engine (MXFP4BlockScaling)"
    assert "check_mxfp4_support" in source_descriptions(["S33"])["S33"]
    for name in ("mi300x", "mi325x", "h100", "l40s"):  # no FP4 units: refused for that, as before
        assert get_gpu(name).training_refusal("fp4") == f"--train-precision fp4: {get_gpu(name).name} has no FP4 tensor cores"


def test_fp8_training_runs_on_ada_and_on_the_mi300x_mi325x_and_mi355x() -> None:
    """S32: FP8 recipes from compute capability 8.9 (L40S, L4, RTX 4090); S33: ROCm TE's FP8 on gfx942 and gfx950."""
    for name in ("l40s", "l4", "rtx-4090", "h100", "b200", "rtx-5090"):
        assert get_gpu(name).training_stack("fp8") == "Transformer Engine" and get_gpu(name).training_refusal("fp8") is None
    for name in ("mi300x", "mi325x", "mi355x"):
        assert get_gpu(name).training_stack("fp8") == "ROCm Transformer Engine"
    assert get_gpu("a100").training_refusal("fp8") == "--train-precision fp8: a100-80gb-sxm has no FP8 tensor cores"


def test_the_fp4_assumption_names_the_stack_the_gpu_trains_in() -> None:
    model = load_model("llama-3.1-8b")
    amd = " ".join(plan(model, FP4_TRAIN, gpu=get_gpu("mi355x"), suggest=False).assumptions)
    nvidia = " ".join(plan(model, FP4_TRAIN, gpu=get_gpu("b200"), suggest=False).assumptions)
    assert "FP4 training as ROCm Transformer Engine (MXFP4BlockScaling) runs it" in amd
    assert "FP4 training as Transformer Engine runs it" in nvidia


@pytest.fixture
def untrained_mi355x(monkeypatch: pytest.MonkeyPatch):
    """The shipped index with the MI355X's FP4 training stack set to false (FP4 units, no framework), as the data
    would say for a GPU that serves MXFP4 but that no training framework trains in FP4."""
    index = gpu_index()
    real = index.find("mi355x")
    fake = replace(real, training_stacks={"fp8": "ROCm Transformer Engine", "fp4": None})
    for table in (index._by_key, index._by_name):
        for key, gpu in list(table.items()):
            if gpu is real:
                monkeypatch.setitem(table, key, fake)
    monkeypatch.setattr(index, "gpus", tuple(fake if g is real else g for g in index.gpus))
    return fake


def test_plan_refuses_fp4_training_where_no_framework_runs_it_in_one_line(untrained_mi355x, capsys) -> None:
    with pytest.raises(InvalidWorkload, match="no training framework runs FP4 training on mi355x"):
        plan(load_model("llama-3.1-8b"), FP4_TRAIN, gpu=untrained_mi355x, suggest=False)
    code = main(["plan", "llama-3.1-8b", "--gpu", "mi355x", "--task", "train", "--train-precision", "fp4"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "--train-precision fp4: no training framework runs FP4 training on mi355x" in err
    # serving is untouched: the MI355X still serves MXFP4 weights at the FP4 rate
    assert untrained_mi355x.computes_in("fp4") and "MXFP4" in untrained_mi355x.fp4_formats


def test_recommend_leaves_out_offerings_whose_gpu_no_framework_trains_in_fp4(untrained_mi355x, capsys) -> None:
    code = main(["recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp4", "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["results"]
    assert not any(r["gpu"] == "mi355x" for r in answer["results"])
    # the reason each one is left out with (the JSON lists the ten cheapest rejections; the MI355X's are dearer)
    catalog = load_catalog()
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    able, rejected = able_to_run(catalog.offerings, FP4_TRAIN, catalog, parse_term("1week"), now)
    assert not any(o.gpu == "mi355x" for o in able) and any(o.gpu == "b200" for o in able)
    mi355x = [r for r in rejected if r.offering.startswith("mi355x")]
    assert mi355x and all("no training framework runs FP4 training on mi355x" in r.reason for r in mi355x)
    code = main(["recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp4", "--gpu", "mi355x"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "no offering considered has a GPU where a training framework runs FP4" in err


def test_the_api_answers_422_for_fp4_training_where_no_framework_runs_it(untrained_mi355x) -> None:
    from fastapi.testclient import TestClient

    from anchorgpu.api import create_app

    reply = TestClient(create_app()).post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "mi355x", "task": "train",
                                                            "train_precision": "fp4"})
    assert reply.status_code == 422 and reply.headers["content-type"].startswith("application/problem+json")
    assert "no training framework runs FP4 training on mi355x" in reply.json()["detail"]


ROW = """
[[gpu]]
name = "t-gpu"
display_name = "T GPU"
aliases = []
vendor = "NVIDIA"
architecture = "T"
form_factor = "SXM"
memory_headline = "80 GB"
memory_physical = 80
memory_usable = 80
memory_unit = "GiB"
memory_type = "HBM3"
memory_bandwidth_tb_per_s = 3
fp8_hardware = true
fp4_hardware = true
fp4_formats = ["NVFP4"]
STACKS
interconnect = "NVLink"
scaleup_domain_gpus = 8
pcie_gen = "Gen5 x16"
compute_capability = "10.0"
partitioning = "none"
sources = ["S1"]
notes = ""
[gpu.peaks_tflops]
fp64_vector = 1
fp64_tensor = 1
fp32 = 1
tf32 = 1
bf16 = 1
fp8 = 2
int8 = 2
fp4 = 4
"""


def _row(stacks: str):
    return parse_gpus("schema_version = 1\n" + ROW.replace("STACKS", stacks), file="t.toml", sources={"S1": "x"})


def test_the_loader_reads_false_as_no_framework_and_checks_the_units_and_sources() -> None:
    (gpu,) = _row('training_stacks = { fp8 = "Transformer Engine", fp4 = false }\ntraining_sources = ["S1"]')
    assert gpu.training_stacks == {"fp8": "Transformer Engine", "fp4": None}
    assert gpu.training_refusal("fp4").startswith("--train-precision fp4: no training framework runs FP4 training on t-gpu")
    with pytest.raises(DataFileError, match="must list exactly the low-precision units the GPU has"):
        _row('training_stacks = { fp8 = "Transformer Engine" }\ntraining_sources = ["S1"]')
    with pytest.raises(DataFileError, match="unknown source key"):
        _row('training_stacks = { fp8 = "Transformer Engine", fp4 = false }\ntraining_sources = ["S9"]')
    with pytest.raises(DataFileError, match="training_sources must name"):
        _row('training_stacks = { fp8 = "Transformer Engine", fp4 = false }')
