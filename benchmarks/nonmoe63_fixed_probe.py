"""Stop 63 probe (dev tooling, nonmoe63): the TensorRT-LLM TRTLLM-gen rows' (the InferenceMAX gpt-oss-120b B200 rows)
per-layer fixed cost scaled in memory, ``(fixed - per_step_s) x scale`` with ``scale = (n - k) / n`` for ``k``
fewer kernels of the layer's ``n`` (``--kernels k``) or a plain ``--scale``; then every serving row's error against a
saved output of ``nonmoe63_eval.py --save`` (main's), the rows that cross 25% and the within-25% counts. Patches
nothing the planner keeps.

    PYTHONPATH=src python benchmarks/nonmoe63_fixed_probe.py --base /tmp/main_all.txt --kernels 1
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
from dataclasses import replace

from _row_errors import golden_log, read_errors

from anchorgpu.planner.speed import step_constants
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.fitting import _group_rows
from anchorgpu.planner.speed.launches import fuses_norms_into_allreduce, launches_per_layer
from anchorgpu.planner.speed.runs import Run, load_runs, predict


def _refit(cal0: Calibration) -> Calibration:
    runs = load_runs()

    def with_(name: str, v: float, cal: Calibration) -> Calibration:
        k = cal.stacks["cuda"]
        return replace(cal, stacks={**cal.stacks, "cuda": replace(k, **{name: v})})

    cal = cal0
    for name, group, lo, hi in (("per_layer_step_s", "serve", 2e-6, 6e-5),
                                 ("moe_expert_half_tokens", "serve-moe", 20.0, 400.0)):
        rows = _group_rows(runs, group, "cuda")
        base = cal

        def loss(v: float, rows: list[Run] = rows, base: Calibration = base, name: str = name) -> float:
            c = with_(name, v, base)
            return sum(math.log(predict(r, c) / r.value) ** 2 for r in rows)

        v = golden_log(loss, lo, hi, 18)
        print(f"refit {name} on {len(rows)} {group} rows: {getattr(cal0.stacks['cuda'], name):.6g} -> {v:.6g}")
        cal = with_(name, v, cal)
    return cal


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--kernels", type=float, default=0.0)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--backend", default="trtllm-gen", help="moe_backend the change applies to ('any': trtllm)")
    parser.add_argument("--gpus", default="", help="comma-separated GPU names (gpu.name contains): the change applies"
                        " to these GPUs' rows, whatever the engine, in place of --backend")
    parser.add_argument("--factors", default="", help="gpu=scale,... (exact catalog names): each GPU's own scale, any"
                        " engine (overrides --scale/--gpus/--backend)")
    parser.add_argument("--refit", action="store_true", help="then refit per_layer_step_s alone on the dense serving"
                        " fit rows and moe_expert_half_tokens alone on the MoE ones (CUDA; log-squared loss, as"
                        " calibrate --write's groups), one after the other")
    parser.add_argument("--show", default="")
    args = parser.parse_args()
    build = step_constants._build

    def patched(model, gpu, setup, cal, ideal):  # type: ignore[no-untyped-def]
        c = build(model, gpu, setup, cal, ideal)
        hit = setup.moe_backend == args.backend if args.backend != "any" else setup.engine == "trtllm"
        if args.gpus:
            hit = any(g.lower() in gpu.name.lower() for g in args.gpus.split(","))
        per_step = cal.stack(gpu).per_step_s
        if not args.factors and (ideal or not hit):
            return c
        if args.factors:
            factors = dict((kv.split("=")[0], float(kv.split("=")[1])) for kv in args.factors.split(","))
            if ideal or gpu.name not in factors:
                return c
            return replace(c, fixed_s=per_step + (c.fixed_s - per_step) * factors[gpu.name])
        n = 1.0 if args.gpus else launches_per_layer(model, cal.launches, norms_in_allreduce=fuses_norms_into_allreduce(
            model, setup.engine, setup.tp, attention_dp=setup.attention_dp))
        scale = args.scale * (n - args.kernels) / n
        return replace(c, fixed_s=per_step + (c.fixed_s - per_step) * scale)

    step_constants._build = patched
    base = read_errors(args.base)
    cal, counts = calibration(), {"fit": [0, 0], "holdout": [0, 0]}
    if args.refit:
        cal = _refit(cal)
    errs: dict[str, list[list[float]]] = {"fit": [[], []], "holdout": [[], []]}
    for run in load_runs():
        if run.phase != "serve":
            continue
        err, before = (predict(run, cal) / run.value - 1) * 100, base[run.id]
        counts[run.role][0] += abs(before) <= 25
        counts[run.role][1] += abs(err) <= 25
        errs[run.role][0].append(abs(before))
        errs[run.role][1].append(abs(err))
        if (abs(before) <= 25) != (abs(err) <= 25) or (args.show and re.search(args.show, run.id)):
            flag = "" if (abs(before) <= 25) == (abs(err) <= 25) else ("IN " if abs(err) <= 25 else "OUT")
            print(f"{run.id:34s} {run.role:8s} {before:+6.1f} -> {err:+6.1f} {flag}")
    med = {k: [round(statistics.median(v[0]), 2), round(statistics.median(v[1]), 2)] for k, v in errs.items()}
    print("median |error| %, base -> here:", med)
    print(f"kernels -{args.kernels} scale {args.scale} backend {args.backend}: within 25%, base -> here:", counts)


if __name__ == "__main__":
    main()
