"""Measured runs restated in the planner's terms, and the model's prediction for each. Pure.

``data/measured_runs.json`` holds one row per published figure (``../shared/reference/perf_measured.md``
and ``published_figures.md``): its layout, precision, sequence or request lengths, the metric and value,
the source, and what was assumed where the source is silent. ``role`` says whether the calibration fits
on the row (``fit``) or only reports how well it is predicted (``holdout``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.speed.calibration import Calibration, calibration

__all__ = ["Run", "load_runs", "predict"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    id: str
    role: str  # "fit" | "holdout"
    phase: str  # "train" | "serve"
    metric: str
    value: float
    source: str
    note: str
    row: dict[str, Any]

    @property
    def higher_is_better(self) -> bool:
        return self.metric.endswith("_per_s") or not self.metric.endswith("_s")


@lru_cache(maxsize=1)
def load_runs() -> tuple[Run, ...]:
    text = resources.files("anchorgpu.planner.speed").joinpath("data", "measured_runs.json").read_text("utf-8")
    doc = json.loads(text)
    return tuple(Run(id=r["id"], role=r["role"], phase=r["phase"], metric=r["metric"], value=float(r["value"]),
                     source=r["source"], note=r.get("note", ""), row=r) for r in doc["rows"])


def _model(row: dict[str, Any]) -> ModelSpec:
    from anchorgpu.architectures import load_model
    from anchorgpu.architectures.hf import from_hf_config

    ref = row["model"]
    if "registry" in ref:
        spec = load_model(ref["registry"], offline=True)
    else:
        spec = from_hf_config(ref["config"], name=row["id"], source=row["source"])
    assert isinstance(spec, ModelSpec)
    return spec


def _train(run: Run, cal: Calibration) -> float:
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.links import power_capped
    from anchorgpu.planner.speed.training import TrainLayout, training_step

    r = run.row
    model, gpu = _model(r), get_gpu(r["gpu"])
    if r.get("power_limit_w"):  # the source says the GPUs ran below their rated power
        gpu = power_capped(gpu, r["power_limit_w"])
    split = r["tp"] * r["pp"] * r["cp"]
    lay = TrainLayout(gpus=r["gpus"], tp=r["tp"], pp=r["pp"], cp=r["cp"], dp=r["gpus"] // split, zero=r["zero"],
                      virtual_stages=r["virtual_stages"], tp_overlap=r["tp_overlap"])
    st = training_step(model, gpu, lay, seq_tokens=r["seq_tokens"], micro_batch=r["micro_batch"],
                       global_batch_tokens=r["global_batch_tokens"], recompute=r["recompute"],
                       precision=r["precision"], network_bytes_per_s=r["network_gbit_per_s_per_gpu"] * 1e9 / 8,
                       cal=cal)
    metric = run.metric
    if metric == "tokens_per_s_per_gpu":
        return st.tokens_per_s / lay.gpus
    if metric == "hw_tflops_per_gpu":  # Megatron-LM 2021 counts the recomputed forward pass
        return st.tokens_per_s * st.hardware_flops_per_token / lay.gpus / 1e12
    if metric == "model_tflops_per_gpu":
        return st.tflops_per_gpu
    if metric == "step_s":
        return st.step_s
    raise ValueError(f"{run.id}: unknown metric {metric}")


def _serve(run: Run, cal: Calibration) -> float:
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
    from anchorgpu.planner.speed.serving import decode_step

    r = run.row
    model, gpu = _model(r), get_gpu(r["gpu"])
    w = Workload(prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"], concurrency=1,
                 gpu_memory_utilization=r["gpu_memory_utilization"], max_num_seqs=r.get("max_num_seqs"))
    p = plan(model, w, precision=PrecisionPlan(weights=r["weights"], kv_cache=r["kv_cache"]),
             layout=Layout(gpus=r["gpus"], tp=r["tp"], pp=1, dp=r["gpus"] // r["tp"]), gpu=gpu, suggest=False,
             choose_layout=False)
    if run.metric == "max_output_tokens_per_s":
        value = plan_performance(p, cal=cal, kv_reservation=r.get("kv_reservation", "average")).get(
            "max_output_tokens_per_s")
        return float(value) if value else float("nan")
    setup = serving_setup(p, prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"])
    if run.metric == "decode_step_s":  # one sequence, no prompt sharing the step
        return decode_step(model, gpu, setup, batch=1, cached_tokens=r["prompt_tokens"], cal=cal).step_s
    if run.metric == "prefill_s":  # one prompt alone
        return decode_step(model, gpu, setup, batch=0, prefill_tokens=r["prompt_tokens"],
                           prompt_tokens=r["prompt_tokens"], cal=cal).step_s
    raise ValueError(f"{run.id}: unknown metric {run.metric}")


def predict(run: Run, cal: Calibration | None = None) -> float:
    """The model's figure for ``run``, in the row's own metric and unit."""
    cal = cal or calibration()
    return _train(run, cal) if run.phase == "train" else _serve(run, cal)
