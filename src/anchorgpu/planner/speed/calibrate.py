"""Refit the speed model's constants on the measured runs and print each row's error.

    python -m anchorgpu.planner.speed.calibrate            # report with the shipped constants
    python -m anchorgpu.planner.speed.calibrate --write    # refit, write data/calibration.json, report

The fit minimises the sum of squared ``log(predicted / measured)`` over the rows whose role is ``fit``,
separately for training and serving constants of the CUDA stack (Nelder-Mead, restarted, over an unbounded
coordinate that maps each constant inside its physical bounds, from the bounds' geometric means: the same
rows always give the same constants). Rows whose role is ``holdout`` are never seen by the fit; they are
reported apart to show how well the model predicts runs it was not fitted on. The bands the planner
shows around each prediction are the 10th-90th percentile of ``measured / predicted`` over the held-out rows of
the phase, widened to include 1. Dev tooling: uses numpy (a dependency of the sweep), not the CLI.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import asdict, replace
from importlib import resources
from pathlib import Path
from typing import Any

from anchorgpu.planner.speed.calibration import (
    Band,
    Calibration,
    StackConstants,
    band_kind_of,
    calibration,
    parse_calibration,
    read_calibration_doc,
)
from anchorgpu.planner.speed.evidence import evidence_kind, summarise
from anchorgpu.planner.speed.runs import Run, load_runs, predict

__all__ = ["FITTED", "fit", "main", "report_rows"]

FITTED: dict[str, tuple[str, ...]] = {
    "train": ("train_matmul_efficiency", "train_matmul_half_width", "fp8_matmul_efficiency",
              "elementwise_bytes_per_hidden"),
    "serve": ("decode_mbu", "serve_matmul_efficiency", "serve_matmul_half_width", "roofline_exponent", "per_step_s",
              "per_layer_step_s", "fp4_matmul_efficiency"),
    "serve-moe": ("moe_expert_half_tokens",),
    "train-moe": ("moe_host_s_per_expert_gemm",),
}
"""Each group is fitted on its own rows (:func:`_group_rows`): training, dense serving, and the MoE serving rows,
which fit only the MoE term (so a mixture of experts' rows never move a dense model's figures), and the MoE training
rows, which fit only the host time of the experts' launches (``experts.expert_launch_s``)."""
BOUNDS: dict[str, tuple[float, float]] = {
    # physical limits, not tuning: no kernel beats the datasheet, achieved HBM bandwidth tops out near 93%
    # (STREAM-like copies on H100/MI300X), a kernel launch costs microseconds, a step's fixed cost is below 20 ms
    "train_matmul_efficiency": (0.3, 0.95), "train_matmul_half_width": (1.0, 4000.0),
    "fp8_matmul_efficiency": (0.2, 0.95), "fp4_matmul_efficiency": (0.1, 0.95), "elementwise_bytes_per_hidden": (1.0, 200.0),
    "serve_matmul_half_width": (1.0, 8000.0), "roofline_exponent": (1.0, 64.0),
    "decode_mbu": (0.5, 0.93), "serve_matmul_efficiency": (0.2, 0.95), "per_step_s": (2e-4, 0.02),
    "per_layer_step_s": (2e-6, 6e-5), "scaleup_latency_s": (5e-6, 2e-4),
    # a grouped GEMM's tile is 64-256 rows; from one row an expert to far more than a step's tokens
    "moe_expert_half_tokens": (1.0, 2048.0),
    # a kernel launch through PyTorch costs microseconds; a product with its FP8 quantisation and allocations some tens
    "moe_host_s_per_expert_gemm": (1e-6, 1e-3),
}


def _from_z(name: str, z: float) -> float:
    """A constant from its unbounded fitting coordinate: ``lo * (hi/lo)^sigmoid(z)``, inside its physical bounds
    everywhere (so the objective has no flat region beyond a bound), the bounds' geometric mean at ``z = 0``."""
    lo, hi = BOUNDS[name]
    return float(lo * (hi / lo) ** (1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))))


RESTARTS = 4
"""Nelder-Mead runs per group, each from the previous one's best point (a fresh simplex escapes a collapsed one)."""


def _with(cal: Calibration, stack: str, names: tuple[str, ...], values: list[float]) -> Calibration:
    k = cal.stacks[stack]
    clipped = {n: min(max(v, BOUNDS[n][0]), BOUNDS[n][1]) for n, v in zip(names, values, strict=True)}
    return replace(cal, stacks={**cal.stacks, stack: replace(k, **clipped)})


