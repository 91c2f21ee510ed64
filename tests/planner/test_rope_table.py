"""The RoPE cos/sin table a serving engine builds on every GPU at load (``planner/data/rope_tables.json``).

TensorRT-LLM's PyTorch backend builds it in float32 for every position up to the config's ``max_position_embeddings``
(``_torch/attention_backend/interface.py`` ``RopeParams.from_config`` / ``create_rope_const_params``), once per
model (shared by every layer with the same RoPE settings), before ``KvCacheCreator`` sizes the cache; vLLM's
``RotaryEmbedding`` keeps a ``cos_sin_cache`` buffer of the same shape in the model's 16-bit dtype. Llama 4 Scout's
config gives 10,485,760 positions (``architectures/data/models/llama-4-scout-17b-16e.json``), so its table is
10,485,760 x 128 x 4 B = 5 GiB a GPU under TensorRT-LLM, which the KV cache does not get.
"""

from __future__ import annotations

import dataclasses

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.memory import rope_table_bytes, rotary_dims

GIB = 2**30


def _pair(engine: str, model_name: str = "llama-4-scout-17b-16e") -> tuple[object, object]:
    """The plan of ``model_name`` on 4 H100 (TP 4) and of the same model with an 8,192-position config."""
    model = load_model(model_name)
    short = dataclasses.replace(model, max_context_tokens=8192)
    w = Workload(engine=engine, prompt_tokens=1000, output_tokens=1000)  # type: ignore[arg-type]
    return tuple(plan(m, w, gpu=get_gpu("h100-sxm"), layout=Layout(gpus=4, tp=4))  # type: ignore[return-value]
                 for m in (model, short))


@pytest.mark.parametrize(("engine", "bytes_per_value"), [("trtllm", 4), ("vllm", 2)])
def test_the_table_spans_the_configs_positions_at_the_engines_dtype(engine: str, bytes_per_value: int) -> None:
    full, short = _pair(engine)
    table = full.breakdown["rope_table_bytes"]  # type: ignore[attr-defined]
    assert table == 10_485_760 * 128 * bytes_per_value
    assert short.breakdown["rope_table_bytes"] == 8192 * 128 * bytes_per_value  # type: ignore[attr-defined]
    # the rest of the engine's footprint is the model's, whatever its position count
    assert full.breakdown["non_torch_bytes"] == short.breakdown["non_torch_bytes"]  # type: ignore[attr-defined]


def test_tensorrt_llm_sizes_its_kv_cache_after_the_table() -> None:
    """TensorRT-LLM gives the KV cache a share (0.9 by default) of what is free after the table; vLLM's budget is a
    share of the whole memory, so its KV cache loses the table itself."""
    full, short = _pair("trtllm")
    lost = short.breakdown["kv_cache_capacity_bytes"] - full.breakdown["kv_cache_capacity_bytes"]  # type: ignore[attr-defined]
    table_gap = full.breakdown["rope_table_bytes"] - short.breakdown["rope_table_bytes"]  # type: ignore[attr-defined]
    assert lost == pytest.approx(0.9 * table_gap, abs=2)
    full, short = _pair("vllm")
    lost = short.breakdown["kv_cache_capacity_bytes"] - full.breakdown["kv_cache_capacity_bytes"]  # type: ignore[attr-defined]
    assert lost == full.breakdown["rope_table_bytes"] - short.breakdown["rope_table_bytes"]  # type: ignore[attr-defined]
    assert lost > 2 * GIB


def test_sglang_is_not_charged_a_table_it_was_not_read_for() -> None:
    full, _ = _pair("sglang")
    assert full.breakdown["rope_table_bytes"] == 0  # type: ignore[attr-defined]


def test_mla_rotates_its_rope_part_only() -> None:
    """DeepSeek-R1 ropes 64 of each head's 192 query/key values (``qk_rope_head_dim``) over 163,840 positions."""
    r1 = load_model("deepseek-r1")
    assert rotary_dims(r1) == 64
    assert rope_table_bytes(r1, bytes_per_value=4) == 163_840 * 64 * 4
