"""AnchorGPU vs NVIDIA AIConfigurator on the same measured serving rows (not a test). From the repo root:

    .venv/bin/python benchmarks/aiconfigurator_compare.py      # or as part of benchmarks/run.py
    .venv/bin/python benchmarks/aiconfigurator_compare.py --moe   # the mixture-of-experts rows instead

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
import os
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


def _run_worker(job: dict[str, object]) -> dict[str, object] | None:
    """AIConfigurator's answers to ``job`` from ``_aiconfigurator_worker.py`` in its own venv (None without it)."""
    if not AIC_PY.exists():
        return None
    worker = ROOT / "benchmarks" / "_aiconfigurator_worker.py"
    done = subprocess.run([str(AIC_PY), str(worker)], input=json.dumps(job), capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        print(f"  aiconfigurator worker failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return None
    data: dict[str, object] = json.loads(done.stdout)
    return data


def theirs(picked: list[dict[str, object]]) -> dict[str, object] | None:
    return _run_worker({"rows": [{k: v for k, v in row.items() if k != "run"} for row in picked], "batches": BATCHES})


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


# --moe: the mixture-of-experts rows (see moe_main)
MOE_SETS = {"trtllm-moe", "trtllm-pcie-moe", "trtllm-dsr1-adp"}
MOE_MODELS = {"qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B", "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
              "llama-4-scout-17b-16e": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
              "llama-4-maverick-17b-128e-fp8": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
              "deepseek-r1": "deepseek-ai/DeepSeek-R1"}
# the row's weights -> (gemm_quant_mode, moe_quant_mode): the experts as the rest of the weights
MOE_QUANT = {"fp8": ("fp8", "fp8"), "nvfp4": ("nvfp4", "nvfp4"), "fp8-block128x128": ("fp8_block", "fp8_block")}
MOE_BATCHES = [32, 64, 128, 256, 512, 1024, 2048, 4096]  # with attention data parallelism: each rank's batch
MOE_START = {False: 4, True: 2}  # the climb starts at 512 (512 / 128 a rank with attention data parallelism)
MOE_MAX_ESTIMATES = 240  # AIConfigurator's estimates in all (our layout first, then the other one, group by group)


def _every_row(registry: str, gpu: str, row_set: str) -> bool:
    """The groups taken whole: Qwen3-30B-A3B on one B200 (our worst) and the three DeepSeek-R1 rows."""
    return (registry, gpu) == ("qwen3-30b-a3b", "b200") or row_set == "trtllm-dsr1-adp"


def _layouts(r: dict[str, object]) -> tuple[dict[str, int], dict[str, int] | None]:
    """The layout as we restate the row, and the other one tried (None on one GPU).

    We restate a trtllm-moe row as its TP (and PP) splitting every layer, the experts too: AIConfigurator's
    tp_size = moe_tp_size = TP, moe_ep_size 1, no attention data parallelism. The DeepSeek-R1 rows are planned
    as TP 1, DP 8, EP 8: attention_dp_size 8, moe_ep_size 8. The other layout is the source's command where
    we restate TP (attention DP over the TP GPUs with EP as wide, --tp N --ep N and enable_attention_dp), and
    TP N with EP N where we restate attention DP.
    """
    tp, pp, gpus, ep = int(r["tp"]), int(r["pp"]), int(r["gpus"]), int(r.get("ep", 1))  # type: ignore[call-overload]
    n = gpus // pp
    if ep > 1 and tp == 1:
        ours = {"tp": 1, "pp": pp, "attention_dp": n, "moe_tp": 1, "moe_ep": ep}
        other = {"tp": n, "pp": pp, "attention_dp": 1, "moe_tp": 1, "moe_ep": n}
    else:
        ours = {"tp": tp, "pp": pp, "attention_dp": 1, "moe_tp": tp, "moe_ep": 1}
        other = {"tp": 1, "pp": pp, "attention_dp": n, "moe_tp": 1, "moe_ep": n} if n > 1 else None
    return ours, other


def _layout_name(lay: dict[str, int]) -> str:
    attn = f"ADP{lay['attention_dp']}" if lay["attention_dp"] > 1 else f"TP{lay['tp']}"
    experts = f"EP{lay['moe_ep']}" if lay["moe_ep"] > 1 else f"MoE-TP{lay['moe_tp']}"
    return f"{attn} {experts}" + (f" PP{lay['pp']}" if lay["pp"] > 1 else "")


def moe_rows() -> list[dict[str, object]]:
    """The MoE rows it can express, picked in file order: every row of Qwen3-30B-A3B on B200 and of the DeepSeek-R1
    attention-DP set, every third row (the 1st, 4th, 7th, ...) of each other model x GPU group."""
    from anchorgpu.planner.speed.runs import load_runs

    groups: dict[tuple[str, str], list[object]] = {}
    for run in load_runs():
        r = run.row
        if (run.phase == "serve" and run.metric == "max_output_tokens_per_s" and r.get("set") in MOE_SETS
                and r["gpu"] in SYSTEMS and r["model"].get("registry") in MOE_MODELS and r["weights"] in MOE_QUANT):
            groups.setdefault((r["model"]["registry"], r["gpu"]), []).append(run)
    out = []
    for (registry, gpu), runs in groups.items():
        for k, run in enumerate(runs):
            r = run.row  # type: ignore[attr-defined]
            if not (_every_row(registry, gpu, r["set"]) or k % 3 == 0):
                continue
            gemm, moe = MOE_QUANT[r["weights"]]
            ours_layout, other = _layouts(r)
            out.append({"run": run, "id": run.id, "hf_model": MOE_MODELS[registry], "system": SYSTEMS[gpu],  # type: ignore[attr-defined]
                        "gemm_quant": gemm, "moe_quant": moe, "kv_quant": KV[r["kv_cache"]],
                        "isl": r["prompt_tokens"], "osl": r["output_tokens"], "layout": ours_layout, "other": other})
    return out


def _job_row(row: dict[str, object], lay: dict[str, int], start: int, tag: str) -> dict[str, object]:
    keep = {k: v for k, v in row.items() if k not in ("run", "layout", "other")}
    return {**keep, **lay, "id": f"{row['id']}{tag}", "start": start}


def _start_after(best_batch: int | None, ranks_before: int, ranks_after: int, adp: bool) -> int:
    """The other layout's first batch: as many requests in flight as the restated layout's best (its ranks'
    share where attention DP splits them), the nearest ladder size at or below."""
    if best_batch is None:
        return MOE_START[adp]
    total = best_batch * ranks_before
    per = total // ranks_after
    return max([i for i, b in enumerate(MOE_BATCHES) if b <= per] or [0])


def _summary(label: str, pairs: list[tuple[float, float]], names: tuple[str, str]) -> str:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    def one(v: list[float]) -> str:
        return (f"{statistics.median(v):.1%} (max {max(v):.1%}, within 10%: {sum(x <= 0.10 for x in v)}, "
                f"within 25%: {sum(x <= 0.25 for x in v)})")
    return (f"  {label} ({len(pairs)} rows both answered): median |error| {names[0]} {one(a)}, {names[1]} {one(b)}; "
            f"closer: {names[0]} on {sum(x < y for x, y in pairs)}, {names[1]} on {sum(y < x for x, y in pairs)}")


def moe_main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    picked = moe_rows()
    print(f"\n(d, MoE) AnchorGPU vs AIConfigurator {AIC_VERSION} on the measured TensorRT-LLM mixture-of-experts rows "
          f"({len(picked)} rows picked; output tokens/s of the whole server at maximum throughput)")
    mine = ours(picked)
    job_rows = [_job_row(row, row["layout"], MOE_START[row["layout"]["attention_dp"] > 1], "")  # type: ignore[index]
                for row in picked]
    cache = Path(os.environ["AIC_MOE_CACHE"]) if os.environ.get("AIC_MOE_CACHE") else None  # rerun the report alone
    saved = json.loads(cache.read_text()) if cache and cache.exists() else {}
    first = saved.get("first") or _theirs_moe(job_rows, MOE_MAX_ESTIMATES)
    if first is None:
        print(f"  AIConfigurator: not installed in {AIC_PY.parent.parent} (see benchmarks/README.md)")
        return 0
    by_id = {r["id"]: r for r in first["rows"]}
    alt_rows, rank = [], {}
    for row in picked:  # the other layout, round-robin over the model x GPU groups so a cap trims them evenly
        lay, other = row["layout"], row["other"]
        if other is None:
            continue
        group = (row["hf_model"], row["system"])
        rank[group] = rank.get(group, -1) + 1
        start = _start_after(by_id[row["id"]]["best_batch"], lay["attention_dp"], other["attention_dp"],  # type: ignore[index]
                             other["attention_dp"] > 1)  # type: ignore[index]
        alt_rows.append((rank[group], _job_row(row, other, start, "|other")))  # type: ignore[arg-type]
    alt_rows = [r for _, r in sorted(alt_rows, key=lambda x: x[0])]
    left = MOE_MAX_ESTIMATES - sum(r["estimates"] for r in first["rows"])
    second = saved.get("second") or (_theirs_moe(alt_rows, max(left, 0)) if alt_rows else {"rows": [], "import_seconds": 0.0})
    if second is None:
        second = {"rows": [], "import_seconds": 0.0}
    elif cache and not saved:
        cache.write_text(json.dumps({"first": first, "second": second}))
    alt = {r["id"].split("|")[0]: r for r in second["rows"]} if second else {}
    print("  | row | our role | model | GPUs | weights | in/out | measured | AnchorGPU | error | AIConfigurator, our "
          "layout (batch) | error | AIConfigurator, best of both layouts (layout, batch) | error |")
    print("  |---|---|---|---|---|---|---|---|---|---|---|---|---|")
    table = []
    for row in picked:
        run, r = row["run"], row["run"].row  # type: ignore[union-attr]
        value, _ = mine[str(row["id"])]
        aic, other = by_id.get(row["id"], {}), alt.get(str(row["id"]), {})
        theirs_ours = aic.get("best_tokens_per_s")
        options = [(theirs_ours, row["layout"], aic.get("best_batch")),
                   (other.get("best_tokens_per_s"), row["other"], other.get("best_batch"))]
        options = [o for o in options if o[0] is not None]
        best = max(options, key=lambda o: o[0]) if options else (None, None, None)  # type: ignore[arg-type, return-value]
        ours_text = (f"{theirs_ours:,.0f} ({aic['best_batch']})" if theirs_ours is not None
                     else (aic.get("error") or "no answer"))
        best_text = (f"{best[0]:,.0f} ({_layout_name(best[1])}, {best[2]})" if best[0] is not None  # type: ignore[arg-type]
                     else (other.get("error") or aic.get("error") or "no answer"))
        print(f"  | {row['id']} | {run.role} | {r['model']['registry']} | {r['gpus']}x {r['gpu']} | {r['weights']} | "
              f"{r['prompt_tokens']}/{r['output_tokens']} | {run.value:,.0f} | {value:,.0f} | {_err(value, run.value)} | "
              f"{ours_text} | {_err(theirs_ours, run.value)} | {best_text} | {_err(best[0], run.value)} |")  # type: ignore[arg-type]
        table.append((row, run, value, theirs_ours, best[0]))
    for label, index in (("AIConfigurator in our layout", 3), ("AIConfigurator, best of both layouts", 4)):
        print(f"  -- AnchorGPU vs {label}:")
        names = ("AnchorGPU", "AIConfigurator")
        for group, keep in (("every row", lambda t: True), ("held out", lambda t: t[1].role == "holdout"),
                            ("outputs longer than 128 tokens", lambda t: t[1].row["output_tokens"] > 128)):
            pairs = [(abs(t[2] - t[1].value) / t[1].value, abs(t[index] - t[1].value) / t[1].value)
                     for t in table if keep(t) and t[index] is not None]
            if pairs:
                print(_summary(group, pairs, names))
        seen: dict[str, list[tuple[float, float]]] = {}
        for t in table:
            if t[index] is not None:
                r = t[1].row
                seen.setdefault(f"{r['model']['registry']} on {r['gpus']}x {r['gpu']}", []).append(
                    (abs(t[2] - t[1].value) / t[1].value, abs(t[index] - t[1].value) / t[1].value))
        for group, pairs in seen.items():
            print(f"    {group} ({len(pairs)}): median |error| AnchorGPU {statistics.median(x for x, _ in pairs):.1%}, "
                  f"AIConfigurator {statistics.median(y for _, y in pairs):.1%}")
    stops = [f"{r['id']} at {r['stopped_at']}" for r in first["rows"] + second["rows"] if r.get("stopped_at")]
    if stops:
        print(f"  AIConfigurator's memory model refused a batch (its climb stopped there): {', '.join(stops)}")
    errors = [f"{r['id']}: {r['error']}" for r in first["rows"] + second["rows"] if r.get("error")]
    if errors:
        print(f"  AIConfigurator failed: {'; '.join(errors)}")
    per_row = statistics.median(t for _, t in mine.values())
    every = first["rows"] + second["rows"]
    estimates = sum(r["estimates"] for r in every)
    seconds = sum(r["seconds"] for r in every)
    firsts = [r["first_seconds"] for r in every if r["first_seconds"]]
    print(f"  time per row: AnchorGPU {per_row * 1e3:.2f} ms (one plan + speed estimate, in process)")
    print(f"  time: AIConfigurator {seconds / estimates:.2f} s per estimate over {estimates} estimates "
          f"({len(first['rows'])} rows in our layout, {len(second['rows'])} in the other; the first estimate of a row "
          f"{statistics.median(firsts):.2f} s median; import {first['import_seconds']:.1f} s) -> RATIO per estimate "
          f"{seconds / estimates / per_row:,.0f}x")
    return 0


def _theirs_moe(job_rows: list[dict[str, object]], max_estimates: int) -> dict[str, object] | None:
    return _run_worker({"rows": job_rows, "batches": MOE_BATCHES, "max_estimates": max_estimates})


if __name__ == "__main__":
    raise SystemExit(moe_main() if "--moe" in sys.argv[1:] else main())