def _loss(cal: Calibration, rows: list[Run]) -> float:
    total = 0.0
    for run in rows:
        value = predict(run, cal)
        if not math.isfinite(value) or value <= 0:
            return math.inf
        total += math.log(value / run.value) ** 2
    return total


def _nelder_mead(f: Any, x0: list[float], iterations: int = 300) -> list[float]:
    """Minimise ``f`` over R^n from ``x0`` (the textbook simplex method; no dependency on scipy)."""
    import numpy as np

    n = len(x0)
    simplex = [np.array(x0, dtype=float)]
    for i in range(n):
        x = np.array(x0, dtype=float)
        x[i] += 0.25
        simplex.append(x)
    values = [f(list(x)) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        reflected = centroid + (centroid - worst)
        fr = f(list(reflected))
        if fr < values[0]:
            expanded = centroid + 2.0 * (centroid - worst)
            fe = f(list(expanded))
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centroid + 0.5 * (worst - centroid)
            fc = f(list(contracted))
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best + 0.5 * (x - best) for x in simplex]
                values = [f(list(x)) for x in simplex]
        if max(values) - min(values) < 1e-9:
            break
    return list(simplex[int(np.argmin(values))])


FITTED_FEW: dict[str, tuple[str, ...]] = {
    "train": ("fp8_matmul_efficiency",),
    "serve": ("serve_matmul_efficiency", "per_layer_step_s", "decode_mbu"),
}
"""A stack with only a few rows (ROCm) refits these from the CUDA values: its products' share of peak, its fixed
cost per layer and the share of the memory bandwidth its decode steps reach (a stack's kernels, not the GPU's
datasheet, set how much of it a weight read gets); the rest keep CUDA's, and its BF16 training efficiency moves with
its FP8 one (the stated assumption that the stack's gap is the same for both). A fourth serving constant (the
per-step cost) was tried and over-fitted the seven ROCm serving rows: per-layer cost went to its 2 us floor,
per-step cost to 4.1 ms, and InferenceMAX's held-out ROCm rows went from 4 of 8 within 25% to 1 of 8."""


MAX_PASSES = 4
"""The training and serving groups share constants (the optimizer update reads memory at ``decode_mbu``; FP8
serving products scale by the training FP8/BF16 ratio), so the CUDA fit repeats both until neither moves."""


def fit(cal: Calibration, runs: tuple[Run, ...], stack: str = "cuda") -> Calibration:
    """``cal`` with the fitted constants of ``stack`` refitted on the ``fit`` rows of that stack: for CUDA the
    fixed point of fitting training then serving, so refitting the shipped constants gives them back."""
    if stack != "cuda":
        return _fit_once(cal, runs, stack)
    # every fitted constant starts from its bounds' geometric mean, not from the file: the passes stop within a
    # tolerance, so a loop started from the last fit's constants came back to a neighbouring point (two shipped
    # states took turns at --write, about 1e-5 apart); from one start it is one answer
    names = tuple(n for group in FITTED.values() for n in group)
    cal = _with(cal, stack, names, [_from_z(n, 0.0) for n in names])
    for _ in range(MAX_PASSES):
        new = _fit_once(cal, runs, stack)
        before, after = cal.stacks[stack], new.stacks[stack]
        cal = new
        if all(math.isclose(getattr(before, n), getattr(after, n), rel_tol=1e-3) for n in StackConstants.__dataclass_fields__):
            break
    return cal


def _fit_once(cal: Calibration, runs: tuple[Run, ...], stack: str) -> Calibration:
    groups = FITTED if stack == "cuda" else FITTED_FEW
    if stack != "cuda":
        cal = replace(cal, stacks={**cal.stacks, stack: cal.stacks["cuda"]})
    for group, names in groups.items():
        rows = _group_rows(runs, group, stack)
        if not rows:
            continue

        def objective(z: list[float], names: tuple[str, ...] = names, rows: list[Run] = rows,
                      base: Calibration = cal) -> float:
            return _loss(_with(base, stack, names, [_from_z(n, v) for n, v in zip(names, z, strict=True)]), rows)

        best = [0.0] * len(names)  # from the bounds' geometric means, never from the shipped values: reproducible
        for _ in range(RESTARTS):
            best = _nelder_mead(objective, best)
        cal = _with(cal, stack, names, [_from_z(n, v) for n, v in zip(names, best, strict=True)])
        if stack != "cuda" and group == "train":
            # before the serving fit: serving's FP8/FP4 products run at serve_matmul_efficiency times
            # fp8/bf16 (Calibration.low_precision_ratio), so the BF16 figure must be final when serving is fitted
            k, cuda = cal.stacks[stack], cal.stacks["cuda"]
            scaled = cuda.train_matmul_efficiency * k.fp8_matmul_efficiency / cuda.fp8_matmul_efficiency
            cal = replace(cal, stacks={**cal.stacks, stack: replace(k, train_matmul_efficiency=min(scaled, 0.95))})
    return cal


