"""How much PCIe all-reduce bandwidth each RTX PRO 6000 serving row with TP > 1 would need if it ran as the
calibration reads it (tensor parallelism of every layer: two BF16 all-reduces a layer of every token a step
carries, prompt tokens included), against what NCCL measured on an 8 x RTX PRO 6000 Server Edition host.

The bound is the measured speed's tokens (output tokens a second times ``(I + O) / O``, per replica) times the
bytes a GPU sends per token in a ring all-reduce (``2 L / pp`` all-reduces of its stage, ``2 (tp - 1) / tp`` of a
``hidden x 2``-byte message each: the least any all-reduce algorithm sends without in-network reduction), with no
compute at all. TensorRT-LLM's ``AllReduceStrategy.AUTO`` runs NCCL wherever the GPUs share no NVLink
(NVIDIA/TensorRT-LLM ``cpp/tensorrt_llm/thop/allreduceOp.cpp``, ``ifFallbackToNCCL``: ``!mIsNVLINKSupported``
returns NCCL; ``LOWPRECISION`` only when the user forces it, ``isUsingLowPrecision``), and AIConfigurator's table of
TensorRT-LLM 1.3.0rc20's own all-reduce on that host is NCCL's to within a few percent.

    PYTHONPATH=src .venv/bin/python benchmarks/rtx_tp_allreduce_bound.py   # every RTX row with TP > 1

``need / NCCL`` above 1 means the row's measured speed cannot be reached by TP all-reduces on that host even with
free compute (benchmarks/hardening/stop60_rtxpp.md). Dev tooling; reads no constant it does not print and changes
none.
"""

from __future__ import annotations

from anchorgpu.planner.speed.runs import _model, load_runs

NCCL_BUS_BYTES_PER_S = {2: 36.5e9, 4: 24.0e9, 8: 23.0e9}
"""NCCL 2.29.2 all-reduce bus bandwidth (half, messages of 2^24-2^26 values) on 2, 4 and 8 RTX PRO 6000 Blackwell Server
Edition GPUs: AIConfigurator 0.12.0 (PyPI aiconfigurator-core), ``systems/data/rtx_pro_6000_server/comm/nccl/2.29.2/
nccl_perf.parquet``, op ``all_reduce``, ``busbw = 2 (n-1)/n x 2 x message_size / latency`` (``message_size`` counts
16-bit values): 36.1-37.1, 24.9-25.0 and 23.5-24.1 GB/s; ``trtllm/1.3.0rc20/custom_allreduce_perf.parquet`` on the
same host: 35.9-37.0, 23.3-23.6 and 22.8-23.3 GB/s. The planner's PCIe link is 64 GB/s x 0.8 = 51.2 GB/s."""
PCIE_GEN5_X16_BYTES_PER_S = 64e9
"""PCIe Gen5 x16, one direction (the catalog's 128 GB/s bidirectional, halved)."""


def main() -> None:
    print(f"{'row':28s} {'role':8s} {'need GB/s':>9s} {'/ NCCL':>7s} {'/ PCIe5':>7s}")
    for run in load_runs():
        r = run.row
        if r.get("gpu") != "rtx-pro-6000" or int(r.get("tp", 1)) < 2 or run.metric != "max_output_tokens_per_s":
            continue
        model, tp, pp = _model(r), int(r["tp"]), int(r.get("pp", 1))
        replicas = int(r["gpus"]) // (tp * pp)
        tokens_s = run.value * (r["prompt_tokens"] + r["output_tokens"]) / r["output_tokens"] / replicas
        bytes_per_token = 2 * model.num_layers / pp * 2 * (tp - 1) / tp * model.hidden_size * 2
        need = tokens_s * bytes_per_token
        print(f"{run.id:28s} {r['role']:8s} {need / 1e9:9.1f} {need / NCCL_BUS_BYTES_PER_S[tp]:7.2f} "
              f"{need / PCIE_GEN5_X16_BYTES_PER_S:7.2f}")


if __name__ == "__main__":
    main()
