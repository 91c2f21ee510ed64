"""What InferenceMAX's TensorRT-LLM gpt-oss-120b DEP rows imply per rank (stop62_dep2.md): the sequences in flight
by Little's law, each rank's decode step, the HBM floor of the bytes a uniformly routed step must stream on one rank,
and the time a layer has left for everything else once that floor is paid.

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_dep_floor.py

Inputs, by source:
* the records of InferenceMAX's ``agg_bmk.json`` (workflow run 20764588467, gminneci/mantile
  reconcile/sources/inferencemax/raw/run_20764588467/agg_bmk.json @ 1d3c259): ``output_tput_per_gpu``,
  ``mean_e2el``, ``mean_ttft``, ``mean_tpot`` of each row (copied below);
* the expert bytes as TensorRT-LLM lays them out for its TRTLLM-gen MXFP4 runner: the intermediate width rounded up
  to 128, the input hidden width to 512 (``MXFP4WeightTRTLLMGenFusedMoEMethod`` in
  ``tensorrt_llm/_torch/modules/fused_moe/quantization.py``: ``weight_alignment`` 128, ``input_hidden_alignment``
  512), 4 bits a value plus one 8-bit scale per 32 (MXFP4);
* the non-expert weights the step streams: attention, router and LM head at 16 bits (not the input embedding, a
  gather of the batch's rows); the model's own parameter counts;
* B200's HBM peak from the GPU catalog, and the planner's chunk-step share of the TPOT (``trtllm_dep_terms.py``), which
  is taken off the measured TPOT to leave the decode step.

Dev tooling: reads no calibrated constant, changes nothing.
"""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu

# id suffix: (GPUs, EP, output_tput_per_gpu tok/s, mean_e2el s, mean_ttft s, mean_tpot s, planner's chunk share s)
RECORDS: dict[str, tuple[int, int, float, float, float, float, float]] = {
    "1k-1k-DEP2-C64": (2, 2, 5409.86, 5.2528, 0.1413, 0.0055468, 0.00029),
    "1k-1k-DEP2-C128": (2, 2, 8540.14, 6.6600, 0.1855, 0.0070421, 0.00057),
    "1k-1k-DEP4-C64": (4, 4, 2973.76, 4.7817, 0.1650, 0.0050116, 0.00014),
    "1k-1k-TP1-C128": (1, 1, 9671.44, 11.8891, 0.1199, 0.0128024, 0.00129),
    "1k-8k-DEP2-C64": (2, 2, 4741.15, 48.4318, 0.2024, 0.0065300, 0.00004),
    "1k-8k-DEP2-C128": (2, 2, 8995.36, 50.8373, 0.2404, 0.0068687, 0.00007),
    "8k-1k-DEP2-C64": (2, 2, 3174.81, 9.0885, 0.5592, 0.0092565, 0.00213),
    "8k-1k-DEP2-C128": (2, 2, 4361.41, 13.2155, 0.8537, 0.0134439, 0.00432),
}
MXFP4_BYTES_PER_VALUE = (4 + 8 / 32) / 8


def _round_up(x: int, to: int) -> int:
    return -(-x // to) * to


def main() -> None:
    model, gpu = load_model("gpt-oss-120b", offline=True), get_gpu("b200")
    moe, hidden = model.moe, model.hidden_size
    assert moe is not None
    inter, hid_in = _round_up(moe.expert_intermediate_size, 128), _round_up(hidden, 512)
    expert_bytes = (2 * inter * hid_in + hid_in * inter) * MXFP4_BYTES_PER_VALUE  # FC1 (gate, up) and FC2
    streamed_dense = 2.0 * (model.params.attention + model.params.router + model.params.head)
    peak = gpu.memory_bandwidth_bytes_per_s
    layers, experts, k = model.num_layers, moe.num_experts, moe.experts_per_token
    for row, (gpus, ep, tput, e2el, ttft, tpot, chunk) in RECORDS.items():
        in_flight = tput * gpus * tpot  # Little's law: decoding sequences = output tokens/s x seconds a token
        out_len = (e2el - ttft) / tpot + 1
        tokens = in_flight  # every rank's experts serve the EP group's tokens (all of them at TP 1)
        local = experts // ep
        touched = 1 - (1 - k / experts) ** tokens  # a local expert picked by at least one token (uniform routing)
        read = local * expert_bytes * touched * layers + streamed_dense
        floor_s = read / peak
        step_s = tpot - chunk
        left_us = (step_s - floor_s) / layers * 1e6
        print(f"IMT-OSS-B200-{row:16s} in flight {in_flight:5.1f} ({in_flight / gpus:4.1f} a rank), output "
              f"{out_len:6.0f} tokens; decode step {step_s * 1e3:5.2f} ms; streamed {read / 1e9:4.1f} GB (experts "
              f"touched {touched:.2f}) = {floor_s * 1e3:4.2f} ms at HBM peak; left {left_us:5.1f} us a layer")


if __name__ == "__main__":
    main()
