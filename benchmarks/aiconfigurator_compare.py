"""AnchorGPU vs NVIDIA AIConfigurator on the same measured serving rows (not a test). From the repo root:

    .venv/bin/python benchmarks/aiconfigurator_compare.py      # or as part of benchmarks/run.py

The rows are those of ``src/anchorgpu/planner/speed/data/measured_runs.json`` that AIConfigurator can
express: TensorRT-LLM maximum-throughput rows (metric ``max_output_tokens_per_s``) on the NVIDIA systems
its database covers, with a model whose config it ships. For each row it prints the measured value, ours
(``anchorgpu.planner.speed.runs.predict``, the figure ``anchorgpu plan`` reports as
``max_output_tokens_per_s``), AIConfigurator's (the best output tokens/s over a ladder of batch sizes, see
``_aiconfigurator_worker.py``), both errors, and the time each takes per row and per estimate.
AIConfigurator runs unmodified in its own venv, ``benchmarks/.aic-venv`` (README.md says how to make it).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AIC_PY = ROOT / "benchmarks" / ".aic-venv" / "bin" / "python"
AIC_VERSION = "0.12.0"

# our GPU -> its system; our registry model -> the Hugging Face config it ships (Llama 3.3 70B has the
# architecture of Llama 3.1 70B: same config fields, so the same estimate)
SYSTEMS = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm"}
MODELS = {"llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B", "llama-3.3-70b": "meta-llama/Meta-Llama-3.1-70B",
          "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B", "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B"}
GEMM = {"fp8": "fp8", "nvfp4": "nvfp4", "bf16": "bfloat16"}
KV = {"fp8": "fp8", "bf16": "bfloat16", "fp16": "bfloat16"}
BATCHES = [16, 32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096]


def rows() -> list[dict[str, object]]:
    from anchorgpu.planner.speed.runs import load_runs

    out = []
    for run in load_runs():
        r = run.row
        if (run.phase == "serve" and run.metric == "max_output_tokens_per_s" and r["gpu"] in SYSTEMS
                and r["model"].get("registry") in MODELS and r["weights"] in GEMM):
            out.append({"run": run, "id": run.id, "hf_model": MODELS[r["model"]["registry"]], "system": SYSTEMS[r["gpu"]],
                        "tp": r["tp"], "gemm_quant": GEMM[r["weights"]], "kv_quant": KV[r["kv_cache"]],
                        "isl": r["prompt_tokens"], "osl": r["output_tokens"]})
    return out


def ours(picked: list[dict[str, object]], repeat: int = 5) -> dict[str, tuple[float, float]]:
    """Our prediction and its median seconds per row (a fresh plan and speed estimate each time)."""
    from anchorgpu.planner.speed import runs as runs_module
    from anchorgpu.planner.speed.runs import predict

    out = {}
    for row in picked:
        run = row["run"]
        predict(run)  # warm the model and GPU caches, as AIConfigurator's first estimate loads its tables
        times = []
        for _ in range(repeat):
            runs_module._serve_plan.cache_clear()  # the fit plans each row once; here every estimate plans afresh
            t = time.perf_counter()
            value = predict(run)
            times.append(time.perf_counter() - t)
        out[str(row["id"])] = (value, statistics.median(times))
    return out


def theirs(picked: list[dict[str, object]]) -> dict[str, object] | None:
    if not AIC_PY.exists():
        return None
    job = {"rows": [{k: v for k, v in row.items() if k != "run"} for row in picked], "batches": BATCHES}
    worker = ROOT / "benchmarks" / "_aiconfigurator_worker.py"
    done = subprocess.run([str(AIC_PY), str(worker)], input=json.dumps(job), capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        print(f"  aiconfigurator worker failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return None
    data: dict[str, object] = json.loads(done.stdout)
    return data


def _err(pred: float | None, measured: float) -> str:
    return "-" if pred is None else f"{(pred - measured) / measured:+.1%}"


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    picked = rows()
    print(f"\n(d) AnchorGPU vs AIConfigurator {AIC_VERSION} on the measured TensorRT-LLM serving rows "
          f"({len(picked)} rows; output tokens/s of the whole server at maximum throughput)")
    mine = ours(picked)
    other = theirs(picked)
    if other is None:
        print(f"  AIConfigurator: not installed in {AIC_PY.parent.parent} (see benchmarks/README.md)")
    by_id = {r["id"]: r for r in other["rows"]} if other else {}  # type: ignore[index]
    print("  | row | our role | model | GPUs | weights | in/out | measured | AnchorGPU | error | AIConfigurator (best batch) | error |")
    print("  |---|---|---|---|---|---|---|---|---|---|---|")
    abs_ours, abs_theirs = [], []
    for row in picked:
        run, r = row["run"], row["run"].row  # type: ignore[union-attr]
        value, _ = mine[str(row["id"])]
        aic = by_id.get(row["id"], {})
        their = aic.get("best_tokens_per_s")
        abs_ours.append(abs(value - run.value) / run.value)
        if their is not None:
            abs_theirs.append(abs(their - run.value) / run.value)
        their_text = (f"{their:,.0f} ({aic['best_batch']})" if their is not None
                      else (aic.get("error") or "no answer"))
        print(f"  | {row['id']} | {run.role} | {r['model']['registry']} | {r['gpus']}x {r['gpu']} | {r['weights']} | "
              f"{r['prompt_tokens']}/{r['output_tokens']} | {run.value:,.0f} | {value:,.0f} | {_err(value, run.value)} | "
              f"{their_text} | {_err(their, run.value)} |")
    groups = {"every row": lambda r: True, "the perf_measured rows S14-S21": lambda r: str(r["id"]).startswith("S"),
              "the rows AnchorGPU's calibration never saw (holdout)": lambda r: r["run"].role == "holdout"}  # type: ignore[union-attr]
    for label, keep in groups.items():
        both = [(abs(mine[str(r["id"])][0] - r["run"].value) / r["run"].value,  # type: ignore[union-attr]
                 abs(by_id[r["id"]]["best_tokens_per_s"] - r["run"].value) / r["run"].value)  # type: ignore[union-attr]
                for r in picked if keep(r) and by_id.get(r["id"], {}).get("best_tokens_per_s") is not None]
        if both:
            a, b = [x for x, _ in both], [y for _, y in both]
            print(f"  {label} ({len(both)} rows both answered): median |error| AnchorGPU {statistics.median(a):.1%} "
                  f"(max {max(a):.1%}, within 10%: {sum(x <= 0.10 for x in a)}), AIConfigurator {statistics.median(b):.1%} "
                  f"(max {max(b):.1%}, within 10%: {sum(y <= 0.10 for y in b)}); closer: AnchorGPU on "
                  f"{sum(x < y for x, y in both)}, AIConfigurator on {sum(y < x for x, y in both)}")
    print(f"  AnchorGPU over all {len(abs_ours)} rows: median |error| {statistics.median(abs_ours):.1%} (max {max(abs_ours):.1%});"
          " AIConfigurator fits none of these rows (its tables are its own kernel measurements)")
    stops = [f"{r['id']} at {r['stopped_at']}" for r in other["rows"] if r.get("stopped_at")] if other else []  # type: ignore[index]
    if stops:
        print(f"  AIConfigurator's memory model refused the next batch (its ladder stopped): {', '.join(stops)}")
    per_row = statistics.median(t for _, t in mine.values())
    print(f"  time per row: AnchorGPU {per_row * 1e3:.2f} ms (one plan + speed estimate, in process)")
    if other:
        estimates = sum(r["estimates"] for r in other["rows"])  # type: ignore[index]
        seconds = sum(r["seconds"] for r in other["rows"])  # type: ignore[index]
        firsts = [r["first_seconds"] for r in other["rows"] if r["first_seconds"]]  # type: ignore[index]
        print(f"  time: AIConfigurator {seconds / estimates:.2f} s per estimate over {estimates} estimates "
              f"({seconds / len(picked):.1f} s per row for its batch ladder; the first estimate of a row, which loads "
              f"that system's tables, {statistics.median(firsts):.2f} s median; import {other['import_seconds']:.1f} s) "
              f"-> RATIO per estimate {seconds / estimates / per_row:,.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
