"""Stop 63 (dev tooling, nonmoe63): the planner's plain decode step of InferenceMAX's TensorRT-LLM gpt-oss-120b B200
rows split the way AIConfigurator's op tables split a step, so the two can be compared op for op. The planner's fixed
cost per layer (``per_layer_step_s`` x the layer's launches, ``launches.launch_ratio``) is the launches of BOTH blocks:
here it is attributed to the attention block (5 kernels, 3 where the norms ride the TP all-reduce) and to the MoE
block (8: norm, router, top-k, sort, two grouped products, activation, combine) by their kernel counts, because
AIC's measured ops carry their own launch. ``per_step_s`` stays apart (AIC has no such op: its sampler/host is
outside the generation step). AIC columns: ``benchmarks/_aiconfigurator_imt_dep.py`` and its TP variants (AIC
0.12.0, b200_sxm trtllm 1.3.0rc20; TP jobs with MoE EP = TP, AIC has no MoE-TP table for this shape), ms a step.

    PYTHONPATH=src python benchmarks/nonmoe63_vs_aic.py
"""

from __future__ import annotations

from typing import Any

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import serving
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.engine_terms import trtllm_moe_s_per_token
from anchorgpu.planner.speed.launches import fuses_norms_into_allreduce, launches_per_layer
from anchorgpu.planner.speed.runs import load_runs, predict

# row suffix -> AIC (attention, norms, qkv+o, router, exchange/all-reduce, moe, head, gen-only step), ms a step
AIC = {
    "1k-1k-TP8-C4": (0.44, 0.22, 0.31, 0.15, 0.43, 0.87, 0.03, 2.45),
    "1k-1k-TP4-C4": (0.40, 0.22, 0.32, 0.15, 0.40, 0.97, 0.05, 2.52),
    "1k-1k-TP2-C8": (0.42, 0.22, 0.46, 0.15, 0.37, 1.82, 0.09, 3.53),
    "1k-8k-TP2-C4": (0.45, 0.22, 0.46, 0.15, 0.37, 1.37, 0.09, 3.13),
    "1k-1k-TP2-C16": (0.44, 0.22, 0.38, 0.16, 0.37, 2.43, 0.09, 4.10),
    "1k-1k-DEP2-C64": (0.54, 0.22, 0.58, 0.16, 0.73, 4.30, 0.21, 6.74),
    "1k-1k-DEP2-C128": (0.78, 0.23, 0.56, 0.18, 0.80, 5.27, 0.22, 8.04),
    "1k-8k-DEP2-C64": (0.95, 0.22, 0.58, 0.16, 0.73, 4.30, 0.21, 7.15),
    "1k-8k-DEP2-C128": (1.55, 0.23, 0.56, 0.18, 0.80, 5.27, 0.22, 8.81),
    "1k-1k-DEP4-C64": (0.45, 0.22, 0.58, 0.16, 0.98, 2.66, 0.18, 5.24),
    "1k-1k-TP1-C128": (1.14, 0.25, 0.58, 0.18, 0.00, 9.12, 0.24, 11.51),
}
_seen: list[tuple[Any, ...]] = []
_tick = serving._tick


def _recording_tick(setup, c, batch, prefill, *args, **kwargs):  # type: ignore[no-untyped-def]
    t = _tick(setup, c, batch, prefill, *args, **kwargs)
    _seen.append((setup, batch, prefill, t, c))
    return t


def main() -> None:
    serving._tick = _recording_tick  # type: ignore[assignment]
    cal = calibration()
    print("ms a step; planner: non-MoE = per_step + attention-block launches + non-expert weights (and the products"
          " beyond the read) + KV read + comm + elementwise; MoE = MoE-block launches + routed read + TRT-LLM's per-row"
          " cost.  AIC: non-MoE = attention + qkv/o + head + exchange + half the norms; MoE = moe + router + half the"
          " norms")
    for run in load_runs():
        key = next((k for k in AIC if run.id == f"IMT-OSS-B200-{k}"), None)
        if key is None:
            continue
        _seen.clear()
        value = predict(run, cal)
        setup, batch, _, t, c = next(x for x in _seen if x[2] == 0.0)
        model, gpu = load_model("gpt-oss-120b"), get_gpu("b200")
        assert isinstance(model, ModelSpec)
        fused = fuses_norms_into_allreduce(model, setup.engine, setup.tp, attention_dp=setup.attention_dp)
        n = launches_per_layer(model, cal.launches, norms_in_allreduce=fused)
        moe_n = cal.launches.moe
        per_step = cal.stack(gpu).per_step_s
        layer_fixed = t[1] - per_step
        touched = 1 - c.miss_per_token ** (batch * c.expert_token_scale)
        streamed = setup.weights_bytes_per_gpu - setup.lookup_table_bytes_per_gpu
        routed_s = streamed * c.routed_share * touched / c.mem_rate
        row_s = batch * trtllm_moe_s_per_token(model, gpu, setup, cal)
        elementwise = t[0] - sum(t[1:5]) - row_s
        ours_moe = layer_fixed * moe_n / n + routed_s + row_s
        ours_non = per_step + layer_fixed * (n - moe_n) / n + (t[2] - routed_s) + t[3] + t[4] + elementwise
        a = AIC[key]
        aic_non = a[0] + a[2] + a[6] + a[4] + a[1] / 2
        aic_moe = a[5] + a[3] + a[1] / 2
        print(f"{key:16s} B={batch:3.0f} meas {run.value * 1e3:5.2f} plan {value * 1e3:5.2f} "
              f"({(value / run.value - 1) * 100:+5.1f}%) | plain step {t[0] * 1e3:5.2f}: non-MoE {ours_non * 1e3:4.2f}"
              f" (launch {(per_step + layer_fixed * (n - moe_n) / n) * 1e3:.2f}, weights {(t[2] - routed_s) * 1e3:.2f},"
              f" KV {t[3] * 1e3:.2f}, comm {t[4] * 1e3:.2f}, elem {elementwise * 1e3:.2f}) MoE {ours_moe * 1e3:4.2f}"
              f" (launch {layer_fixed * moe_n / n * 1e3:.2f}, read {routed_s * 1e3:.2f}, rows {row_s * 1e3:.2f})"
              f" | AIC step {a[7]:5.2f}: non-MoE {aic_non:4.2f} MoE {aic_moe:4.2f}")


if __name__ == "__main__":
    main()
