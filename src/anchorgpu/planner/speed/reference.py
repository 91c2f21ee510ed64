"""Reference workloads for ``gpus compare``: the calibrated model's tokens/s on each GPU, with bands. Pure.

A datasheet ratio (bandwidth, dense BF16) is what a roofline would scale with; what a team gets also
depends on per-step costs, the efficiency each software stack reaches, the link and the layout that fits.
So ``gpus compare`` plans the same reference workloads on both GPUs, with the same planner and calibration
as ``anchorgpu plan``, and compares the predictions:

- ``serve_8b_output_tokens_per_s``: Llama-3.1-8B, BF16 weights, one GPU, 1,000 prompt + 1,000 output
  tokens per request, output tokens/s at saturation: as many requests at once as the GPU's memory (their KV cache)
  and the engine's sequence cap hold (``max_output_tokens_per_s``: what offline benchmarks such as TensorRT-LLM's and vLLM's
  measure);
- ``serve_8b_tokens_per_s_per_user``: the same, one request at a time (decode tokens/s a user sees);
- ``train_8b_tokens_per_s_per_gpu``: Llama-3.1-8B training on 8 GPUs, 4,096-token sequences, BF16, the
  default 4M-token global batch, the layout chosen for the user (the fastest that fits);
- ``train_70b_tokens_per_s_per_gpu``: Llama-3.1-70B, the same on 64 GPUs (eight 8-GPU servers).

Each figure has the roofline ceiling of its layout beside it (``ceiling``: the datasheet's peaks with no
efficiency, a bound rather than a prediction). Each GPU's figures are computed once per process (they are pure functions of the GPU data and the
calibration) and cached by GPU name.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from anchorgpu.errors import AnchorError
from anchorgpu.hardware.predicted import PredictedSpeed, SpeedFigure, band_of_ratio
from anchorgpu.hardware.spec import GpuSpec

__all__ = ["REFERENCE_WORKLOADS", "ReferenceWorkload", "predicted_speeds", "reference_speeds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReferenceWorkload:
    metric: str
    label: str
    workload: str
    unit: str
    datasheet_metric: str
    model: str
    task: str  # "inference" | "train"
    gpus: int


REFERENCE_WORKLOADS: tuple[ReferenceWorkload, ...] = (
    ReferenceWorkload(
        metric="serve_8b_output_tokens_per_s", label="serving throughput",
        workload="Llama-3.1-8B, BF16, 1 GPU, 1,000 in / 1,000 out tokens, at saturation (as many requests at once as the GPU's memory and the engine's sequence cap hold)", unit="output tokens/s",
        datasheet_metric="memory_bandwidth_bytes_per_s", model="llama-3.1-8b", task="inference", gpus=1),
    ReferenceWorkload(
        metric="serve_8b_tokens_per_s_per_user", label="decode speed per user",
        workload="Llama-3.1-8B, BF16, 1 GPU, one request", unit="tokens/s",
        datasheet_metric="memory_bandwidth_bytes_per_s", model="llama-3.1-8b", task="inference", gpus=1),
    ReferenceWorkload(
        metric="train_8b_tokens_per_s_per_gpu", label="8B training",
        workload="Llama-3.1-8B, 8 GPUs, 4k sequences, BF16, 4M-token batch, chosen layout",
        unit="tokens/s per GPU", datasheet_metric="bf16_flops_per_s", model="llama-3.1-8b", task="train", gpus=8),
    ReferenceWorkload(
        metric="train_70b_tokens_per_s_per_gpu", label="70B training",
        workload="Llama-3.1-70B, 64 GPUs, 4k sequences, BF16, 4M-token batch, chosen layout",
        unit="tokens/s per GPU", datasheet_metric="bf16_flops_per_s", model="llama-3.1-70b", task="train", gpus=64),
)

PROMPT_TOKENS = 1000
OUTPUT_TOKENS = 1000
TRAIN_SEQ_TOKENS = 4096


def _layout_text(lay: object) -> str:
    from anchorgpu.planner.plan import ResolvedLayout

    assert isinstance(lay, ResolvedLayout)
    if lay.gpus == 1:
        return "1 GPU"
    zero = {0: "no sharding", 1: "ZeRO-1", 2: "ZeRO-2", 3: "FSDP"}.get(lay.zero, f"ZeRO-{lay.zero}")
    pp = f"PP {lay.pp}" + (f" (v {lay.virtual_stages})" if lay.virtual_stages > 1 else "")
    return f"TP {lay.tp}, {pp}, CP {lay.cp}, DP {lay.dp}, {zero}"


def _figures(gpu: GpuSpec) -> dict[str, SpeedFigure]:
    from anchorgpu.architectures import load_model
    from anchorgpu.planner.inputs import Layout, Workload
    from anchorgpu.planner.plan import plan
    from anchorgpu.planner.speed.estimate import plan_performance

    out: dict[str, SpeedFigure] = {}
    serve = plan(load_model("llama-3.1-8b"), Workload(task="inference", prompt_tokens=PROMPT_TOKENS,
                                                      output_tokens=OUTPUT_TOKENS, concurrency=1),
                 layout=Layout(gpus=1), gpu=gpu, suggest=False)
    perf = plan_performance(serve) if serve.fits else {}
    for key, name in (("serve_8b_output_tokens_per_s", "max_output_tokens_per_s"),
                      ("serve_8b_tokens_per_s_per_user", "decode_tokens_per_s_per_user")):
        if perf.get(name):
            out[key] = SpeedFigure(value=perf[name], low=perf[f"{name}_low"], high=perf[f"{name}_high"],
                                   ceiling=perf.get(f"{name}_ceiling"), layout="1 GPU",
                                   evidence=perf.get("evidence", {}).get("summary", ""))
        else:
            out[key] = SpeedFigure(value=None, note="does not fit one GPU")
    for ref in REFERENCE_WORKLOADS:
        if ref.task != "train":
            continue
        try:
            trained = plan(load_model(ref.model), Workload(task="train", seq_tokens=TRAIN_SEQ_TOKENS),
                           layout=Layout(gpus=ref.gpus), gpu=gpu, suggest=False)
        except AnchorError as exc:
            out[ref.metric] = SpeedFigure(value=None, note=exc.message)
            continue
        if not trained.fits:
            out[ref.metric] = SpeedFigure(value=None, note=f"no layout fits {ref.gpus} GPUs")
            continue
        t = plan_performance(trained)
        n = trained.layout.gpus
        out[ref.metric] = SpeedFigure(value=t["train_tokens_per_s"] / n, low=t["train_tokens_per_s_low"] / n,
                                      high=t["train_tokens_per_s_high"] / n,
                                      ceiling=t["train_tokens_per_s_ceiling"] / n, layout=_layout_text(trained.layout),
                                      evidence=t.get("evidence", {}).get("summary", ""))
    return out


@lru_cache(maxsize=64)
def _cached(name: str) -> dict[str, SpeedFigure]:
    from anchorgpu.hardware.registry import get_gpu

    return _figures(get_gpu(name))


def reference_speeds(gpu: GpuSpec) -> dict[str, SpeedFigure]:
    """Each reference workload's prediction on ``gpu`` (``value`` None where it does not fit), by metric key.

    GPUs from the shipped data are cached by name; any other spec is planned afresh.
    """
    from anchorgpu.hardware.registry import get_gpu

    try:
        if get_gpu(gpu.name) is gpu:
            return _cached(gpu.name)
    except AnchorError:
        pass
    return _figures(gpu)


def predicted_speeds(a: GpuSpec, b: GpuSpec) -> tuple[PredictedSpeed, ...]:
    """The reference workloads on ``a`` and ``b``: ratios ``a / b`` with bands (for ``compare_gpus``).

    >>> from anchorgpu.hardware import get_gpu
    >>> rows = {r.metric: r for r in predicted_speeds(get_gpu("h200"), get_gpu("h100"))}
    >>> row = rows["serve_8b_tokens_per_s_per_user"]
    >>> row.ratio_low < row.ratio < row.ratio_high
    True
    """
    fa, fb = reference_speeds(a), reference_speeds(b)
    rows = []
    for ref in REFERENCE_WORKLOADS:
        ratio, low, high = band_of_ratio(fa[ref.metric], fb[ref.metric])
        rows.append(PredictedSpeed(metric=ref.metric, label=ref.label, workload=ref.workload, unit=ref.unit,
                                   a=fa[ref.metric], b=fb[ref.metric], ratio=ratio, ratio_low=low, ratio_high=high,
                                   datasheet_metric=ref.datasheet_metric))
    return tuple(rows)
