"""Stop 45 (benchmarks/olmo_fsdp_findings.md): two readings of OLMo-core's training rows, neither refitting anything
nor changing the model.

1. The network restated: each row planned again with ``network_gbit_per_s_per_gpu`` at 400 (as stated), 200 (a
   Google Cloud A3 Mega's one 200 Gb/s NIC a GPU under GPUDirect-TCPXO), 100 and 25 (cuvette's "TCPXO (200
   Gbps/server)" for ai2/augusta read literally, a server's rate shared by its eight GPUs).
2. torchao's float8 casts, as torchao's own roofline counts them (pytorch/ao ``torchao/float8/roofline_utils.py`` at
   086ff72, ``get_float8_mem_sympy``): a linear's input cast 4 bytes an element (amax fused with the previous op, read
   2, write 1 twice: row- and column-major), its weight 6 (amax read 2, then read 2, write 1 twice), its grad_output 4;
   the weight saved from forward to backward. With FSDP's float8 all-gather (OLMo-core's ``Float8Config`` default,
   ``enable_fsdp_float8_all_gather=True``) ``WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather`` casts the 1/N
   shard instead (pytorch/ao ``torchao/float8/fsdp_utils.py`` at 0a4b91d), and FSDP2's two copy-outs move 1-byte
   values: 4 bytes a parameter fewer than ``data_parallel.fsdp2_copies_s`` charges. Timed at the memory bandwidth
   times ``decode_mbu``, as FSDP2's copies and the optimizer are; added to the current prediction.

    PYTHONPATH=src .venv/bin/python benchmarks/olmo_stop45.py
"""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.flops import training_flops_per_token
from anchorgpu.planner.speed.runs import Run, _as_measured, _model, load_runs, predict

ROWS = ("T35", "T36", "OLMO-L3-8B", "OLMO-L3-8B-FP8", "OLMO-13B", "OLMO-13B-FP8", "T37", "T37-FP8")
FP8_ROWS = ("T36", "OLMO-L3-8B-FP8", "OLMO-13B-FP8", "T37-FP8", "TT-8B-128-FP8", "T26")
FP8_ALL_GATHER = {"T36", "OLMO-L3-8B-FP8", "OLMO-13B-FP8", "T37-FP8"}  # OLMo-core: on; torchtitan's configs: off
NETWORKS_GBIT = (400, 200, 100, 25)


def restated(run: Run, **fields: object) -> Run:
    return replace(run, row={**run.row, **fields})


def casts_s(run: Run, fp8_all_gather: bool) -> tuple[float, float, float]:
    """(activation casts, weight casts, FSDP2 copy bytes saved) in seconds a micro-batch, one GPU (TP 1)."""
    r, cal = run.row, calibration()
    m, gpu = _model(r), _as_measured(get_gpu(r["gpu"]), r)
    h, f, heads, kv, hd = m.hidden_size, m.intermediate_size, m.num_attention_heads, m.num_kv_heads, m.head_dim
    # wq, wk, wv, wo, w1, w3, w2 (OLMo-core's and torchtitan's Llama-style blocks; the LM head stays in BF16)
    inputs = 5 * h + heads * hd + f  # K of each linear
    outputs = heads * hd + 2 * kv * hd + 2 * h + 2 * f  # N of each linear
    linear_params = m.num_layers * (2 * h * heads * hd + 2 * h * kv * hd + 3 * h * f)
    model_f, hw_f = training_flops_per_token(m, r["seq_tokens"], recompute=r["recompute"], kind="full",
                                             op_sac=r["recompute"] == "selective")
    forwards = 1.0 + 3.0 * (hw_f / model_f - 1.0)  # forward passes, the recomputed one included
    tokens = r["micro_batch"] * r["seq_tokens"]
    rate = gpu.memory_bandwidth_bytes_per_s * cal.stack(gpu).decode_mbu
    act = tokens * m.num_layers * (4 * inputs * forwards + 4 * outputs) / rate
    weight = 0.0 if fp8_all_gather else 6 * linear_params * forwards / rate
    saved = 4 * linear_params / rate if fp8_all_gather else 0.0
    return act, weight, saved


def main() -> None:
    runs = {run.id: run for run in load_runs()}
    print("network restated (tokens a second a GPU, error against the measured figure):")
    for rid in ROWS:
        run = runs[rid]
        cells = [f"{g} Gb/s {predict(restated(run, network_gbit_per_s_per_gpu=g)) / run.value - 1:+.1%}"
                 for g in NETWORKS_GBIT]
        print(f"  {rid:16s} measured {run.value:>6,.0f}  " + "  ".join(cells))
    print("torchao float8 casts added to the prediction (s a micro-batch):")
    for rid in FP8_ROWS:
        run = runs[rid]
        ag = rid in FP8_ALL_GATHER
        act, weight, saved = casts_s(run, ag)
        before = predict(run)
        tokens = run.row["micro_batch"] * run.row["seq_tokens"]
        after = tokens / (tokens / before + act + weight - saved)
        print(f"  {rid:16s} fp8 all-gather {'on ' if ag else 'off'} activations {act:.3f} weights {weight:.3f} "
              f"copies saved {saved:.3f}  {before:,.0f} ({before / run.value - 1:+.1%}) -> {after:,.0f} "
              f"({after / run.value - 1:+.1%})")


if __name__ == "__main__":
    main()
