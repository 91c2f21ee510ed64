"""The bound the chooser's search past its first layout reads before it times a layout's bound at micro-batch 8
(:func:`~anchorgpu.planner.speed.rung_bound.rung_tokens_per_s_bound`): never below that bound, over a sample of real
layouts (dense, mixtures of experts with their expert falloff, MLA, context parallelism whose exposed ring shrinks
with more tokens, QLoRA's dequantization, FP8, TP and EP overlap, the PyTorch stack); and the chooser that reads it
chooses what the chooser without it chooses (benchmarks/hardening/stop58_chooserfast.md)."""

from __future__ import annotations

import math

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.inputs import Recompute
from anchorgpu.planner.speed import rung_bound
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.flops import TrainKind
from anchorgpu.planner.speed.rung_bound import growth_of, rung_tokens_per_s_bound
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import tokens_per_s_bound

SPLITS = [  # (tp, cp, pp, ep, virtual stages, tp and EP overlap) of 64 GPUs
    (1, 1, 1, 1, 1, False),
    (1, 1, 1, 8, 1, False),
    (2, 1, 2, 8, 1, True),
    (1, 1, 2, 8, 2, False),
    (4, 1, 4, 1, 1, False),
    (8, 1, 1, 8, 1, True),
    (1, 1, 1, 64, 1, False),
    (2, 2, 1, 4, 1, False),
    (1, 4, 2, 1, 1, False),
    (1, 2, 1, 16, 1, False),
]
CASES = [  # (model, GPU, kind, precision, stack)
    ("qwen3-30b-a3b", "h100", "full", "bf16", "megatron"),
    ("qwen3-235b-a22b", "h100", "full", "bf16", "megatron"),
    ("deepseek-v3", "h100", "full", "fp8", "megatron"),
    ("gpt-oss-120b", "b200", "full", "bf16", "megatron"),
    ("mixtral-8x7b-v0.1", "l40s", "lora", "bf16", "pytorch"),
    ("llama-3.1-70b", "h100", "full", "bf16", "megatron"),
    ("llama-3.1-8b", "mi300x", "qlora", "bf16", "pytorch"),
    ("llama-3.1-8b", "a100-40gb-sxm", "full", "bf16", "pytorch"),
]


def _bounds(
    model: ModelSpec,
    gpu: str,
    kind: TrainKind,
    precision: str,
    stack: str,
    recompute: Recompute,
    seq: int,
    lay: TrainLayout,
    low: int,
    rung: int,
    base_format: str | None = None,
) -> tuple[float, float] | None:
    spec, cal = get_gpu(gpu), calibration()
    batch = 1024 * seq
    common = dict(
        seq_tokens=seq,
        global_batch_tokens=batch,
        recompute=recompute,
        kind=kind,
        precision=precision,
        train_stack=stack,
    )
    if base_format is not None:
        common["base_format"] = base_format
    try:
        exact = tokens_per_s_bound(model, spec, lay, micro_batch=rung, cal=cal, **common)  # type: ignore[arg-type]
    except Exception:  # a layout the step refuses (CP past the sequence, EP no stage holds, chunks)
        return None
    return exact, rung_tokens_per_s_bound(model, spec, lay, micro_batch=low, rung=rung, cal=cal, **common)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "gpu", "kind", "precision", "stack"), CASES)
@pytest.mark.parametrize("seq", [1024, 32768])
def test_the_rung_bound_is_never_below_the_bound_at_the_rung(
    name: str, gpu: str, kind: TrainKind, precision: str, stack: str, seq: int
) -> None:
    model = load_model(name)
    assert isinstance(model, ModelSpec)
    met = 0
    for tp, cp, pp, ep, v, overlap in SPLITS:
        if model.moe is None and ep > 1 or model.moe is not None and model.moe.num_experts % ep:
            continue
        lay = TrainLayout(
            gpus=64,
            tp=tp,
            cp=cp,
            pp=pp,
            dp=64 // (tp * cp * pp),
            ep=ep,
            virtual_stages=v,
            tp_overlap=overlap,
            ep_overlap=overlap,
        )
        for recompute in ("none", "selective", "full"):
            for low, rung in ((4, 8), (1, 2), (1, 4), (2, 8), (1, 8), (2, 4)):
                got = _bounds(model, gpu, kind, precision, stack, recompute, seq, lay, low, rung)
                if got is None:
                    continue
                exact, up = got
                assert exact <= up, (lay, recompute, low, rung)
                assert up < rung / low * exact * (1.0 + 1e-6)  # not looser than the doubling it replaces
                met += 1
    assert met >= 24  # the sample reaches a good part of the splits


@pytest.mark.parametrize("base_format", ["nf4", "int8"])
def test_a_qlora_base_in_another_format_is_bounded_at_its_own_bits(base_format: str) -> None:
    """QLoRA dequantizes the plan's own base format (stop58_leftovers.md item 2): the rung bound reads the same
    format, so a base wider than nf4-dq's 4.127 bits (int8) or narrower (nf4) is bounded by its own dequantization."""
    model = load_model("llama-3.1-8b")
    assert isinstance(model, ModelSpec)
    lay = TrainLayout(gpus=64, tp=1, pp=1, dp=64)
    met = 0
    for recompute in ("none", "full"):
        for low, rung in ((4, 8), (1, 2), (2, 8)):
            got = _bounds(model, "h100", "qlora", "bf16", "pytorch", recompute, 2048, lay, low, rung, base_format)
            assert got is not None
            exact, up = got
            assert exact <= up < rung / low * exact * (1.0 + 1e-6), (recompute, low, rung)
            met += 1
    assert met == 6
    kept = {f: growth_of(model, get_gpu("h100"), lay, seq_tokens=2048, micro_batch=4, cal=calibration(), kind="qlora",
                         train_stack="pytorch", base_format=f).kept_s for f in (base_format, "nf4-dq")}
    assert kept[base_format] > kept["nf4-dq"]  # read at the format's own bits (nf4 4.5, int8 8; the default 4.127)


CHOSEN = [  # (model, GPUs, GPU, seq): searches whose layouts climb past micro-batch 4 (stop58_widen.md)
    ("qwen3-235b-a22b", 32, "b200", 2048),
    ("qwen3-30b-a3b", 64, "h100", 2048),
    ("qwen3-30b-a3b", 8, "b200", 4096),
    ("deepseek-v2-lite", 64, "l40s", 4096),
    ("llama-3.1-70b", 512, "h100", 4096),
    ("mixtral-8x7b-v0.1", 16, "a100-40gb-sxm", 4096),
]


@pytest.mark.parametrize(("name", "gpus", "gpu", "seq"), CHOSEN)
def test_the_chooser_chooses_as_without_the_rung_bound(
    name: str, gpus: int, gpu: str, seq: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The filter only saves work: with it made useless (every layout passes it) the same plan comes out."""
    model, spec, work = load_model(name), get_gpu(gpu), Workload(task="train", seq_tokens=seq)

    def answer() -> tuple[object, ...]:
        p = plan(model, work, layout=Layout(gpus=gpus), gpu=spec)
        return p.layout, p.workload, p.assumptions  # the layout chosen, its knobs, the sentence that says why

    with_it = answer()
    monkeypatch.setattr(rung_bound, "rung_bound_of", lambda *a, **k: math.inf)
    assert answer() == with_it
