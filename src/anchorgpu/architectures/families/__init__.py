"""One small parser per Hugging Face ``model_type``: config fields → exact parameter counts.

Each parser mirrors the modules transformers (5.24) builds for that model type — the same shapes,
biases, norms and defaults — so ``params_total`` equals ``sum(p.numel() for p in model.parameters())``
with tied embeddings counted once. The blocks they share are in :mod:`._blocks`; dense decoders in
:mod:`.dense`, mixture-of-experts decoders in :mod:`.moe`. Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable

from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families import dense, moe
from anchorgpu.architectures.spec import ModelSpec

__all__ = ["FAMILY_NAMES", "PARSERS", "Parser"]

Parser = Callable[[ConfigReader, str, str], ModelSpec]

FAMILY_NAMES: dict[str, str] = {
    "llama": "Llama",
    "mistral": "Mistral",
    "mixtral": "Mixtral",
    "qwen2": "Qwen2",
    "qwen2_moe": "Qwen2-MoE",
    "qwen3": "Qwen3",
    "qwen3_moe": "Qwen3-MoE",
    "gemma": "Gemma",
    "gemma2": "Gemma 2",
    "gemma3": "Gemma 3",
    "gemma3_text": "Gemma 3",
    "phi3": "Phi-3",
    "deepseek_v2": "DeepSeek-V2",
    "deepseek_v3": "DeepSeek-V3",
    "gpt2": "GPT-2",
    "opt": "OPT",
    "falcon": "Falcon",
    "gpt_neox": "GPT-NeoX",
    "gpt_oss": "gpt-oss",
    "starcoder2": "StarCoder2",
}

PARSERS: dict[str, Parser] = {
    "llama": dense._llama,
    "mistral": dense._mistral,
    "mixtral": moe._mixtral,
    "qwen2": dense._qwen2,
    "qwen2_moe": moe._qwen2_moe,
    "qwen3": dense._qwen3,
    "qwen3_moe": moe._qwen3_moe,
    "gemma": dense._gemma,
    "gemma2": dense._gemma2,
    "gemma3": dense._gemma3,
    "gemma3_text": dense._gemma3_text,
    "phi3": dense._phi3,
    "deepseek_v2": moe._deepseek,
    "deepseek_v3": moe._deepseek,
    "gpt2": dense._gpt2,
    "opt": dense._opt,
    "falcon": dense._falcon,
    "gpt_neox": dense._gpt_neox,
    "gpt_oss": moe._gpt_oss,
    "starcoder2": dense._starcoder2,
}
