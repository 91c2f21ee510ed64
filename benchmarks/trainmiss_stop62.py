"""Stop 62 (benchmarks/hardening/stop62_trainmiss.md): two readings of the remaining dense-training misses, no model
change.

1. torchtitan's own MFU count for the torchtitan-2412 8B context-parallel rows. torchtitan's
   ``get_num_flop_per_token`` (``6 * num_params + 12 * l * h * q * t``, t the whole sequence, embeddings excluded) over
   the H100 BF16 peak (989 TFLOP/s), the figure its logger prints. The paper (arXiv:2410.06511 section 2.1.5) says CP
   reached 262,144 tokens "achieving minor MFU degradation as CP degree increases"; its own Table 5 gives the figures.
2. OLMo-core's 32B twins (T37, T37-FP8): the time a step that is missing from each twin, and what that time would do to
   the other OLMo-core rows if it were a fixed cost once an optimizer step (amortised over their micro-batches).

Run: PYTHONPATH=src python benchmarks/trainmiss_stop62.py
"""

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

H100_BF16_PEAK_FLOP_S = 989e12  # torchtitan's MFU denominator for H100 (torchtitan/utils.py get_peak_flops)
LLAMA31_8B_NON_EMBEDDING_PARAMS = 8_030_261_248 - 128_256 * 4_096  # total minus tok_embeddings
LLAMA31_8B_LAYERS, LLAMA31_8B_HEADS, LLAMA31_8B_HEAD_DIM = 32, 32, 128
OLMO_ROWS = ("T35", "T36", "OLMO-L3-8B", "OLMO-L3-8B-FP8", "OLMO-13B", "OLMO-13B-FP8", "T37", "T37-FP8")


def _step_s(row: dict, tokens_per_s_per_gpu: float) -> float:
    return row["global_batch_tokens"] / (tokens_per_s_per_gpu * row["gpus"])


def _microbatches(row: dict) -> int:
    dp = row["gpus"] // (row["tp"] * row["pp"] * row["cp"])
    return row["global_batch_tokens"] // (dp * row["micro_batch"] * row["seq_tokens"])


def main() -> None:
    cal = calibration()
    runs = {run.row["id"]: run for run in load_runs()}
    print("torchtitan MFU (its own count) for Table 5 / Table 2:")
    for cp in (1, 2, 4, 8):
        row = runs[f"TT-8B-8-CP{cp}"].row
        seq = row["seq_tokens"]
        flop_per_token = 6 * LLAMA31_8B_NON_EMBEDDING_PARAMS + 12 * LLAMA31_8B_LAYERS * LLAMA31_8B_HEADS * (
            LLAMA31_8B_HEAD_DIM * seq
        )
        mfu = flop_per_token * row["value"] / H100_BF16_PEAK_FLOP_S
        print(f"  CP {cp}: seq {seq:>7,}  TPS {row['value']:>5,}  MFU {100 * mfu:4.1f}%")
    print("OLMo-core: missing time a step, and a fixed once-a-step cost amortised:")
    fixed = {}
    for rid in ("T37", "T37-FP8"):
        row = runs[rid].row
        fixed[rid] = _step_s(row, row["value"]) - _step_s(row, predict(runs[rid], cal))
        print(f"  {rid}: measured step {_step_s(row, row['value']):.3f} s, missing {fixed[rid]:.3f} s")
    add_s = fixed["T37"]
    for rid in OLMO_ROWS:
        row = runs[rid].row
        pred_s = _step_s(row, predict(runs[rid], cal))
        meas_s = _step_s(row, row["value"])
        new_s = pred_s + add_s
        print(
            f"  {rid:15s} micro-batches a step {_microbatches(row):4d}  now {100 * (meas_s / pred_s - 1):+6.1f}%  "
            f"with {add_s:.2f} s a step {100 * (meas_s / new_s - 1):+6.1f}%"
        )


if __name__ == "__main__":
    main()
