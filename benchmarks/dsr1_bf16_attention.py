"""What-if for the DeepSeek-R1 NVFP4 rows (benchmarks/moe_small_batch_findings.md, "Stop 44"): the NVFP4 checkpoint
keeps the attention's linear layers in BF16 (TensorRT-LLM tech blog 1, "Precision Strategy": attention modules
bf16, MoE layers nvfp4), where the planner runs every product of an nvfp4 plan at the FP4 rate. Adds, to each tick
of an fp4 DeepSeek plan, the attention products' time at the BF16 serving rate less their time at the FP4 rate
(weights read and KV capacity left as planned) and prints each DeepSeek-R1 B200/attention-DP row before and after.
Dev tooling; changes no constant and no row. Superseded (Stop 46): the TRT-DSR1-ADP-B200-* rows now name their
checkpoint's hf_quant_config.json and are planned with its BF16 attention, so on them this adds the attention twice.

    PYTHONPATH=src .venv/bin/python benchmarks/dsr1_bf16_attention.py
"""

from __future__ import annotations

from typing import Any

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import batching, serving
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.links import peak_for
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.step_constants import serve_shape_factor


def main() -> None:
    cal = calibration()
    model = load_model("deepseek-r1")
    mla = model.mla
    assert mla is not None and mla.q_lora_rank is not None
    h, heads = model.hidden_size, model.num_attention_heads
    per_layer = (h * mla.q_lora_rank + mla.q_lora_rank * heads * (mla.qk_nope_head_dim + mla.qk_rope_head_dim)
                 + h * (mla.kv_lora_rank + mla.qk_rope_head_dim)
                 + mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim) + heads * mla.v_head_dim * h)
    attention_params = per_layer * model.num_layers
    gpu = get_gpu("b200")
    shape = serve_shape_factor(h, cal.stack(gpu).serve_matmul_half_width)
    r16 = peak_for(gpu, "bf16").flops_per_s * cal.serve_precision_efficiency(gpu, "bf16") * shape
    r4 = peak_for(gpu, "fp4").flops_per_s * cal.serve_precision_efficiency(gpu, "fp4") * shape
    print(f"attention linear parameters {attention_params / 1e9:.2f}B; B200 serving rate BF16 {r16 / 1e15:.2f}, "
          f"FP4 {r4 / 1e15:.2f} PFLOP/s")
    original = serving._tick

    def tick(setup: Any, c: Any, batch: float, prefill: float, *rest: Any, **kw: Any) -> tuple[float, ...]:
        t = list(original(setup, c, batch, prefill, *rest, **kw))
        if setup.precision == "fp4" and c.hidden_size == h:
            padded = rest[2] if len(rest) > 2 else 0.0
            extra = (max(batch, padded) + prefill) * 2.0 * attention_params * (1.0 / r16 - 1.0 / r4)
            t[0] += extra
            t[2] += extra
        return tuple(t)

    for run in load_runs():
        if "DSR1" not in run.id or not ("ADP" in run.id or "B200" in run.id):
            continue
        before = predict(run, cal)
        batching._step.__globals__["_tick"] = tick  # serving's module globals: _step calls _tick through them
        try:
            after = predict(run, cal)
        finally:
            batching._step.__globals__["_tick"] = original

        e0, e1 = ((before / run.value - 1.0, after / run.value - 1.0) if run.higher_is_better
                  else (run.value / before - 1.0, run.value / after - 1.0))
        print(f"{run.id:28s} {run.metric:24s} measured {run.value:10.4g} predicted {before:10.4g} ({e0:+.1%})"
              f"  BF16 attention products {after:10.4g} ({e1:+.1%})")


if __name__ == "__main__":
    main()
