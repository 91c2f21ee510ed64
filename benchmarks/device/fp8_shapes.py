"""The FP8 gain of torchao's tensorwise recipe at the OLMo-core models' linear shapes, products only (stop 59,
benchmarks/hardening/stop59_fp8train.md). Not yet run: no GPU was lent to the task that wrote it.

Question it settles: OLMo-core's 13B and 32B FP8 twins lack 0.035 s and 0.28 s a micro-batch more than their BF16
twins, which would be the FP8 products at 0.90 and 0.88 of the rate the 7B's and Llama 3 8B's twins fit at
(``benchmarks/fp8train_bounds.py``). AIConfigurator's measured H100 table (stop 53) has the FP8 products faster at
h = 5,120 than at 4,096, but it does not say whether its kernels accumulate in fast mode; torchao's
``Float8LinearConfig`` runs the output product with ``use_fast_accum=True`` and the grad_input and grad_weight
products with it off (pytorch/ao ``torchao/float8/config.py``: ``gemm_config_output = Float8GemmConfig(use_fast_accum=
True)``, the other two ``Float8GemmConfig()``), i.e. two thirds of the FP8 FLOPs with the split accumulator. This
times each block linear of the four models in its three roles with the operand layouts ``torch._scaled_mm`` needs
(row-major A, column-major B), BF16 against FP8 as torchao runs it and FP8 with fast accumulation throughout.

    python3 benchmarks/device/fp8_shapes.py OUT.json      # torch only; about 20 s on an H100
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h200_measure import timed  # noqa: E402  (one CUDA-event timer for every device script)

# (hidden, ffn, heads, kv heads, head dim, tokens a micro-batch): OLMo-core's scripts as the rows state them
MODELS = {
    "olmo2-7b (T35/T36)": (4096, 11008, 32, 32, 128, 8192),
    "llama3-8b shape (OLMO-L3-8B)": (4096, 14336, 32, 8, 128, 8192),
    "olmo2-13b (OLMO-13B)": (5120, 13824, 40, 40, 128, 4096),
    "olmo2-32b (T37)": (5120, 27648, 40, 8, 128, 8192),
}


def linears(h: int, f: int, heads: int, kv: int, hd: int) -> list[tuple[str, int, int, int]]:
    """(name, K, N, count) of a block's linears: wq, wk, wv, wo, w1, w3, w2."""
    return [("wq", h, heads * hd, 1), ("wkv", h, kv * hd, 2), ("wo", heads * hd, h, 1), ("w13", h, f, 2),
            ("w2", f, h, 1)]


def roles(m: int, k: int, n: int):
    """(role, A shape, B shape) of output = x W^T, grad_input = g W, grad_weight = g^T x (torchao's three)."""
    return [("output", (m, k), (k, n)), ("grad_input", (m, n), (n, k)), ("grad_weight", (n, m), (m, k))]


def main(out: str) -> None:
    dev = torch.device("cuda")
    one = torch.tensor(1.0, device=dev)
    rows, summary = [], {}
    for model, (h, f, heads, kv, hd, m) in MODELS.items():
        totals = {"bf16": 0.0, "fp8_torchao": 0.0, "fp8_fast": 0.0}
        for name, k, n, count in linears(h, f, heads, kv, hd):
            for role, (am, ak), (bk, bn) in roles(m, k, n):
                a = torch.randn(am, ak, device=dev, dtype=torch.bfloat16)
                b = torch.randn(bn, bk, device=dev, dtype=torch.bfloat16).t()  # column-major (bk, bn)
                a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
                s_bf16 = timed(lambda a=a, b=b: a @ b)
                fast_torchao = role == "output"  # torchao: fast accumulation for the output product only
                s_ao = timed(lambda a8=a8, b8=b8, fast=fast_torchao: torch._scaled_mm(
                    a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast))
                s_fast = timed(lambda a8=a8, b8=b8: torch._scaled_mm(
                    a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True))
                flops = 2.0 * am * ak * bn
                rows.append({"model": model, "linear": name, "role": role, "m": am, "k": ak, "n": bn, "count": count,
                             "bf16_s": s_bf16, "fp8_torchao_s": s_ao, "fp8_fast_s": s_fast,
                             "bf16_tflops": flops / s_bf16 / 1e12, "fp8_torchao_tflops": flops / s_ao / 1e12})
                totals["bf16"] += count * s_bf16
                totals["fp8_torchao"] += count * s_ao
                totals["fp8_fast"] += count * s_fast
        summary[model] = {**totals, "gain_torchao": totals["bf16"] / totals["fp8_torchao"],
                          "gain_fast": totals["bf16"] / totals["fp8_fast"]}
        print(f"{model:30s} a block's products: BF16 {totals['bf16'] * 1e3:.2f} ms, FP8 as torchao "
              f"{totals['fp8_torchao'] * 1e3:.2f} ms (x{summary[model]['gain_torchao']:.3f}), FP8 fast accumulation "
              f"{totals['fp8_fast'] * 1e3:.2f} ms (x{summary[model]['gain_fast']:.3f})", flush=True)
    meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "cuda": torch.version.cuda}
    with open(out, "w") as fh:
        json.dump({"meta": meta, "summary": summary, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fp8_shapes.json")
