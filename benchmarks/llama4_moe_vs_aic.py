"""A mixture of experts' routed-expert layer (first written for Llama 4; any shape AIConfigurator's tables hold
since stop 59's ``moeexpert``), the planner's against AIConfigurator's measured one (moe_small_batch_findings.md,
stop 58). Dev tooling; reads no constant it does not print, writes only the CSV below.

    benchmarks/.aic-venv/bin/python benchmarks/llama4_moe_vs_aic.py export          # AIC tables -> /tmp CSV
    PYTHONPATH=src .venv/bin/python benchmarks/llama4_moe_vs_aic.py PL4M-H200-128/128 PL4S-H100-1000/2000

``export`` keeps the rows of aiconfigurator-core 0.12.0's ``systems/data/<gpu>/moe/trtllm/1.3.0rc20/moe_perf.parquet``
with balanced routing, MoE TP 1 (the rows' EP over their TP GPUs); ``compare`` picks the row's model's expert shape
(hidden, expert width, top k, experts). Per row and token count: AIC's fastest kernel for the row's experts, EP = the row's TP and weight
format, against the planner's routed part of one MoE layer at the row's constants: the experts' weight read (the
touched share), their products, the rows falloff (``moe_expert_half_tokens``), under the soft roofline.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

CSV = Path("/tmp/aic_llama4_moe.csv")
AIC = (Path(__file__).parent / ".aic-venv"  # this checkout's AIConfigurator venv (ignored by git)
       / "lib/python3.11/site-packages/aiconfigurator_core/systems/data")
GPU = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "gb200": "gb200", "b200": "b200_sxm"}


def export() -> None:
    import pandas as pd  # only in the AIConfigurator venv
    parts = []
    for gpu in GPU.values():
        d = pd.read_parquet(AIC / gpu / "moe/trtllm/1.3.0rc20/moe_perf.parquet")
        d = d[(d.distribution == "balanced") & (d.moe_tp_size == 1)]
        parts.append(d.assign(gpu=gpu))
    cols = ["gpu", "kernel_source", "moe_dtype", "hidden_size", "inter_size", "topk", "num_tokens", "num_experts",
            "moe_ep_size", "latency"]
    pd.concat(parts)[cols].to_csv(CSV, index=False)


def compare(ids: list[str]) -> None:
    from anchorgpu.planner.speed.calibration import calibration
    from anchorgpu.planner.speed.estimate import serving_setup
    from anchorgpu.planner.speed.rows_report import engine_of
    from anchorgpu.planner.speed.runs import _serve_plan, load_runs
    from anchorgpu.planner.speed.serving import soft_roofline
    from anchorgpu.planner.speed.step_constants import _pair

    cal, table = calibration(), list(csv.DictReader(CSV.open()))
    runs = {run.id: run for run in load_runs()}
    for rid in ids:
        run = runs[rid]
        r, p = run.row, _serve_plan(rid)
        setup = serving_setup(p, prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"],
                              engine=engine_of(run))
        c, _ = _pair(p.model, p.gpu, setup, cal)
        moe = p.model.moe
        assert moe is not None
        layers = moe.num_moe_layers / r["pp"]
        dtype = "nvfp4" if r["weights"] == "nvfp4" else "fp8"
        aic = [x for x in table if x["gpu"] == GPU[r["gpu"]] and int(x["num_experts"]) == moe.num_experts
               and x["moe_dtype"] == dtype and int(x["moe_ep_size"]) == r["tp"]
               and int(x["hidden_size"]) == p.model.hidden_size and int(x["topk"]) == moe.experts_per_token
               and int(x["inter_size"]) == moe.expert_intermediate_size]
        print(f"{rid}: {moe.num_experts} experts, EP {r['tp']}, {dtype}, half {c.expert_half_tokens:.0f} rows")
        for tokens in (16, 64, 256, 1024, 4096, 8192, 16384):
            touched = 1 - c.miss_per_token ** (tokens * c.expert_token_scale)
            flops_s = c.expert_share * tokens * 2 * c.matmul_params / c.split / layers
            rows = tokens * c.expert_token_scale * c.route_share
            extra = (c.expert_half_tokens * touched / rows if rows >= c.expert_tile_rows * touched
                     else c.expert_half_tokens / c.expert_tile_rows)
            products, falloff = flops_s / c.matmul_rate, flops_s / c.expert_rate * extra
            streamed = setup.weights_bytes_per_gpu - setup.lookup_table_bytes_per_gpu  # the step's read
            read = streamed * c.routed_share * touched / c.mem_rate / layers
            ours = soft_roofline(read, products + falloff, c.knee)
            measured = min((float(x["latency"]) for x in aic if int(x["num_tokens"]) == tokens), default=float("nan"))
            print(f"  {tokens:6d} tokens: AIC {measured:.3f} ms, planner {ours * 1e3:.3f} ms (x{ours * 1e3 / measured:.2f};"
                  f" read {read * 1e3:.3f}, products {products * 1e3:.3f}, falloff {falloff * 1e3:.3f})")


if __name__ == "__main__":
    export() if sys.argv[1:] == ["export"] else compare(sys.argv[1:])