def _group_rows(runs: tuple[Run, ...], group: str, stack: str) -> list[Run]:
    """The ``fit`` rows of ``stack`` a group of :data:`FITTED` is fitted on: its phase's, the MoE serving rows apart
    (``serve-moe``) from the rest."""
    phase, _, kind = group.partition("-")
    return [r for r in runs if r.role == "fit" and r.phase == phase and _stack_of_row(r) == stack
            and (band_kind(r) == "moe") == (kind == "moe")]


def _stack_of_row(run: Run) -> str:
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.calibration import stack_of

    return stack_of(get_gpu(run.row["gpu"]))


def report_rows(cal: Calibration, runs: tuple[Run, ...]) -> list[dict[str, Any]]:
    """One dict per run: id, role, phase, metric, measured, predicted, error (predicted/measured - 1)."""
    out = []
    for run in runs:
        value = predict(run, cal)
        out.append({"id": run.id, "role": run.role, "phase": run.phase, "metric": run.metric,
                    "measured": run.value, "predicted": value, "error": value / run.value - 1.0,
                    "source": run.source})
    return out


def _speed_ratio(run: Run, predicted: float) -> float:
    """Measured over predicted, as a speed: above 1 the run was faster than predicted (a time is inverted)."""
    ratio = run.value / predicted
    return ratio if run.higher_is_better else 1.0 / ratio


