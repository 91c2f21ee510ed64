"""Llama 4 on TensorRT-LLM: the rows with a RoPE cos/sin table reserved a GPU before the KV cache (a candidate,
NOT kept; benchmarks/hardening/stop59_trtmoe.md). Dev tooling; changes no constant and writes nothing.

    PYTHONPATH=src .venv/bin/python benchmarks/llama4_rope_table.py          # the rows that move, and their 25% count

``RopeParams.from_config`` sets ``max_positions = config.max_position_embeddings`` and ``create_rope_const_params``
builds a float32 CUDA tensor of ``max_positions x rotary_dim`` (NVIDIA/TensorRT-LLM
``tensorrt_llm/_torch/attention_backend/interface.py``, stored id 98108503, cached per model once built): Scout's
10,485,760 positions x 128 x 4 B = 5.0 GiB a GPU, Maverick's 1,048,576 = 0.5 GiB, Llama 3.1's 131,072 = 62.5 MiB.
Whether the 1.0-era engine that ran perf-overview built it at that size (an older ``RotaryEmbedding`` computes cos/sin
a step, stored id 6339156867) was not settled. The probe adds it to ``non_torch_bytes`` of the Llama 4 rows.
"""

from __future__ import annotations

import os
import subprocess
import sys


def _errors() -> dict[str, float]:
    if os.environ.get("ROPE_TABLE") == "1":
        import anchorgpu.planner.serving_engine as se
        original = se._engine_footprint

        def with_table(model, fmt, gpu, ov, tp, pp, ep, tokens, seqs, engine="vllm"):  # type: ignore[no-untyped-def]
            weights, prefill, sampler, non_torch, terms = original(model, fmt, gpu, ov, tp, pp, ep, tokens, seqs, engine)
            if model.model_type.startswith("llama4"):
                non_torch += model.max_context_tokens * model.head_dim * 4  # float32 cos/sin, one row a position
                terms = {**terms, "non_torch_bytes": non_torch}
            return weights, prefill, sampler, non_torch, terms
        se._engine_footprint = with_table
    import anchorgpu.planner.speed.runs as runs
    from anchorgpu.planner.speed.calibration import calibration
    from anchorgpu.planner.speed.rows_report import report_rows
    return {f"{row['id']} {row['role']}": 100 * row["error"] for row in report_rows(calibration(), runs.load_runs())}


def main() -> None:
    if os.environ.get("ROPE_TABLE_CHILD"):
        print(repr(_errors()))
        return
    runs = [eval(subprocess.run([sys.executable, __file__], env={**os.environ, "ROPE_TABLE_CHILD": "1",
                                                                 "ROPE_TABLE": flag}, check=True,
                                capture_output=True, text=True).stdout) for flag in ("0", "1")]
    before, after = runs
    moved = [k for k in before if abs(before[k] - after[k]) > 0.05]
    for k in moved:
        print(f"{k:34s} {before[k]:+7.1f} -> {after[k]:+7.1f}")
    for role in ("fit", "holdout"):
        keys = [k for k in before if k.endswith(role)]
        print(f"{role}: within 25% {sum(abs(before[k]) <= 25 for k in keys)} -> {sum(abs(after[k]) <= 25 for k in keys)}"
              f" of {len(keys)}")


if __name__ == "__main__":
    main()
