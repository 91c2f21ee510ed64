"""Stop 55 (branch bwgemm): the share of the planner's dense peak TensorRT-LLM's measured GEMMs reach, by GPU, precision,
model shape and M (tokens), against the planner's serve-matmul curve at the shipped constants.

Reads AIConfigurator 0.12.0's silicon-measured tables (aiconfigurator_core/systems/data/<gpu>/gemm/trtllm/1.3.0rc20/
gemm_perf.parquet, kernel torch_flow; latency in ms) with pandas (run with benchmarks/.aic-venv/bin/python). A model's
dense linear layers at its TP are TensorRT-LLM's fused products: qkv (n = (q + k + v) / tp, k = h), o (n = h,
k = q / tp), gate_up (n = 2 ffn / tp, k = h), down (n = h, k = ffn / tp). A cell off the grid takes the share of peak
bilinear in (log n, log k) between its four grid neighbours. A step's share is the products' FLOPs over the sum of
their latencies, over the planner's peak (anchorgpu peaks: dense BF16/FP8/FP4 of the catalog).

The planner's curve for the same products (step_constants._build, serving.soft_roofline): time = soft_roofline(bytes /
(bw * decode_mbu), 2 M N K / (peak * eff * shape), roofline_exponent), eff = serve_precision_efficiency(gpu, precision)
and shape = (h / tp) / (h / tp + serve_matmul_half_width); bytes = N K x the format's bits / 8 (FP8 8, NVFP4 4.5,
BF16 16). The planner's constants come in as JSON, printed by the planner's own venv:

    PYTHONPATH=src .venv/bin/python benchmarks/bwgemm_product_share.py --constants > /tmp/consts.json
    benchmarks/.aic-venv/bin/python benchmarks/bwgemm_product_share.py < /tmp/consts.json

Dev tooling (Stop 55, branch bwgemm; benchmarks/speed_accuracy_notes.md).
"""

from __future__ import annotations

import json
import math
import sys

ROOT = "/work/main/benchmarks/.aic-venv/lib/python3.11/site-packages/aiconfigurator_core/systems/data"
DTYPE = {"fp8": "fp8", "fp4": "nvfp4", "bf16": "bfloat16"}
BITS = {"fp8": 8.0, "fp4": 4.5, "bf16": 16.0}
# (h, q_out, kv_out, ffn) of the rows' models (anchorgpu.architectures); Qwen3-235B's dense (attention) products only
MODELS = {"llama-3.1-8b": (4096, 4096, 1024, 14336), "llama-3.3-70b": (8192, 8192, 1024, 28672),
          "llama-3.1-405b": (16384, 16384, 1024, 53248), "qwen3-235b-a22b": (4096, 8192, 512, 0)}
