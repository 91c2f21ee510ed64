"""State-space and hybrid decoder families: Mamba, Mamba-2, Falcon-Mamba, Jamba, Nemotron-H, Zamba2,
Granite-4.0 hybrid and Qwen3-Next (gated DeltaNet).

Counts mirror the modules transformers 5.24 builds for each ``model_type``; the per-layer kinds say which
layers cache K and V (attention) and which keep a recurrent state per sequence. Pure; stdlib only.
"""

from __future__ import annotations

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families import _hybrid
from anchorgpu.architectures.families._blocks import (
    Core,
    Parser,
    embeddings,
    rms_norms,
)
from anchorgpu.architectures.families._recurrent import (
    SSM_CONTEXT_TOKENS,
    assemble_recurrent,
    mamba2_mixer,
    mamba_mixer,
    time_step_rank,
)
from anchorgpu.architectures.spec import LayerKind, ModelSpec

_PURE_SSM_NOTE = (f"no position limit (a state-space model's state does not grow with the sequence): "
                  f"{SSM_CONTEXT_TOKENS:,} tokens taken as the longest context to plan for")


_ALL_RECURRENT: tuple[LayerKind] = ("recurrent",)


def _ssm_core(r: ConfigReader, *, layers_key: str = "num_hidden_layers") -> Core:
    """Hidden width, layers and vocabulary of an attention-free model (no heads, no position table)."""
    return Core(hidden=r.size("hidden_size"), layers=r.size(layers_key, maximum=100_000), heads=0, kv_heads=0,
                head_dim=0, vocab=r.size("vocab_size"), context=SSM_CONTEXT_TOKENS)


