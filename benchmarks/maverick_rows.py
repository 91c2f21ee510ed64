"""The TensorRT-LLM MoE rows of one model, step by step (benchmarks/moe_small_batch_findings.md, Stop 55). Dev tooling;
changes no constant.

    PYTHONPATH=src .venv/bin/python benchmarks/maverick_rows.py PL4M        # any row-id prefixes, comma-separated

Per row: the batch the plan runs at saturation against the engine's caps, the KV room and the vLLM sampler term the
row is sized with (GiB a GPU), the steady step of that batch with its prompt tokens (fixed, weights, attention,
communication; the weight and KV read and the products that soft roofline combines), the same step without the
routed experts' rows falloff (``moe_expert_half_tokens`` 0), and the step the measured rate implies at the predicted
batch.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from anchorgpu.planner.speed.batching import prefill_chunk_share
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
from anchorgpu.planner.speed.flops import (
    attention_flops_per_token,
    decode_attention_flops_per_token,
    unsampled_prompt_share,
)
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _reservation, _serve_plan, load_runs
from anchorgpu.planner.speed.serving import _tick
from anchorgpu.planner.speed.serving_capacity import engine_limits_of
from anchorgpu.planner.speed.step_constants import _pair

GIB = 2**30


def main(prefixes: tuple[str, ...]) -> None:
    cal = calibration()
    for run in load_runs():
        if not run.id.startswith(prefixes) or run.metric != "max_output_tokens_per_s":
            continue
        r, p = run.row, _serve_plan(run.id)
        perf = plan_performance(p, cal=cal, kv_reservation=_reservation(r), engine=engine_of(run),
                                graph_batch_sizes=tuple(r.get("graph_batch_sizes", ())))
        sat, pred = perf["saturation_concurrency"], perf["max_output_tokens_per_s"]
        prompt, output = r["prompt_tokens"], r["output_tokens"]
        setup = serving_setup(p, prompt_tokens=prompt, output_tokens=output, engine=engine_of(run))
        c, _ = _pair(p.model, p.gpu, setup, cal)
        batch = sat / setup.replicas
        chunk, share = prefill_chunk_share(batch, prompt, output, setup.max_num_batched_tokens)
        tokens = batch * prompt / output if share >= 1 else chunk
        attn = (decode_attention_flops_per_token(p.model, prompt + output // 2),
                attention_flops_per_token(p.model, prompt, causal=True))
        skip = unsampled_prompt_share(prompt)
        t = _tick(setup, c, batch, tokens, *attn, 0.0, None, 1.0, head_skip=skip)
        flat = _tick(setup, replace(c, expert_half_tokens=0.0), batch, tokens, *attn, 0.0, None, 1.0, head_skip=skip)
        b = p.breakdown
        print(f"{run.id:26s} {run.role:7s} {100 * (pred / run.value - 1):+6.1f}%  batch {sat:5d} (caps "
              f"{engine_limits_of(p)[1]} seqs, {engine_limits_of(p)[0]} tokens)  KV {b['kv_cache_capacity_bytes'] / GIB:5.1f} "
              f"sampler {b.get('sampler_logits_bytes', 0) / GIB:4.1f} GiB | step with {tokens:6.0f} prompt tokens "
              f"{t[0] * 1e3:6.1f} ms (fixed {t[1] * 1e3:.1f} weights {t[2] * 1e3:.1f} attention {t[3] * 1e3:.1f} "
              f"comm {t[4] * 1e3:.1f}; read {t[5] * 1e3:.1f} products {t[6] * 1e3:.1f}, {flat[6] * 1e3:.1f} without the "
              f"falloff), no falloff {flat[0] * 1e3:6.1f} | implied step {sat / run.value * 1e3:6.1f} "
              f"predicted {sat / pred * 1e3:6.1f} ms")


if __name__ == "__main__":
    main(tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else ("PL4M",))
