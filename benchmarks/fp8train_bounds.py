"""Stop 59 (branch fp8train, benchmarks/hardening/stop59_fp8train.md): how large torchao's float8 work would have to
be to close OLMo-core's FP8 misses, and what that size does to the FP8 rows of the same recipe that fit.

For each BF16/FP8 twin of one stack, one model and one layout (OLMo-core's 7B, Llama 3 8B shape, 13B and 32B;
torchtitan's 8B on 128 H100), seconds a micro-batch on one GPU: measured (tokens a micro-batch over the row's tokens a
second a GPU), planned (the same at the shipped calibration), the time the plan lacks, and the FP8 twin's part that its
BF16 twin does not also lack (the only part an FP8-only mechanism can explain). That part is then written three ways:

1. as a multiple of torchao's activation casts (``olmo_stop45.casts_s``: torchao's roofline, 4 bytes an element of
   each Float8Linear's input and grad_output; pytorch/ao ``torchao/float8/roofline_utils.py`` at 086ff72);
2. as bytes a linear parameter a micro-batch (a weight-side cost: casts, transposes, layout copies of the weights);
3. as the FP8 products' efficiency it would imply (planned FP8 product seconds over planned plus the gap).

A mechanism of form 1 or 2 is a per-element or per-parameter count, so one count has to serve the twins that fit
and the twins that miss; the script prints the multiple each row needs.

    PYTHONPATH=src .venv/bin/python benchmarks/fp8train_bounds.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.micro_step import _step_shape
from anchorgpu.planner.speed.runs import _as_measured, _model, load_runs, predict

sys.path.insert(0, str(Path(__file__).resolve().parent))
from olmo_stop45 import casts_s  # noqa: E402  (torchao's roofline counts, stop 45)

PAIRS = (("T35", "T36"), ("OLMO-L3-8B", "OLMO-L3-8B-FP8"), ("OLMO-13B", "OLMO-13B-FP8"), ("T37", "T37-FP8"),
         ("TT-8B-128-BF16", "TT-8B-128-FP8"))


def seconds(run) -> tuple[float, float]:
    """(measured, planned) seconds a micro-batch on one GPU."""
    tokens = run.row["micro_batch"] * run.row["seq_tokens"]
    return tokens / run.value, tokens / predict(run)


def fp8_products_s(run) -> float:
    """Planned seconds a micro-batch of the block products at the FP8 rate (TP 1 rows; the LM head left out)."""
    r, cal = run.row, calibration()
    m, gpu = _model(r), _as_measured(get_gpu(r["gpu"]), r)
    sh = _step_shape(m, gpu, cal, r["seq_tokens"], r["recompute"], "full", r["precision"],
                     r.get("attention_kernel", "flash"), r.get("train_stack", "megatron"))
    h = m.hidden_size
    eff = sh.mm_peak_eff * h / (h + sh.k.train_matmul_half_width)
    tokens = r["micro_batch"] * r["seq_tokens"]
    return (sh.matmul_f - sh.head_f) * tokens / (sh.choice.flops_per_s * eff)


def linear_params(run) -> float:
    m = _model(run.row)
    h, f, heads, kv, hd = m.hidden_size, m.intermediate_size, m.num_attention_heads, m.num_kv_heads, m.head_dim
    return m.num_layers * (2 * h * heads * hd + 2 * h * kv * hd + 3 * h * f)


def main() -> None:
    runs = {run.id: run for run in load_runs()}
    cal = calibration()
    print("s a micro-batch, one GPU: measured / planned / lacking (BF16 | FP8); FP8-only gap; what would close it")
    for bf, fp in PAIRS:
        mb, pb = seconds(runs[bf])
        mf, pf = seconds(runs[fp])
        only = (mf - pf) - (mb - pb)
        act, _, _ = casts_s(runs[fp], fp8_all_gather=False)
        r = runs[fp].row
        gpu = _as_measured(get_gpu(r["gpu"]), r)
        rate = gpu.memory_bandwidth_bytes_per_s * cal.stack(gpu).decode_mbu
        per_param = only * rate / linear_params(runs[fp])
        prod = fp8_products_s(runs[fp])
        print(f"  {fp:15s} BF16 {mb:.3f}/{pb:.3f}/{mb - pb:+.3f} | FP8 {mf:.3f}/{pf:.3f}/{mf - pf:+.3f}  "
              f"FP8-only {only:+.3f} s; torchao casts {act:.3f} s -> x{only / act:+.2f} of them; "
              f"{per_param:+.1f} B a linear parameter; FP8 products {prod:.3f} s -> efficiency x{prod / (prod + only):.3f}")


if __name__ == "__main__":
    main()