def _mamba(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Mamba and Falcon-Mamba: embeddings, L × (RMS norm + Mamba mixer), final norm. Falcon-Mamba's extra
    B/C/dt norms have no weights. The inner width is ``intermediate_size`` when given, else ``expand · h``."""
    c = _ssm_core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    inner = r.size("intermediate_size", default=r.size("expand", default=2) * c.hidden)
    rec = mamba_mixer(t, h=c.hidden, inner=inner, state=r.size("state_size", default=16),
                      rank=time_step_rank(r, "time_step_rank", c.hidden), kernel=r.size("conv_kernel", default=4),
                      count=c.layers, proj_bias=r.flag("use_bias", default=False),
                      conv_bias=r.flag("use_conv_bias", default=True))
    embeddings(t, c, tied=tied)
    rms_norms(t, c, per_layer=1)
    t.notes.append(_PURE_SSM_NOTE)
    return assemble_recurrent(t, r, c, name, source, tied=tied, ffn=0, gated=False,
                              kinds=_ALL_RECURRENT * c.layers, recurrent=rec, mlp_layers=0)


def _mamba2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Mamba-2 (Codestral Mamba): L × (RMS norm + Mamba-2 mixer), final norm; inner width ``expand · h``
    must equal ``num_heads · head_dim`` (transformers refuses the config otherwise)."""
    c = _ssm_core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    heads, head_dim = r.size("num_heads", default=128), r.size("head_dim", default=64)
    inner = r.size("expand", default=2) * c.hidden
    if heads * head_dim != inner:
        raise r.fail("num_heads", f"times head_dim ({heads} × {head_dim}) must equal expand × hidden_size ({inner})")
    rec = mamba2_mixer(t, h=c.hidden, heads=heads, head_dim=head_dim, groups=r.size("n_groups", default=8),
                       state=r.size("state_size", default=128), kernel=r.size("conv_kernel", default=4),
                       count=c.layers, proj_bias=r.flag("use_bias", default=False),
                       conv_bias=r.flag("use_conv_bias", default=True))
    embeddings(t, c, tied=tied)
    rms_norms(t, c, per_layer=1)
    t.notes.append(_PURE_SSM_NOTE)
    return assemble_recurrent(t, r, c, name, source, tied=tied, ffn=0, gated=False,
                              kinds=_ALL_RECURRENT * c.layers, recurrent=rec, mlp_layers=0)


FAMILY_NAMES: dict[str, str] = {
    "mamba": "Mamba",
    "mamba2": "Mamba-2",
    "falcon_mamba": "Falcon-Mamba",
    "jamba": "Jamba",
    "nemotron_h": "Nemotron-H",
    "granitemoehybrid": "Granite-4.0 hybrid",
    "qwen3_next": "Qwen3-Next",
    "zamba2": "Zamba2",
}

PARSERS: dict[str, Parser] = {
    "mamba": _mamba,
    "mamba2": _mamba2,
    "falcon_mamba": _mamba,
    "jamba": _hybrid.jamba,
    "nemotron_h": _hybrid.nemotron_h,
    "granitemoehybrid": _hybrid.granitemoehybrid,
    "qwen3_next": _hybrid.qwen3_next,
    "zamba2": _hybrid.zamba2,
}

_MAMBA_READS = frozenset({"hidden_size", "num_hidden_layers", "vocab_size", "intermediate_size", "expand",
                          "state_size", "time_step_rank", "conv_kernel", "use_bias", "use_conv_bias",
                          "tie_word_embeddings"})

# Keys of the shared count-changing list that these families understand although they change no count
# (chunk sizes, activations, kernel switches, time-step ranges; Mamba-2's time_step_rank is unused by its mixer).
_NEUTRAL = frozenset({"mamba_chunk_size", "mamba_hidden_act", "mamba_dt_min", "mamba_dt_max", "mamba_dt_limit",
                      "mamba_dt_init_floor", "mamba_ssm_cache_dtype", "ssm_state_dtype", "mamba_ssm_dtype"})

READS: dict[str, frozenset[str]] = {
    "mamba": _MAMBA_READS,
    "falcon_mamba": _MAMBA_READS,
    "mamba2": frozenset({"hidden_size", "num_hidden_layers", "vocab_size", "num_heads", "head_dim", "expand",
                         "n_groups", "state_size", "conv_kernel", "use_bias", "use_conv_bias", "tie_word_embeddings",
                         "time_step_rank"}),
    "jamba": frozenset({"attn_layer_period", "attn_layer_offset", "expert_layer_period", "expert_layer_offset",
                        "num_experts", "num_experts_per_tok", "intermediate_size", "mamba_expand", "mamba_d_state",
                        "mamba_dt_rank", "mamba_d_conv", "mamba_proj_bias", "mamba_conv_bias", "sliding_window",
                        "tie_word_embeddings"}),
    "nemotron_h": frozenset({"layers_block_type", "layer_types", "hybrid_override_pattern", "head_dim",
                             "mamba_num_heads", "mamba_head_dim", "n_groups", "mamba_n_groups", "ssm_state_size",
                             "conv_kernel", "mamba_d_conv", "use_bias", "use_conv_bias", "mamba_conv_bias",
                             "intermediate_size", "mlp_bias", "n_routed_experts", "num_local_experts",
                             "num_experts_per_tok", "moe_intermediate_size", "moe_latent_size",
                             "moe_shared_expert_intermediate_size", "num_nextn_predict_layers",
                             "tie_word_embeddings", "mamba_proj_bias", "mamba_expand",
                             "layer_types=linear_attention", "layer_types=full_attention",
                             "layer_types=mlp", "layer_types=moe", "layer_types=mamba", "layer_types=attention"}),
    "granitemoehybrid": frozenset({"layer_types", "layer_types=mamba", "layer_types=attention",
                                   "layer_types=linear_attention", "layer_types=full_attention", "attention_bias",
                                   "mamba_expand", "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state",
                                   "mamba_d_conv", "mamba_proj_bias", "mamba_conv_bias", "num_local_experts",
                                   "num_experts_per_tok", "intermediate_size", "shared_intermediate_size",
                                   "tie_word_embeddings"}),
    "qwen3_next": frozenset({"layer_types", "layer_types=linear_attention", "layer_types=full_attention",
                             "full_attention_interval", "attention_bias", "head_dim", "linear_num_key_heads",
                             "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                             "linear_conv_kernel_dim", "num_experts", "num_experts_per_tok", "decoder_sparse_step",
                             "mlp_only_layers", "intermediate_size", "moe_intermediate_size",
                             "shared_expert_intermediate_size", "tie_word_embeddings"}),
    "zamba2": frozenset({"layers_block_type", "hidden_size", "num_attention_heads", "num_key_value_heads",
                         "intermediate_size", "add_bias_linear", "num_mem_blocks", "adapter_rank",
                         "use_shared_attention_adapter", "mamba_expand", "n_mamba_heads", "mamba_ngroups",
                         "mamba_d_state", "mamba_d_conv", "use_conv_bias", "tie_word_embeddings",
                         "use_long_context", "mamba_headdim"}),
}
READS = {mt: keys | _NEUTRAL for mt, keys in READS.items()}
"""Per model type, the count-changing config keys its parser reads (``layer_types=VALUE`` for layer types)."""

CLASSES: dict[str, str] = {
    "MambaForCausalLM": "mamba",
    "Mamba2ForCausalLM": "mamba2",
    "FalconMambaForCausalLM": "falcon_mamba",
    "JambaForCausalLM": "jamba",
    "NemotronHForCausalLM": "nemotron_h",
    "GraniteMoeHybridForCausalLM": "granitemoehybrid",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Zamba2ForCausalLM": "zamba2",
}
"""``architectures`` class name → the model type it is loaded as."""
