"""AnchorGPU vs llm-analysis on the same measured training rows (not a test). From the repo root:

    .venv/bin/python benchmarks/llm_analysis_train_compare.py
    LLM_ANALYSIS_PY=/path/to/venv/bin/python .venv/bin/python benchmarks/llm_analysis_train_compare.py

The rows are the training rows (phase ``train``) of ``src/anchorgpu/planner/speed/data/measured_runs.json`` that
llm-analysis's ``train`` can express; the others are listed by the reason it cannot. Each expressed row gets its
model config in llm-analysis's format (from the row's Hugging Face config, or the registry model's), its GPU
(llm-analysis's own config where it has the part, else one written from our catalog), TP/PP/DP, ZeRO stage,
sequence length, micro batch, global batch, recompute level and BF16 (``w16a16e16``). llm-analysis runs unmodified
in its own venv (``.bench-venv``, made as benchmarks/README.md says) through ``_llm_analysis_train_worker.py``;
ours (``anchorgpu.planner.speed.runs.predict``, the shipped calibration) runs in this process.

llm-analysis is evaluated three ways in the same run:
  (a) its defaults (flops_efficiency and hbm_memory_efficiency 1: its README calls this the lower bound of the time);
  (b) the values its README suggests when one must assume: flops efficiency 0.5 ("up to 0.5 for large scale model
      training"), memory efficiency 0.9 ("an aggressive target");
  (c) the single flops efficiency that minimises its median |log error| over our ``fit`` rows among the expressed
      ones, judged on the ``holdout`` rows, as our constants are fitted on the fit rows and judged on the held-out
      ones. Its training time does not read the memory efficiency (only its forward latency does), so that stays 1.
A row's metric is formed from the predicted tokens/s per GPU with the row's own FLOPs per token where the metric is
TFLOP/s (the same factor for both sides: ours), and ``step_s`` is the global batch's tokens over that rate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import tomllib
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from anchorgpu.planner.speed.runs import Run, load_runs, predict  # noqa: E402

PEER_PY = Path(os.environ.get("LLM_ANALYSIS_PY", ROOT / ".bench-venv" / "bin" / "python"))
MODELS_DIR = ROOT / "src" / "anchorgpu" / "architectures" / "data"

# our GPU id -> llm-analysis's own GPU config (its package ships these two of the parts the rows ran on)
PEER_GPUS = {"a100-80gb-sxm": "a100-sxm-80gb", "h100-sxm": "h100-sxm-80gb"}
RECOMPUTE = {"none": 0, "selective": 1, "full": 2}  # its ActivationRecomputation
WITHIN = 0.25

# Why a row is left out, in the order they are checked (a row is listed under every reason that applies).
REASONS = {
    "moe": "mixture of experts: train() counts every layer's MLP as 16*b*s*h^2 FLOPs whatever moe_num_experts, "
           "moe_top_k or the expert width; ep_size enters only its memory terms",
    "lora": "LoRA: its README models full fine-tuning only",
    "cp": "context parallelism: its ParallelismConfig has tp, pp, dp, ep and sp only",
    "fp8": "FP8: its dtype configs give bit widths only; 8 bits read the GPU config's INT8 peak (peak_i8_TFLOPS), "
           "it has no FP8 compute dtype",
    "arch": "architecture its ModelConfig cannot state (not a GPT-2 or Llama-style dense decoder)",
}


def hf_config(run: Run) -> dict[str, Any]:
    """The row's Hugging Face config: its own, or the registry model's file."""
    ref = run.row["model"]
    if "config" in ref:
        return dict(ref["config"])
    registry = tomllib.loads((MODELS_DIR / "registry.toml").read_text("utf-8"))
    entry = registry["models"][ref["registry"]]
    return dict(json.loads((MODELS_DIR / entry["file"]).read_text("utf-8")))


def is_moe(cfg: dict[str, Any]) -> bool:
    keys = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
    return any(int(cfg.get(k) or 0) > 1 for k in keys) or "moe" in str(cfg.get("model_type", ""))


def peer_model_config(name: str, cfg: dict[str, Any], seq_len: int) -> dict[str, Any] | None:
    """``cfg`` as llm-analysis's ModelConfig JSON, or None for an architecture it cannot state.

    The MLP width is given with ``expansion_ratio`` (width / hidden, not whole for SwiGLU models): ModelConfig checks
    that the width is a whole multiple of the hidden size only when the ratio is missing. Its training time does not
    read either (the MLP's FLOPs are 16*b*s*h^2 in its code); they size its activation and parameter memory."""
    mt = cfg.get("model_type")
    if mt == "gpt2":
        hidden, layers, heads = cfg["n_embd"], cfg["n_layer"], cfg["n_head"]
        kv, ffn, max_pos = heads, cfg.get("n_inner") or 4 * hidden, cfg.get("n_positions", seq_len)
    elif mt in ("llama", "mistral", "olmo", "olmo2") and cfg.get("hidden_size"):
        hidden, layers, heads = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
        kv, ffn = cfg.get("num_key_value_heads") or heads, cfg["intermediate_size"]
        max_pos = cfg.get("max_position_embeddings", seq_len)
        if cfg.get("head_dim") and cfg["head_dim"] * heads != hidden:
            return None  # its attention FLOPs and weights are stated in the hidden size alone
    else:
        return None
    return {"name": name, "num_layers": layers, "n_head": heads, "hidden_dim": hidden, "vocab_size": cfg["vocab_size"],
            "max_seq_len": max(int(max_pos), seq_len), "num_key_value_heads": kv, "ffn_embed_dim": ffn,
            "expansion_ratio": ffn / hidden, "model_type": mt}


def peer_gpu_config(run: Run) -> tuple[str, dict[str, Any] | None]:
    """The GPU config name for ``run`` and, where llm-analysis lacks that part (or the row states another memory
    bandwidth), a config written from our catalog's figures."""
    from anchorgpu.hardware import get_gpu

    r = run.row
    if r["gpu"] in PEER_GPUS and not r.get("memory_bandwidth_tb_per_s"):
        return PEER_GPUS[r["gpu"]], None
    gpu = get_gpu(r["gpu"])
    bw = float(r.get("memory_bandwidth_tb_per_s") or gpu.memory_bandwidth_bytes_per_s / 1e12) * 1e12
    name = f"anchorgpu-{gpu.name}-{bw / 1e12:g}tbs"
    bf16, int8 = gpu.peaks["bf16"].flops_per_s, gpu.peaks["int8"].flops_per_s
    assert bf16 is not None, f"{gpu.name}: no BF16 peak in the catalog"
    return name, {
        "name": name, "mem_per_GPU_in_GB": gpu.memory_bytes / 1024**3, "hbm_bandwidth_in_GB_per_sec": bw / 1e9,
        # its configs give one direction of NVLink (H100 SXM: 450 of 900 GB/s)
        "intra_node_bandwidth_in_GB_per_sec": (gpu.interconnect_bandwidth_bytes_per_s or 0) / 2e9,
        "intra_node_min_message_latency": 8e-06,  # the figure its own NVIDIA configs carry
        "peak_fp16_TFLOPS": bf16 / 1e12,
        "peak_i8_TFLOPS": (int8 or 2 * bf16) / 1e12,
        "inter_node_bandwidth_in_GB_per_sec": r["network_gbit_per_s_per_gpu"] / 8,
    }


def classify(run: Run) -> tuple[dict[str, Any] | None, list[str]]:
    """The worker's row for ``run`` and the reasons it cannot be expressed (empty when it can)."""
    r = run.row
    cfg = hf_config(run)
    reasons = []
    if is_moe(cfg) or int(r.get("ep", 1)) > 1:
        reasons.append("moe")
    if r.get("kind", "full") != "full":
        reasons.append("lora")
    if r["cp"] > 1:
        reasons.append("cp")
    if r["precision"] != "bf16":
        reasons.append("fp8")
    model = None if "moe" in reasons else peer_model_config(f"{run.id}-model", cfg, r["seq_tokens"])
    if model is None and "moe" not in reasons:
        reasons.append("arch")
    if reasons or r["recompute"] not in RECOMPUTE:
        return None, reasons or ["arch"]
    gpu_name, gpu_config = peer_gpu_config(run)
    split = r["tp"] * r["pp"] * r["cp"]
    return {"id": run.id, "model_config": model, "gpu_name": gpu_name, "gpu_config": gpu_config,
            "dtype_name": "w16a16e16", "tp": r["tp"], "pp": r["pp"], "dp": r["gpus"] // split,
            "ds_zero": r["zero"], "seq_len": r["seq_tokens"], "batch_size_per_gpu": r["micro_batch"],
            "global_batch_size": r["global_batch_tokens"] // r["seq_tokens"],
            "activation_recomputation": RECOMPUTE[r["recompute"]],
            "flash_attn": r.get("attention_kernel", "flash") != "unfused",
            "mlp_gated_linear_units": model is not None and model["model_type"] != "gpt2"}, []


def run_peer(rows: list[dict[str, Any]], settings: list[dict[str, Any]], passes: int) -> dict[str, Any]:
    gpus = {row["gpu_name"]: row["gpu_config"] for row in rows if row["gpu_config"]}
    job = {"gpu_configs": list(gpus.values()), "settings": settings, "passes": passes,
           "rows": [{k: v for k, v in row.items() if k != "gpu_config"} for row in rows]}
    worker = ROOT / "benchmarks" / "_llm_analysis_train_worker.py"
    done = subprocess.run([str(PEER_PY), str(worker)], input=json.dumps(job), capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"llm-analysis worker failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def tokens_per_s_per_gpu(result: dict[str, Any]) -> float:
    """llm-analysis's throughput: the global batch's tokens over its time per iteration, per GPU."""
    return 0.0 if "error" in result else (
        result["global_batch_size"] * result["_seq_len"] / result["latency_per_iter"] / result["total_num_gpus"])


def in_metric(run: Run, tps_per_gpu: float, ours_tps: float, ours_value: float) -> float:
    """A tokens/s per GPU as the row's metric (TFLOP/s with the row's FLOPs per token: ours, the same for both)."""
    r = run.row
    if run.metric == "tokens_per_s_per_gpu":
        return tps_per_gpu
    if run.metric == "step_s":
        return float(r["global_batch_tokens"] / (tps_per_gpu * r["gpus"]))
    return tps_per_gpu * ours_value / ours_tps  # hw_ or model_tflops_per_gpu


def fit_efficiency(errors_at_one: list[float]) -> float:
    """The flops efficiency in (0, 1] minimising the median |log(predicted / measured)| over rows whose predictions
    at efficiency 1 are off by ``errors_at_one`` (its training time is FLOPs / (efficiency x peak), so a prediction
    of tokens/s scales with the efficiency: the search is over one shift of the logs). Ties go to the larger value."""
    logs = [math.log(1.0 + e) for e in errors_at_one]
    best, best_eff = math.inf, 1.0
    for i in range(1, 100_001):  # efficiency 0.00001 .. 1.0 in steps of 1e-5
        eff = i / 100_000
        obj = statistics.median(abs(math.log(eff) + x) for x in logs)
        if obj <= best:
            best, best_eff = obj, eff
    return best_eff


def ours_timing(runs: list[Run], passes: int) -> tuple[float, float]:
    """Our CPU seconds per evaluation: warm (the row's model read once and our memos kept, as the fit predicts
    rows) and cold (the model read afresh for each call, which also misses every memo keyed on it; llm-analysis
    reads its model config file on every call)."""
    from anchorgpu.planner.speed import runs as runs_module
    from anchorgpu.planner.speed.calibration import calibration

    cal = calibration()
    for run in runs:
        predict(run, cal)
    warm, cold = [], []
    for _ in range(passes):
        t = time.process_time()
        for run in runs:
            predict(run, cal)
        warm.append((time.process_time() - t) / len(runs))
        t = time.process_time()
        for run in runs:
            runs_module._model_of.cache_clear()
            predict(run, cal)
        cold.append((time.process_time() - t) / len(runs))
    return statistics.median(warm), statistics.median(cold)


def summary_line(label: str, errors: list[float]) -> str:
    if not errors:
        return f"  {label:34s} (no rows)"
    med = statistics.median(abs(e) for e in errors)
    within = sum(abs(e) <= WITHIN for e in errors)
    return f"  {label:34s} median |error| {med:6.1%}   within 25%: {within:2d} of {len(errors)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=7, help="timing passes on each side (median)")
    args = parser.parse_args()
    if not PEER_PY.exists():
        sys.exit(f"no llm-analysis venv at {PEER_PY}: see benchmarks/README.md (or set LLM_ANALYSIS_PY)")

    from anchorgpu.planner.speed.calibration import calibration

    cal = calibration()
    train_runs = [run for run in load_runs() if run.phase == "train"]
    picked: list[tuple[Run, dict[str, Any]]] = []
    skipped: dict[str, list[str]] = {}
    for run in train_runs:
        row, reasons = classify(run)
        if row is None:
            skipped[run.id] = reasons
        else:
            picked.append((run, row))

    print(f"llm_analysis_train_compare.py, {date.today().isoformat()}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{len(train_runs)} training rows; {len(picked)} expressed in llm-analysis's train(), {len(skipped)} not:")
    for key, text in REASONS.items():
        ids = [rid for rid, rs in skipped.items() if key in rs]
        alone = [rid for rid in ids if skipped[rid] == [key]]
        if ids:
            print(f"  {len(ids):2d} {key} ({len(alone)} for this reason alone): {text}")

    # ours, in process
    ours: dict[str, tuple[float, float]] = {}
    ours_flops: dict[str, float] = {}  # our hardware FLOPs per token (recomputation counted), for the FLOPs column
    for run, _ in picked:
        value = predict(run, cal)
        tps = predict(replace(run, metric="tokens_per_s_per_gpu"), cal)
        ours[run.id] = (value, tps)
        ours_flops[run.id] = predict(replace(run, metric="hw_tflops_per_gpu"), cal) * 1e12 / tps

    # llm-analysis: (a) defaults and (b) its README's values, then (c) the efficiency fitted on the fit rows
    rows = [row for _, row in picked]
    settings: list[dict[str, Any]] = [{"name": "a", "flops_efficiency": None, "hbm_memory_efficiency": None},
                {"name": "b", "flops_efficiency": 0.5, "hbm_memory_efficiency": 0.9}]
    peer = run_peer(rows, settings, args.passes)["settings"]

    def values(name: str, result_set: dict[str, Any]) -> dict[str, float]:
        out = {}
        for run, row in picked:
            res = dict(result_set[run.id], _seq_len=row["seq_len"])
            if "error" in res:
                print(f"  llm-analysis ({name}) refused {run.id}: {res['error']}")
                out[run.id] = math.nan
                continue
            out[run.id] = in_metric(run, tokens_per_s_per_gpu(res), ours[run.id][1], ours[run.id][0])
        return out

    peer_values = {name: values(name, peer[name]["rows"]) for name in ("a", "b")}
    fit_errors = [peer_values["a"][run.id] / run.value - 1.0 if run.higher_is_better
                  else run.value / peer_values["a"][run.id] - 1.0  # a time: the rate's error (measured time over predicted)
                  for run, _ in picked if run.role == "fit" and not math.isnan(peer_values["a"][run.id])]
    eff = fit_efficiency(fit_errors)
    peer_c = run_peer(rows, [{"name": "c", "flops_efficiency": eff, "hbm_memory_efficiency": None}], args.passes)
    peer["c"] = peer_c["settings"]["c"]
    peer_values["c"] = values("c", peer["c"]["rows"])
    # its time is FLOPs / (efficiency x peak), the memory efficiency unread: (b) must be (a) at half the rate and
    # (c) (a) scaled by the fitted efficiency, row by row
    for run, _ in picked:
        for key, scale in (("b", 0.5), ("c", eff)):
            a, other = peer_values["a"][run.id], peer_values[key][run.id]
            ratio = other / a if run.higher_is_better else a / other
            assert abs(ratio - scale) < 1e-9 * scale, (run.id, key, ratio, scale)

    def err(run: Run, value: float) -> float:
        return value / run.value - 1.0

    print(f"\n(c) flops_efficiency fitted on the {len(fit_errors)} expressed fit rows: {eff:.5f} "
          f"(hbm_memory_efficiency 1; its training time does not read it)")
    head = (f"{'row':18s} {'role':7s} {'metric':20s} {'measured':>9s} {'ours':>9s} {'err':>7s}"
            f" {'(a) eff 1':>9s} {'err':>7s} {'(b) eff .5':>10s} {'err':>7s} {f'(c) eff {eff:.3f}':>13s} {'err':>7s}"
            f" {'FLOPs/tok':>9s}")
    print(head)
    print("-" * len(head))
    print("(FLOPs/tok: llm-analysis's FLOPs a token, recomputation included, over ours; under 1 it counts less work)")
    for run, row in picked:
        o = ours[run.id][0]
        cells = "".join(f" {peer_values[k][run.id]:{w}.4g} {err(run, peer_values[k][run.id]):+7.1%}"
                        for k, w in (("a", 9), ("b", 10), ("c", 13)))
        res = peer["a"]["rows"][run.id]
        peer_flops = res["num_flops_total_per_micro_batch"] / (res["batch_size_per_gpu"] * row["seq_len"])
        print(f"{run.id:18s} {run.role:7s} {run.metric:20s} {run.value:9.4g} {o:9.4g} {err(run, o):+7.1%}{cells}"
              f" {peer_flops / ours_flops[run.id]:9.2f}")

    print("\nSummary (error = predicted / measured - 1, in the row's metric):")
    for role in ("fit", "holdout"):
        subset = [run for run, _ in picked if run.role == role]
        print(f" {role} rows ({len(subset)}):")
        print(summary_line("ours", [err(run, ours[run.id][0]) for run in subset]))
        for key, label in (("a", "llm-analysis (a) defaults"), ("b", "llm-analysis (b) README 0.5 / 0.9"),
                           ("c", f"llm-analysis (c) fitted {eff:.3f}")):
            print(summary_line(label, [err(run, peer_values[key][run.id]) for run in subset
                                       if not math.isnan(peer_values[key][run.id])]))

    warm, cold = ours_timing([run for run, _ in picked], args.passes)
    print(f"\nCPU time per evaluation (median of {args.passes} passes over the {len(picked)} rows):")
    print(f"  ours, predict() in process: {warm * 1e3:.3f} ms warm, {cold * 1e3:.3f} ms with the model read afresh")
    for key in ("a", "b", "c"):
        print(f"  llm-analysis train() ({key}), in its venv: {peer[key]['cpu_s_per_eval'] * 1e3:.3f} ms "
              f"(wall {peer[key]['wall_s_per_eval'] * 1e3:.3f} ms)")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
