"""The RTX PRO 6000 serving rows with pipeline stages, term by term at the planner's saturation batch ``B``
(benchmarks/rtx_pro_6000_findings.md, stop 54): the GPUs' cycle with no host term (``gpu``; its attention part
``attn``, its weights and products ``wts``, the spread steady state), one pass of the stated host work ``h B``
(``h1``), the ``pp`` walks' floor ``pp h B`` (``hpp``), the planner's cycle (``pred``) and the implied one
``B / measured rate`` (``impl``); then the implied cycle's time beyond the GPUs' per tick, per running sequence
(``x/B``, microseconds: what each of the ``pp`` iterations of the PP loop would spend per request if its host work
is added to the GPUs').

    PYTHONPATH=src .venv/bin/python benchmarks/rtx_pp_host_parts.py [ROW-ID-PARTS ...]   # default: every RTX PP row

Dev tooling; reads no constant it does not print and changes none.
"""

from __future__ import annotations

import dataclasses
import sys

from anchorgpu.planner.speed import batching
from anchorgpu.planner.speed.attention_rate import timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.flops import decode_attention_flops_per_token, unsampled_prompt_share
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _serve_plan, load_runs
from anchorgpu.planner.speed.serving import _step
from anchorgpu.planner.speed.serving_setup import serving_setup
from anchorgpu.planner.speed.step_constants import _pair


def main(patterns: list[str]) -> None:
    cal = calibration()
    h = cal.host_s_per_sequence_step["x86"]
    print(f"{'row':27s} {'B':>5s} {'gpu':>6s} {'attn':>6s} {'wts':>6s} {'h1':>5s} {'hpp':>6s} {'pred':>6s} "
          f"{'impl':>6s} {'err%':>6s} {'x/B us':>6s}")
    for run in load_runs():
        if run.phase != "serve" or run.metric != "max_output_tokens_per_s" or "RTX" not in run.id:
            continue
        r = run.row
        if int(r.get("pp", 1)) < 2 or (patterns and not any(p in run.id for p in patterns)):
            continue
        p, engine = _serve_plan(run.id), engine_of(run)
        prompt, output = r["prompt_tokens"], r["output_tokens"]
        perf = plan_performance(p, cal=cal, kv_reservation=r.get("kv_reservation", "average"), engine=engine)
        s = serving_setup(p, prompt_tokens=prompt, output_tokens=output, engine=engine)
        batch = perf["saturation_concurrency"] // s.replicas
        c, ci = _pair(p.model, p.gpu, s, cal)
        attn = (decode_attention_flops_per_token(p.model, prompt + output // 2),
                timed_prefill_attention_flops_per_token(p.model, prompt, cal.window_attention_extra_tokens))
        bare = dataclasses.replace(c, host_s_per_sequence=0.0, host_waited_s_per_sequence=0.0)
        gpu, _, _ = batching._steady(s, bare, ci, batch, prompt, output, attn)
        pred, _, _ = batching._steady(s, c, ci, batch, prompt, output, attn)
        parts = _step(s, bare, batch, batch * prompt / output, attn[0], attn[1], head_skip=unsampled_prompt_share(prompt))
        implied = batch / (run.value / s.replicas)
        extra = (implied - gpu) / s.pp / batch
        print(f"{run.id:27s} {batch:5d} {gpu * 1e3:6.1f} {parts[3] * 1e3:6.1f} {parts[2] * 1e3:6.1f} "
              f"{h * batch * 1e3:5.1f} {s.pp * h * batch * 1e3:6.1f} {pred * 1e3:6.1f} {implied * 1e3:6.1f} "
              f"{100 * (implied / pred - 1):+6.1f} {extra * 1e6:6.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
