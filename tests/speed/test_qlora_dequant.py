"""QLoRA's dequantization (``speed.dequant``): each 4-bit weight read and written as 16 bits before every pass that
multiplies by it (bitsandbytes' ``MatMul4Bit`` forward and backward, NeMo's ``LinearNF4`` likewise), and answer.ai's
FSDP-QLoRA runs (AnswerDotAI/fsdp_qlora ``benchmarks_03_2024.md`` at 23fafdfb, "Recommendations for Different Hardware
Configurations"; set ``answerai-fsdp-qlora`` of ``src/anchorgpu/planner/speed/data/measured_runs.json``, held out).
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.dequant import QLORA_BASE_FORMAT, dequant_bytes_per_layer, dequant_passes
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.flops import TrainKind
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

ROWS = {run.id: run for run in load_runs() if run.row.get("set") == "answerai-fsdp-qlora"}
# the tables' GPUs, batch a GPU and seconds for 1,024 samples of 2,048 tokens: Llama-2 70B QLoRA ("Recommendations for
# Different Hardware Configurations") and Llama-2 7B on the dual-4090 workstation ("Case Study: A Dual 4090")
TABLE = {"AA-70B-A100-2": ("a100-40gb-sxm", 2, 1, 3277), "AA-70B-A100-4": ("a100-40gb-sxm", 4, 4, 1266),
         "AA-70B-A100-8": ("a100-40gb-sxm", 8, 4, 672), "AA-70B-H100-4": ("h100-sxm", 4, 8, 667),
         "AA-7B-4090-QLORA-FSDP": ("rtx-4090", 2, 10, 466), "AA-7B-4090-QLORA-DDP": ("rtx-4090", 2, 8, 450),
         "AA-7B-4090-LORA-DDP": ("rtx-4090", 2, 4, 437), "AA-7B-4090-LORA-FSDP": ("rtx-4090", 2, 6, 481)}
QLORA_ROWS = {run_id: run for run_id, run in ROWS.items() if run.row["kind"] == "qlora"}


def _step(kind: TrainKind, *, gpu: str = "a100-40gb-sxm", micro_batch: int = 1, recompute: str = "full",
          stack: str = "pytorch") -> float:
    model = load_model("llama-2-70b")
    st = training_step(model, get_gpu(gpu), TrainLayout(gpus=4, dp=4, zero=3), seq_tokens=2048,
                       micro_batch=micro_batch, global_batch_tokens=4 * micro_batch * 2048 * 2,
                       recompute=recompute, kind=kind, train_stack=stack)  # type: ignore[arg-type]
    return st.breakdown_s["compute"]


@pytest.mark.parametrize("stack", ["pytorch", "megatron"])
@pytest.mark.parametrize("recompute", ["full", "none"])
def test_qlora_adds_exactly_the_dequantization_traffic_to_loras_step(recompute: str, stack: str) -> None:
    """Same layout, LoRA's products: the difference is the layers' dequantized bytes over the copy bandwidth."""
    gpu = get_gpu("a100-40gb-sxm")
    model = load_model("llama-2-70b")
    expected = (2 * model.num_layers * dequant_bytes_per_layer(model) * dequant_passes(recompute)  # type: ignore[arg-type]
                / (gpu.memory_bandwidth_bytes_per_s * calibration().stack(gpu).decode_mbu))  # 2 micro-batches
    extra = _step("qlora", recompute=recompute, stack=stack) - _step("lora", recompute=recompute, stack=stack)
    assert extra == pytest.approx(expected, rel=1e-9)


def test_the_bytes_are_the_packed_read_and_the_16_bit_write() -> None:
    model = load_model("llama-2-7b")  # h 4,096, MLP 11,008, 32 layers: 4 x 4096^2 + 3 x 4096 x 11008 weights a layer
    weights = 4 * 4096 * 4096 + 3 * 4096 * 11008
    bits = get_format(QLORA_BASE_FORMAT).linear_bits
    assert dequant_bytes_per_layer(model) == pytest.approx(weights * (bits / 8 + 2))
    assert dequant_passes("full") / dequant_passes("none") == 1.5  # the recomputed forward dequantizes again


def test_the_share_falls_with_the_micro_batch() -> None:
    """A fixed traffic a micro-batch: about 7% of a 2,048-token micro-batch's time on an A100 40GB, under 2% at 4."""
    share_1 = _step("qlora") / _step("lora") - 1
    share_4 = _step("qlora", micro_batch=4) / _step("lora", micro_batch=4) - 1
    assert 0.04 < share_1 < 0.12 and share_4 == pytest.approx(share_1 / 4, rel=0.1)


def test_plan_times_qlora_slower_than_lora_at_the_same_layout() -> None:
    model = load_model("llama-2-70b")
    lay = Layout(gpus=8, tp=1, pp=1, dp=8, zero=3)
    compute = {}
    for task in ("qlora", "lora"):
        w = Workload(task=task, seq_tokens=2048, micro_batch=1, recompute="full", train_stack="pytorch")
        p = plan(model, w, gpu=get_gpu("h100-sxm"), layout=lay, choose_layout=False)
        compute[task] = plan_performance(p)["step_time_breakdown_s"]["compute"]
    assert compute["qlora"] > compute["lora"]


def test_the_answerai_rows_are_the_tables_held_out() -> None:
    assert "answerai-fsdp-qlora" in calibrate.SETS
    assert set(ROWS) == set(TABLE)
    for run_id, (gpu, gpus, batch, seconds) in TABLE.items():
        run = ROWS[run_id]
        r = run.row
        assert run.role == "holdout" and r["train_stack"] == "pytorch" and r["fsdp1"]
        assert r["kind"] == ("lora" if "-LORA-" in run_id else "qlora")
        assert r["zero"] == (0 if run_id.endswith("-DDP") else 3)
        assert run.source.startswith("AnswerDotAI/fsdp_qlora benchmarks_03_2024.md (commit 23fafdfb")
        assert (r["gpu"], r["gpus"], r["micro_batch"]) == (gpu, gpus, batch)
        assert run.value == pytest.approx(1024 * 2048 / seconds / gpus, abs=0.05)


def test_the_dequantization_brings_the_batch_1_row_closest() -> None:
    """AA-70B-A100-2 (batch 1, the source's 3,277 s): the term moves it most (about 7%), towards the measured figure,
    as it does the other A100 rows (batch 4, under 2%); the RTX 4090 rows of Llama-2 7B at batch 8-10, which run
    faster than planned, move under 1% away from theirs."""
    moved = {}
    for run_id, run in QLORA_ROWS.items():
        lora = type(run)(**{**{f: getattr(run, f) for f in run.__slots__}, "row": {**run.row, "kind": "lora"}})
        moved[run_id] = predict(lora) / predict(run)
        assert moved[run_id] > 1.0
        if run_id.startswith("AA-70B-A100"):
            assert abs(predict(run) - run.value) < abs(predict(lora) - run.value)
    assert max(moved, key=moved.__getitem__) == "AA-70B-A100-2" and moved["AA-70B-A100-2"] > 1.05
    assert all(moved[run_id] < 1.01 for run_id in moved if "4090" in run_id)
