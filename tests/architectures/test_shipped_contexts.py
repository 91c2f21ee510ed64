"""Every shipped config states the model's context, unless the config its publisher ships leaves it out too: a
context taken from a library default is a window the model may not have (transformers' Mistral default is 131,072
tokens; Mistral Small 3 and Ministral 8B publish 32,768)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import ModelSpec, load_model, model_infos

# Rows whose publisher's own config.json has no context key, so the library default is the model's: Gemma 3 4B and
# 27B (google's text_config omits it; Gemma3TextConfig's 131,072 is the 128K the model card gives), Falcon 7B and 40B
# (FalconConfig's 2,048, their training length), T5 (relative positions; n_positions absent).
PUBLISHED_WITHOUT_CONTEXT = frozenset({"gemma-3-4b", "gemma-3-27b", "falcon-7b", "falcon-40b", "t5-base"})


def _assumed_context(spec: ModelSpec) -> list[str]:
    return [n for n in spec.notes if "is not in the config" in n and ("max_position" in n or "n_positions" in n)]


def test_every_shipped_config_states_its_context_unless_its_publisher_leaves_it_out() -> None:
    defaulted = set()
    for info in model_infos():
        if info.kind != "llm":
            continue
        spec = load_model(info.name)
        assert isinstance(spec, ModelSpec)
        if _assumed_context(spec):
            defaulted.add(info.name)
    assert defaulted == PUBLISHED_WITHOUT_CONTEXT


@pytest.mark.parametrize(("name", "context"), [
    # "max_seq_len": 32768 in the checkpoint's params.json (OpenMOSE/RWKV-LM-RLHF@c394e06d
    # main/tokenizer/mistralsmall3/params.json, beside the Mistral-Small-24B-Instruct-2501 model card)
    ("mistral-small-24b-2501", 32768),
    # the config.json of mistralai/Ministral-8B-Instruct-2410 (subho406/mlstm_kernels@13df8b17
    # mlstm_kernels/utils/benchmark/benchmarks/huggingface_model_configs.py)
    ("ministral-8b-2410", 32768),
    # google/gemma-3-270m's config (safety-research/circuit-tracer@b00048e4 tests/test_attributions_gemma3_nnsight.py)
    ("gemma-3-270m", 32768),
])
def test_the_published_context_is_the_planned_one(name: str, context: int) -> None:
    spec = load_model(name)
    assert isinstance(spec, ModelSpec)
    assert spec.max_context_tokens == context
    assert not _assumed_context(spec)
