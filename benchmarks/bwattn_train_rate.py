"""Stop 62 (branch bwtrain): the share of each GPU's dense BF16 peak fused context attention reaches at training's
shapes, by GPU and head size, from AIConfigurator 0.12.0's silicon-measured context-attention tables, and its ratio to
the Hopper reference (H100 SXM and H200: the GPUs ``attention_efficiency`` and ``attention_head_dim_rate``'s Hopper
figures rest on).

Reads ``aiconfigurator_core/systems/data/<gpu>/attention/<engine>/<version>/context_attention_perf.parquet`` with
pandas (run with benchmarks/.aic-venv/bin/python). Cells: BF16 attention over a BF16 cache, no window (window_size 0),
a training micro-batch's shape: isl (the sequence) 4,096-16,384, batch x isl 8,192-65,536 tokens, at least 8 query
heads (a rank's heads at the rows' TP: gpt-oss-120b 64, Llama 3 8B 32, Llama 3 70B 64 / TP, 405B 128 / TP 8). A cell's
rate: causal FLOPs 4 b h d isl (isl + 1) / 2 over its latency, over the catalog's dense BF16 peak (989 TFLOP/s H100 and
H200, 2,250 B200 and B300, 2,500 GB200 and GB300). Per (engine, kernel, GPU, head size): the median share over the
cells; the ratio to the reference: the median over the cells of the cell's share over the mean of H100's and H200's
share at the same cell (same batch, isl, heads, head size) in the same engine.

    benchmarks/.aic-venv/bin/python benchmarks/bwattn_train_rate.py

Dev tooling (Stop 62, branch bwtrain; benchmarks/hardening/stop62_bwtrain.md).
"""

from __future__ import annotations

ROOT = "/work/main/benchmarks/.aic-venv/lib/python3.11/site-packages/aiconfigurator_core/systems/data"
PEAK_BF16 = {"h100_sxm": 989e12, "h200_sxm": 989e12, "b200_sxm": 2250e12, "gb200": 2500e12, "b300_sxm": 2250e12,
             "gb300": 2500e12}
REFERENCE = ("h100_sxm", "h200_sxm")
# (engine/version, Hopper kernel, Blackwell kernel): TensorRT-LLM runs the same FMHA dispatch on both families
ENGINES = (("trtllm/1.3.0rc20", "torch_flow", "torch_flow"),
           ("vllm/0.24.0", "vllm_flash_attn_fa3", "vllm_flashinfer_trtllmprefill"),
           ("sglang/0.5.14", "fa3", "trtllm_mha"))
KEY = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim"]


def cells(gpu: str, engine: str, kernel: str):  # noqa: ANN201 (pandas frame)
    import pandas as pd

    df = pd.read_parquet(f"{ROOT}/{gpu}/attention/{engine}/context_attention_perf.parquet")
    df = df[(df.kernel_source == kernel) & (df.attn_dtype == "bfloat16") & (df.kv_cache_dtype == "bfloat16")
            & (df.window_size == 0) & (df.isl >= 4096) & (df.isl <= 16384) & (df.batch_size * df.isl >= 8192)
            & (df.batch_size * df.isl <= 65536) & (df.num_heads >= 8)]
    flops = 4.0 * df.batch_size * df.num_heads * df.head_dim * df.isl * (df.isl + 1) / 2.0
    df = df.assign(share=flops / (df.latency * 1e-3) / PEAK_BF16[gpu])
    return df.groupby(KEY, as_index=False).share.median()


def main() -> None:
    import pandas as pd

    pd.set_option("display.width", 250)
    out = []
    for engine, hopper_kernel, blackwell_kernel in ENGINES:
        frames = {g: cells(g, engine, hopper_kernel if g in REFERENCE else blackwell_kernel) for g in PEAK_BF16}
        ref = frames[REFERENCE[0]].merge(frames[REFERENCE[1]], on=KEY, suffixes=("_a", "_b"))
        ref = ref.assign(ref=(ref.share_a + ref.share_b) / 2.0)[[*KEY, "ref"]]
        for gpu, df in frames.items():
            both = df.merge(ref, on=KEY)
            both = both.assign(ratio=both.share / both.ref)
            for d, g in both.groupby("head_dim"):
                out.append((engine.split("/")[0], gpu, int(d), len(g), g.share.median(), g.ratio.median()))
    table = pd.DataFrame(out, columns=["engine", "gpu", "head_dim", "cells", "share", "ratio_to_hopper"])
    print("## per engine: median share of the BF16 dense peak, and median per-cell ratio to the Hopper reference")
    print(table.round(3).to_string(index=False))
    print("\n## ratio to the Hopper reference, by head size (rows) and GPU (columns), TensorRT-LLM torch_flow")
    trt = table[table.engine == "trtllm"]
    print(trt.pivot(index="head_dim", columns="gpu", values="ratio_to_hopper").round(3).to_string())
    print("\n## the same, median over the three engines")
    print(table.groupby(["head_dim", "gpu"]).ratio_to_hopper.median().unstack().round(3).to_string())
    print("\n## share of the BF16 dense peak, TensorRT-LLM torch_flow")
    print(trt.pivot(index="head_dim", columns="gpu", values="share").round(3).to_string())


if __name__ == "__main__":
    main()