MS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def products(model: str, tp: int) -> list[tuple[int, int]]:
    h, q, kv, ffn = MODELS[model]
    out = [((q + 2 * kv) // tp, h), (h, q // tp)]
    if ffn:
        out += [(2 * ffn // tp, h), (h, ffn // tp)]
    return out


class Table:
    def __init__(self, gpu: str, dtype: str) -> None:
        import pandas as pd

        df = pd.read_parquet(f"{ROOT}/{gpu}/gemm/trtllm/1.3.0rc20/gemm_perf.parquet")
        df = df[(df.gemm_dtype == DTYPE[dtype]) & (df.kernel_source == "torch_flow")]
        self.lat = {(int(r.m), int(r.n), int(r.k)): float(r.latency) for r in df.itertuples()}
        self.ns, self.ks = sorted(df.n.unique()), sorted(df.k.unique())

    def _share(self, m: int, n: int, k: int, peak: float) -> float:
        return 2.0 * m * n * k / (self.lat[(m, n, k)] * 1e-3) / peak

    def share(self, m: int, n: int, k: int, peak: float) -> float:
        def around(grid: list[int], x: int) -> tuple[int, int, float]:
            lo = max(g for g in grid if g <= x)
            hi = min(g for g in grid if g >= x)
            w = 0.0 if hi == lo else (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
            return lo, hi, w
        n0, n1, wn = around(self.ns, n)
        k0, k1, wk = around(self.ks, k)
        s = lambda a, b: self._share(m, a, b, peak)  # noqa: E731
        return ((1 - wn) * (1 - wk) * s(n0, k0) + wn * (1 - wk) * s(n1, k0) + (1 - wn) * wk * s(n0, k1)
                + wn * wk * s(n1, k1))


def measured_step_share(table: Table, model: str, tp: int, m: int, peak: float) -> float:
    flops = lat = 0.0
    for n, k in products(model, tp):
        f = 2.0 * m * n * k
        flops += f
        lat += f / (peak * table.share(m, n, k, peak))
    return flops / lat / peak


def planner_step_share(c: dict, model: str, tp: int, m: int, precision: str) -> float:
    h = MODELS[model][0]
    shape = (h / tp) / (h / tp + c["half_width"])
    eff = c["eff"][precision] * shape
    mem = BITS[precision] / 8.0 / (c["bw"] * c["mbu"])  # per parameter
    comp = 2.0 * m / (c["peak"][precision] * eff)
    big = max(mem, comp)
    p = c["knee"]
    t = big * ((mem / big) ** p + (comp / big) ** p) ** (1 / p)
    return 2.0 * m / t / c["peak"][precision]


AIC_NAME = {"h100-sxm": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm", "gb200": "gb200", "b300": "b300_sxm",
            "gb300": "gb300", "rtx-pro-6000": "rtx_pro_6000_server"}
CASES = [  # (gpu, precision, model, tp): the trtllm-table rows' and Qwen3-235B's dense parts; FP8 on Blackwell too
    *[(g, "fp8", m, tp) for g in ("h100-sxm", "h200", "b200", "gb200", "b300", "gb300")
      for m, tp in (("llama-3.1-8b", 1), ("llama-3.3-70b", 1), ("llama-3.3-70b", 2), ("llama-3.1-405b", 8),
                    ("llama-3.1-405b", 4), ("qwen3-235b-a22b", 8))],
    *[(g, "fp4", m, tp) for g in ("b200", "gb200", "b300", "gb300", "rtx-pro-6000")
      for m, tp in (("llama-3.1-8b", 1), ("llama-3.3-70b", 1), ("llama-3.1-405b", 4), ("qwen3-235b-a22b", 8))],
    *[(g, "bf16", m, tp) for g in ("h100-sxm", "h200", "b200", "gb200")
      for m, tp in (("llama-3.1-8b", 1), ("llama-3.3-70b", 1), ("llama-3.1-405b", 8))],
]


def constants() -> None:
    """The planner's figures per GPU (run with the planner's venv and PYTHONPATH=src)."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.calibration import calibration
    from anchorgpu.planner.speed.links import peak_for

    cal = calibration()
    out = {}
    for name in AIC_NAME:
        gpu, k = get_gpu(name), cal.stack(get_gpu(name))
        out[name] = dict(bw=gpu.memory_bandwidth_bytes_per_s, mbu=k.decode_mbu, half_width=k.serve_matmul_half_width,
                         knee=k.roofline_exponent,
                         peak={p: peak_for(gpu, p).flops_per_s for p in ("bf16", "fp8", "fp4")},
                         eff={p: cal.serve_precision_efficiency(gpu, p) for p in ("bf16", "fp8", "fp4")})
    json.dump(out, sys.stdout)


def main() -> None:
    import pandas as pd

    consts = json.load(sys.stdin)  # per gpu: bw, mbu, peak{prec}, eff{prec}, half_width, knee
    tables: dict[tuple[str, str], Table] = {}
    rows = []
    for gpu, prec, model, tp in CASES:
        key = (AIC_NAME[gpu], prec)
        if key not in tables:
            tables[key] = Table(*key)
        c = consts[gpu]
        for m in MS:
            meas = measured_step_share(tables[key], model, tp, m, c["peak"][prec])
            plan = planner_step_share(c, model, tp, m, prec)
            rows.append((gpu, prec, model, tp, m, meas, plan, meas / plan))
    df = pd.DataFrame(rows, columns=["gpu", "prec", "model", "tp", "m", "aic", "planner", "ratio"])
    pd.set_option("display.width", 250, "display.max_rows", 1000)
    for (prec, model, tp), g in df.groupby(["prec", "model", "tp"], sort=False):
        print(f"\n## {prec} {model} TP{tp}: AIC share of the planner's peak / planner's share / ratio, by M")
        piv = g.pivot(index="gpu", columns="m", values=["aic", "planner", "ratio"]).round(3)
        for what in ("aic", "planner", "ratio"):
            print(what)
            print(piv[what].to_string())
    big = df[(df.m >= 1024) & (df.m <= 8192)]
    print("\n## median over M 1,024-8,192 (ratio = AIC / planner)")
    print(big.groupby(["prec", "gpu"])[["aic", "planner", "ratio"]].median().round(3).to_string())
    print(big.groupby(["prec", "model", "tp", "gpu"])[["aic", "planner", "ratio"]].median().round(3).to_string())
    if len(sys.argv) > 1:
        df.to_csv(sys.argv[1], index=False)


if __name__ == "__main__":
    if sys.argv[1:] == ["--constants"]:
        constants()
    else:
        main()
