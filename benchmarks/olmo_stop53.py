"""Stop 53 (benchmarks/olmo_fsdp_findings.md): two more readings of OLMo-core's misses (T37, T37-FP8, OLMO-13B-FP8),
neither refitting anything nor changing the model.

1. The GEMMs themselves. AIConfigurator 0.12.0's measured H100 SXM GEMM table (``systems/data/h100_sxm/gemm/trtllm/
   1.3.0rc20/gemm_perf.parquet``, ``torch_flow``, ``bfloat16`` and per-tensor ``fp8``) timed at every product a
   training micro-batch runs for each OLMo-core model: for each block linear (in -> out) over T tokens, the forward
   (M=T, N=out, K=in), the input gradient (M=T, N=in, K=out) and the weight gradient (M=out, N=in, K=T). The table's
   grid is powers of two and a few multiples (N, K up to 16,384, then 51,200 and 65,536); a shape between grid points is
   interpolated bilinearly in log2(N), log2(K) on TFLOP/s, M the nearest of 4,096 / 8,192 / 16,384 / 32,768. The LM
   head is left out (it stays in BF16 under every FP8 recipe). Read with the AIConfigurator venv's python, which has
   pandas (the planner's venv does not):

    /work/main/benchmarks/.aic-venv/bin/python benchmarks/olmo_stop53.py gemm

2. OLMo-core's loss: ``cross_entropy_loss`` (allenai/OLMo-core ``src/olmo_core/nn/functional/cross_entropy_loss.py``)
   casts the logits to FP32 and, with ``z_loss_multiplier`` set (1e-5 in every OLMo2 script), takes a logsumexp of them
   beside ``F.cross_entropy``; the planner charges no loss term. Bytes a token, V the vocabulary, eager autograd:
   forward cast 2V read + 4V written, log_softmax 4V + 4V, logsumexp 4V; backward nll (dense 4V), log_softmax backward
   4V + 4V read + 4V written, logsumexp backward 4V + 4V, the two gradients summed 8V + 4V, the cast back 4V + 2V: 60V
   bytes (``UNFUSED_LOSS_BYTES_PER_VOCAB``). The fused path (``fused_loss=True``, flash-attn's triton kernel, OLMo-13B.py
   at 09bcd20) moves about 24V. Timed at memory bandwidth x ``decode_mbu`` (as FSDP2's copies and the optimizer are)
   and added to the current prediction of every PyTorch-stack training row without TP, PP or CP:

    PYTHONPATH=src .venv/bin/python benchmarks/olmo_stop53.py loss
"""

from __future__ import annotations

import sys

AIC_GEMM = (
    "/work/main/benchmarks/.aic-venv/lib/python3.11/site-packages/aiconfigurator_core/systems/data/h100_sxm/"
    "gemm/trtllm/1.3.0rc20/gemm_perf.parquet"
)
# hidden, q width, k/v width, FFN width, tokens a micro-batch (measured_runs.json)
SHAPES = {
    "7B (T35/T36)": (4096, 4096, 4096, 11008, 8192),
    "L3-8B (OLMO-L3-8B)": (4096, 4096, 1024, 14336, 8192),
    "13B (OLMO-13B)": (5120, 5120, 5120, 13824, 4096),
    "32B (T37)": (5120, 5120, 1024, 27648, 8192),
}
MEASURED_GAIN = {
    "7B (T35/T36)": 13000 / 10000,
    "L3-8B (OLMO-L3-8B)": 12500 / 9500,
    "13B (OLMO-13B)": 5500 / 4600,
    "32B (T37)": 1800 / 1500,
}
UNFUSED_LOSS_BYTES_PER_VOCAB = 60
FUSED_LOSS_BYTES_PER_VOCAB = 24


def gemm() -> None:
    import numpy as np
    import pandas as pd

    d = pd.read_parquet(AIC_GEMM)
    d = d[d.kernel_source == "torch_flow"].copy()
    d["flops_per_s"] = 2 * d.m * d.n * d.k / (d.latency * 1e-3)
    grid_m = (4096, 8192, 16384, 32768)
    tables = {
        (dt, m): d[(d.gemm_dtype == dt) & (d.m == m)].pivot_table(index="n", columns="k", values="flops_per_s")
        for dt in ("bfloat16", "fp8")
        for m in grid_m
    }

    def bracket(axis: np.ndarray, v: float) -> tuple[int, int, float]:
        la, lv = np.log2(axis), np.log2(v)
        i = int(min(max(np.searchsorted(la, lv), 1), len(la) - 1))
        return i - 1, i, float(min(max((lv - la[i - 1]) / (la[i] - la[i - 1]), 0.0), 1.0))

    def rate(dt: str, m: int, n: int, k: int) -> float:
        tab = tables[(dt, min(grid_m, key=lambda g: abs(np.log2(g / m))))]
        a, b, wn = bracket(np.asarray(tab.index, float), n)
        c, e, wk = bracket(np.asarray(tab.columns, float), k)
        v = tab.values
        return float((1 - wn) * ((1 - wk) * v[a, c] + wk * v[a, e]) + wn * ((1 - wk) * v[b, c] + wk * v[b, e]))

    print("model                  BF16 TFLOP/s  FP8 TFLOP/s  FP8/BF16 GEMMs  measured step FP8 gain")
    for name, (h, q, kv, f, t) in SHAPES.items():
        linears = [(h, q), (h, kv), (h, kv), (q, h), (h, f), (h, f), (f, h)]
        res = {}
        for dt in ("bfloat16", "fp8"):
            flops = seconds = 0.0
            for i, o in linears:
                for m, n, k in ((t, o, i), (t, i, o), (o, i, t)):
                    flops += 2 * m * n * k
                    seconds += 2 * m * n * k / rate(dt, m, n, k)
            res[dt] = flops / seconds
        print(
            f"{name:22s} {res['bfloat16'] / 1e12:10.0f} {res['fp8'] / 1e12:12.0f} {res['fp8'] / res['bfloat16']:15.3f}"
            f" {MEASURED_GAIN[name]:22.3f}"
        )


def loss() -> None:
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.calibration import calibration
    from anchorgpu.planner.speed.runs import _as_measured, _model, load_runs, predict

    cal = calibration()
    for run in load_runs():
        r = run.row
        if r["phase"] != "train" or r.get("train_stack") != "pytorch" or r["tp"] * r["pp"] * r["cp"] != 1:
            continue
        gpu = _as_measured(get_gpu(r["gpu"]), r)
        rate = gpu.memory_bandwidth_bytes_per_s * cal.stack(gpu).decode_mbu
        tokens = r["micro_batch"] * r["seq_tokens"]
        vocab = _model(r).vocab_size
        before = predict(run)
        cells = []
        for per_vocab in (FUSED_LOSS_BYTES_PER_VOCAB, UNFUSED_LOSS_BYTES_PER_VOCAB):
            loss_s = tokens * per_vocab * vocab / rate
            after = tokens / (tokens / before + loss_s)
            cells.append(f"{per_vocab}V {loss_s * 1e3:5.1f} ms {after / run.value - 1:+6.1%}")
        print(
            f"  {run.id:16s} {run.role:7s} V {vocab:>6}  {tokens / before:6.3f} s a micro-batch "
            f"{before / run.value - 1:+6.1%}  ->  " + "  ".join(cells)
        )


if __name__ == "__main__":
    {"gemm": gemm, "loss": loss}[sys.argv[1] if len(sys.argv) > 1 else "loss"]()