def _bands(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> dict[str, Band]:
    """Per phase, and per ``stack-phase`` where a stack has at least three rows of the phase: from the rows the
    fit never saw where there are at least three (a fitted row's residual understates the error, to nothing where
    a stack has as many constants as rows), else from all its rows."""
    by_id = {r.id: r for r in runs}
    groups: dict[str, list[float]] = {}
    held: dict[str, list[float]] = {}
    for row in rows:
        run = by_id[row["id"]]
        ratio = _speed_ratio(run, row["predicted"])
        kind = band_kind(run)
        names: tuple[str, ...] = (row["phase"], f"{_stack_of_row(run)}-{row['phase']}")
        if kind is not None:  # a kind's rows make its own band, not the rest's
            names = tuple(f"{name}-{kind}" for name in names)
        for name in names:
            groups.setdefault(name, []).append(ratio)
            if run.role == "holdout":
                held.setdefault(name, []).append(ratio)
    bands: dict[str, Band] = {}
    for name, every in sorted(groups.items()):
        if len(every) < 3:
            continue
        ratios = held[name] if len(held.get(name, ())) >= 3 else every
        q = statistics.quantiles(sorted(ratios), n=10, method="inclusive")
        # rounded outward to three places, so the percentiles the band is made of stay inside it
        bands[name] = Band(low=math.floor(min(q[0], 0.95) * 1000) / 1000, high=math.ceil(max(q[-1], 1.05) * 1000) / 1000)
    for name, band in list(bands.items()):  # a stack with few held-out rows keeps at least the phase's band
        parts = name.split("-")
        phase = "-".join(parts[1:]) if parts[0] in ("cuda", "rocm") else name
        if name != phase and phase in bands and len(held.get(name, ())) < FEW_HELD_OUT:
            bands[name] = Band(low=min(band.low, bands[phase].low), high=max(band.high, bands[phase].high))
    return bands


def _evidence(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per GPU (its catalog name) and kind of run (:data:`~anchorgpu.planner.speed.evidence.EVIDENCE_KINDS`): how its
    rows fell around the model, measured over predicted as a speed (:func:`~anchorgpu.planner.speed.evidence.summarise`)."""
    from anchorgpu.hardware import get_gpu

    by_id = {r.id: r for r in runs}
    ratios: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for row in rows:
        run = by_id[row["id"]]
        ratio = _speed_ratio(run, row["predicted"])
        key = (get_gpu(run.row["gpu"]).name, evidence_kind(run.phase, band_kind(run)))
        fitted, held = ratios.setdefault(key, ([], []))
        (held if run.role == "holdout" else fitted).append(ratio)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (gpu, kind), (fitted, held) in sorted(ratios.items()):
        out.setdefault(gpu, {})[kind] = asdict(summarise(fitted, held))
    return out


FEW_HELD_OUT = 10
"""Below this many held-out rows, a stack's own percentiles say little: its band is widened to its phase's."""


SETS: dict[str, str] = {
    "core": "perf_measured.md, published_figures.md and the ROCm findings",
    "trtllm-table": "the further cells of TensorRT-LLM's perf-overview table (dense on NVLink GPUs)",
    "trtllm-pcie-moe": "the same table's pipeline stages on RTX PRO 6000 and Qwen3-30B-A3B (MoE) on one GPU",
    "trtllm-moe": "the same table's other mixtures of experts (Qwen3-235B-A22B, Llama 4 Scout and Maverick on B200, GB200, "
                  "H200, H100 and RTX PRO 6000; Qwen3-30B-A3B over 2-8 RTX PRO 6000), held out",
    "rocm-latency": "the ROCm blog's batch-size latency table (one request to 128 at once on 8 MI300X)",
    "rocm-oci-latency": "OCI's latency table of Llama 3.1 405B on 8 MI300X (1 to 256 requests at once), held out",
    "vllm-gpustack": "GPUStack's vLLM runs on H100 and H200 with 1 to 8 requests in flight (time per output token of "
                     "gpt-oss-120b, GLM-4.6, DeepSeek-R1 and Qwen3-8B), held out",
    "vllm-gpustack-a100": "GPUStack's vLLM runs of Qwen3-14B and Qwen3-32B on one A100 with every request sent at once "
                          "(output tokens a second, ShareGPT and random 128 to 32,000-token prompts), held out",
    "vllm-gpustack-moe": "GPUStack's vLLM baselines of mixtures of experts (gpt-oss-20b, gpt-oss-120b, GLM-4.5-Air, "
                         "Qwen3-235B-A22B) on 1-8 A100 80 GB and H100 with every request sent at once (output tokens a "
                         "second), and gpt-oss-120b at 4 requests in flight (time per output token), held out",
    "megatron-bridge": "Megatron-Bridge's pre-training table (NeMo 25.11) on H100, B200, GB200 and GB300: Llama 3 8B and "
                       "70B, Llama 3.1 405B, and the mixtures of experts DeepSeek-V3, gpt-oss-120b, Qwen3-30B-A3B and "
                       "Qwen3-235B-A22B with expert parallelism (tokens a second per GPU), held out",
    "megatron-moe-modelzoo": "the Megatron-MoE model zoo's Qwen3-235B-A22B layouts on 256 H100 with the DeepEP "
                             "dispatcher, with and without the all-to-alls overlapped (step time), held out",
    "deepseek-v3-report": "DeepSeek-V3's whole pre-training on 2,048 H800 (14.8T tokens in 2.664M GPU hours, FP8, PP 16 x "
                          "EP 64, DualPipe), tokens a second per GPU, held out",
    "megatron-dsv3-gb200": "Megatron-LM's DeepSeek-V3 guide for GB200 NVL72: the optimised run on 256 GPUs (MXFP8, PP 8 x "
                           "EP 32, HybridEP, partial CUDA graphs), tokens a second per GPU, held out",
    "inferencemax": "InferenceMAX's runs with 4 to 64 requests in flight (time per output token of gpt-oss-120b on vLLM, "
                    "DeepSeek-R1 on SGLang and TensorRT-LLM on H200, B200 and MI300X-MI355X, Llama 3.3 70B as a dense "
                    "control), held out",
}
"""The sets of rows the summaries report apart, by where the rows come from (``set_of``)."""


def band_kind(run: Run) -> str | None:
    """The kind of run whose held-out rows make a band and evidence of their own (``calibration.band_kind_of``):
    ``moe`` for a mixture of experts, trained or served, ``pp`` for serving over pipeline stages, else None."""
    from anchorgpu.planner.speed.runs import _model

    return band_kind_of(moe=_model(run.row).moe is not None, phase=run.phase, pp=int(run.row.get("pp", 1)))


def serving_kind(run: Run) -> str | None:
    """:func:`band_kind` of a serving row, None for a training one."""
    return band_kind(run) if run.phase == "serve" else None


def set_of(run: Run) -> str:
    """The set a row is reported in (its ``set`` in ``data/measured_runs.json``): ``core`` for the calibration rows
    of the reference files, else one of :data:`SETS`."""
    name = str(run.row.get("set", "core"))
    if name not in SETS:
        raise ValueError(f"measured run {run.id}: unknown set {name!r} (choose from {', '.join(SETS)})")
    return name


def _summaries(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> list[str]:
    by_id = {r.id: r for r in runs}
    lines = []
    for name in SETS:
        for stack in ("cuda", "rocm"):
            for role in ("fit", "holdout"):
                errs = [abs(r["error"]) for r in rows if r["role"] == role and set_of(by_id[r["id"]]) == name
                        and _stack_of_row(by_id[r["id"]]) == stack]
                if errs:
                    lines.append(f"{name} {stack.upper()} {role}: {len(errs)} rows, median |error| "
                                 f"{statistics.median(errs):.1%}, max {max(errs):.1%}, within 25%: "
                                 f"{sum(e <= 0.25 for e in errs)}/{len(errs)}")
    return lines


def _summary(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> str:
    lines = [f"{'row':10} {'role':8} {'phase':6} {'metric':24} {'measured':>12} {'predicted':>12} {'error':>7}"]
    for r in rows:
        lines.append(f"{r['id']:10} {r['role']:8} {r['phase']:6} {r['metric']:24} {r['measured']:>12.5g} "
                     f"{r['predicted']:>12.5g} {r['error']:>+7.1%}")
    lines += _summaries(rows, runs)
    return "\n".join(lines)


def _what(run: Run) -> str:
    """One line of what a row measured, in the planner's terms (the README's accuracy table)."""
    r = run.row
    ref = r["model"]
    model = ref.get("registry") or f"GPT-shaped h={ref['config'].get('n_embd', ref['config'].get('hidden_size'))}"
    if run.phase == "train":
        layout = f"TP{r['tp']} PP{r['pp']}" + (f" CP{r['cp']}" if r["cp"] > 1 else "") + (
            f" v{r['virtual_stages']}" if r["virtual_stages"] > 1 else "") + (" FSDP" if r["zero"] >= 3 else "")
        return f"{model} train, {r['gpus']}×{r['gpu']}, {layout}, {r['precision']}, {run.metric}"
    in_flight = f", {r['concurrency']} in flight" if "concurrency" in r else ""
    return (f"{model} serve, {r['gpus']}×{r['gpu']} TP{r['tp']}, {r['weights']}, {r['prompt_tokens']}/"
            f"{r['output_tokens']}{in_flight}, {run.metric}")


def _figure(value: float, metric: str) -> str:
    if metric == "step_s":
        return f"{value:.2f} s"
    if metric.endswith("_s") and not metric.endswith("per_s"):
        return f"{value * 1e3:.1f} ms"
    return f"{value:,.0f}"


def markdown(rows: list[dict[str, Any]], runs: tuple[Run, ...], sets: tuple[str, ...] = ("core",)) -> str:
    """The speed-accuracy table (row, source, what, role, measured, ours, error) of the rows in ``sets``, then the
    summary of every set."""
    by_id = {r.id: r for r in runs}
    lines = ["| row | source | what | role | measured | ours | error |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        run = by_id[row["id"]]
        if set_of(run) not in sets:
            continue
        lines.append(f"| {run.id} | {run.source.split(' via ')[0][:60]} | {_what(run)} | {run.role} | "
                     f"{_figure(run.value, run.metric)} | {_figure(row['predicted'], run.metric)} | {row['error']:+.1%} |")
    lines.append("")
    lines += _summaries(rows, runs)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anchorgpu.planner.speed.calibrate", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="refit and write data/calibration.json")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the README's accuracy table (core rows)")
    parser.add_argument("--all", action="store_true", help="with --markdown: every row, not only the core ones")
    args = parser.parse_args(argv)
    runs = load_runs()
    cal = calibration()
    if args.write:
        cal = fit(cal, runs, "cuda")
        cal = fit(cal, runs, "rocm")
        doc = read_calibration_doc()
        for name in ("cuda", "rocm"):
            for key in StackConstants.__dataclass_fields__:
                doc["stacks"][name][key] = float(f"{float(getattr(cal.stacks[name], key)):.10g}")  # 10 significant digits
        rows = report_rows(cal, runs)
        bands = _bands(rows, runs)
        doc["bands"] = {k: {"low": b.low, "high": b.high} for k, b in bands.items()}
        doc["evidence"] = _evidence(rows, runs)
        doc["fit_report"] = [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items() if k != "source"}
                             for r in rows]
        path = Path(str(resources.files("anchorgpu.planner.speed").joinpath("data", "calibration.json")))
        path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        cal = parse_calibration(doc)
    rows = report_rows(cal, runs)
    if args.json:
        print(json.dumps(rows, indent=1))
    elif args.markdown:
        print(markdown(rows, runs, tuple(SETS) if args.all else ("core",)))
    else:
        print(_summary(rows, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
