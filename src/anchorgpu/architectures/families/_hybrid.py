"""Hybrid decoders: attention on some layers, a recurrent mixer (Mamba, Mamba-2, gated DeltaNet) on the others.

Jamba, Nemotron-H, Granite-4.0 hybrid, Qwen3-Next and Zamba2, counted as transformers 5.24 builds them; exported
through :mod:`.ssm`. Pure; stdlib only.
"""

from __future__ import annotations

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import (
    Core,
    core_shape,
    embeddings,
    gated_mlp,
    gqa,
    plain_mlp,
    read_top_k,
    rms_norms,
)
from anchorgpu.architectures.families._recurrent import (
    assemble_recurrent,
    gated_deltanet_mixer,
    layer_types,
    mamba2_mixer,
    mamba_mixer,
    ssm_dtype_bytes,
    time_step_rank,
)
from anchorgpu.architectures.spec import LayerKind, ModelSpec, MoeSpec

__all__ = ["granitemoehybrid", "jamba", "nemotron_h", "qwen3_next", "zamba2"]


def jamba(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Jamba: attention on layers ``i % attn_layer_period == attn_layer_offset``, Mamba elsewhere; MoE MLP on
    ``i % expert_layer_period == expert_layer_offset``, dense SwiGLU elsewhere; two RMS norms per layer."""
    c = core_shape(r, context_default=262144)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    period, offset = r.size("attn_layer_period", default=8), r.size("attn_layer_offset", default=4, minimum=0)
    e_period, e_offset = r.size("expert_layer_period", default=2), r.size("expert_layer_offset", default=1, minimum=0)
    if offset >= period:
        raise r.fail("attn_layer_offset", f"must be smaller than attn_layer_period ({period}), got {offset}")
    if e_offset >= e_period:
        raise r.fail("expert_layer_offset", f"must be smaller than expert_layer_period ({e_period}), got {e_offset}")
    kinds: list[LayerKind] = ["attention" if i % period == offset else "recurrent" for i in range(c.layers)]
    n_exp = r.size("num_experts", default=16)
    moe_layers = sum(1 for i in range(c.layers) if i % e_period == e_offset) if n_exp > 1 else 0
    ffn = r.size("intermediate_size", default=14336)
    n_attn = kinds.count("attention")
    embeddings(t, c, tied=tied)
    gqa(t, replace_layers(c, n_attn))
    rec = mamba_mixer(t, h=c.hidden, inner=r.size("mamba_expand", default=2) * c.hidden,
                      state=r.size("mamba_d_state", default=16), rank=time_step_rank(r, "mamba_dt_rank", c.hidden),
                      kernel=r.size("mamba_d_conv", default=4), count=c.layers - n_attn,
                      proj_bias=r.flag("mamba_proj_bias", default=False),
                      conv_bias=r.flag("mamba_conv_bias", default=True), dt_bc_norms=True)
    gated_mlp(t, c.hidden, ffn, count=c.layers - moe_layers)
    moe = None
    if moe_layers:
        top_k = read_top_k(r, n_exp)
        t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
        gated_mlp(t, c.hidden, ffn, count=moe_layers * n_exp, active_count=moe_layers * top_k, component="experts",
                  prefix="expert_")
        moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=0, expert_intermediate_size=ffn,
                      num_moe_layers=moe_layers)
    rms_norms(t, c, per_layer=2)
    window = r.opt_size("sliding_window")
    windows = [window if k == "attention" else None for k in kinds]
    return assemble_recurrent(t, r, c, name, source, tied=tied, ffn=ffn, gated=True, kinds=kinds, recurrent=rec,
                              windows=windows, moe=moe)


def replace_layers(c: Core, layers: int) -> Core:
    """The same shape over ``layers`` layers (the attention blocks of a hybrid)."""
    return Core(hidden=c.hidden, layers=layers, heads=c.heads, kv_heads=c.kv_heads, head_dim=c.head_dim,
                vocab=c.vocab, context=c.context, context_assumed=c.context_assumed)


_NEMOTRON_PATTERN = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
_NEMOTRON_TYPES = {"linear_attention": "linear_attention", "mamba": "linear_attention", "moe": "moe",
                   "full_attention": "full_attention", "attention": "full_attention", "mlp": "mlp"}


def _nemotron_blocks(r: ConfigReader) -> tuple[str, ...]:
    """Nemotron-H's block list: ``layers_block_type``/``layer_types``, else ``hybrid_override_pattern``
    (M Mamba-2, * attention, - MLP, E MoE), else transformers' four-block default. Its length is the depth."""
    for key in ("layers_block_type", "layer_types"):
        listed = r.str_list(key)
        if listed is not None:
            bad = [b for b in listed if b not in _NEMOTRON_TYPES]
            if bad or not listed:
                raise r.fail(key, f"has an unsupported block type {(bad or [''])[0]!r}")
            return tuple(_NEMOTRON_TYPES[b] for b in listed)
    pattern = r.data.get("hybrid_override_pattern")
    if pattern is None:
        return ("linear_attention", "moe", "full_attention", "mlp")
    if not isinstance(pattern, str) or not pattern or any(ch not in _NEMOTRON_PATTERN for ch in pattern):
        raise r.fail("hybrid_override_pattern", f"must be a string of M, *, - and E, got {pattern!r}")
    return tuple(_NEMOTRON_PATTERN[ch] for ch in pattern)


def nemotron_h(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Nemotron-H: one mixer per block (Mamba-2, GQA attention, ReLU² MLP or MoE), one RMS norm per block."""
    blocks = _nemotron_blocks(r)
    depth = len(blocks)
    t = Tally()
    stated = r.opt_size("num_hidden_layers", maximum=100_000)
    if stated is not None and stated != depth:
        t.notes.append(f"num_hidden_layers ({stated}) differs from the {depth} blocks of the layer pattern: "
                       "transformers builds the pattern, so the pattern is counted")
    # attention heads use the config's head_dim (default 128), never hidden / heads
    c = replace_layers(core_shape(ConfigReader({**r.data, "num_hidden_layers": depth}, where=r.where),
                                  context_default=4096, head_dim_default=128, model_type="nemotron_h"), depth)
    tied = False  # transformers' NemotronHForCausalLM declares no tied weights: its LM head is always its own
    if r.flag("tie_word_embeddings", default=False):
        t.notes.append("tie_word_embeddings is true, but transformers builds Nemotron-H with an untied LM head: "
                       "counted untied, as it builds it")
    count = {kind: blocks.count(kind) for kind in ("linear_attention", "full_attention", "mlp", "moe")}
    mlp_bias = r.flag("mlp_bias", default=False)
    embeddings(t, c, tied=tied)
    gqa(t, replace_layers(c, count["full_attention"]))
    rec = mamba2_mixer(t, h=c.hidden, heads=r.size("mamba_num_heads", default=128),
                       head_dim=r.size("mamba_head_dim", default=64),
                       groups=r.size("n_groups", "mamba_n_groups", default=8),
                       state=r.size("ssm_state_size", default=128),
                       kernel=r.size("conv_kernel", "mamba_d_conv", default=4), count=count["linear_attention"],
                       proj_bias=r.flag("use_bias", default=False),
                       conv_bias=r.flag("use_conv_bias", default=r.flag("mamba_conv_bias", default=True)),
                       ssm_bytes_per_value=ssm_dtype_bytes(r, "mamba_ssm_cache_dtype", "float32"))
    ffn = r.size("intermediate_size", default=21504) if count["mlp"] else 0
    plain_mlp(t, c.hidden, ffn, count=count["mlp"], bias=mlp_bias)
    moe = None
    if count["moe"]:
        n_exp = r.size("n_routed_experts", "num_local_experts", default=8)
        top_k = read_top_k(r, n_exp)
        expert_ffn = r.size("moe_intermediate_size", default=7688)
        latent = r.opt_size("moe_latent_size")
        width = latent if latent is not None else c.hidden
        n = count["moe"]
        t.linear("router", "router", c.hidden, n_exp, count=n)
        t.linear("experts", "expert_up", width, expert_ffn, count=n * n_exp, active_count=n * top_k)
        t.linear("experts", "expert_down", expert_ffn, width, count=n * n_exp, active_count=n * top_k)
        shared_ffn = r.size("moe_shared_expert_intermediate_size", default=7688)
        t.linear("shared_experts", "shared_up", c.hidden, shared_ffn, count=n, bias=mlp_bias)
        t.linear("shared_experts", "shared_down", shared_ffn, c.hidden, count=n, bias=mlp_bias)
        if latent is not None:
            t.linear("experts", "latent_in", c.hidden, latent, count=n, bias=mlp_bias)
            t.linear("experts", "latent_out", latent, c.hidden, count=n, bias=mlp_bias)
        t.notes.append("router e_score_correction_bias is a buffer in transformers, not a parameter: not counted")
        moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=1,
                      expert_intermediate_size=expert_ffn, num_moe_layers=n)
    mtp = r.size("num_nextn_predict_layers", default=0, minimum=0)
    if mtp:
        t.notes.append(f"{mtp} multi-token-prediction layer(s) in the checkpoint are not counted (transformers does not build them)")
    rms_norms(t, c, per_layer=1)
    kinds: list[LayerKind] = [
        "attention" if b == "full_attention" else "recurrent" if b == "linear_attention" else "mlp" for b in blocks]
    return assemble_recurrent(t, r, c, name, source, tied=tied, ffn=ffn, gated=False, kinds=kinds, recurrent=rec,
                              moe=moe, mlp_layers=count["mlp"] + count["moe"])


_GRANITE_TYPES = {"mamba": "recurrent", "linear_attention": "recurrent", "attention": "attention",
                  "full_attention": "attention"}


def granitemoehybrid(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Granite-4.0 hybrid: Mamba-2 or GQA attention per ``layer_types``, then MoE (when experts > 0) plus an
    always-on shared SwiGLU MLP (``shared_intermediate_size``); two RMS norms per layer."""
    c = core_shape(r, context_default=2048, model_type="granitemoehybrid")
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    kinds_read = layer_types(r, "layer_types", c.layers, _GRANITE_TYPES)
    kinds: list[LayerKind] = ["recurrent" if k == "recurrent" else "attention"
                              for k in (kinds_read or ("recurrent",) * c.layers)]
    n_attn = kinds.count("attention")
    bias = r.flag("attention_bias", default=False)
    embeddings(t, c, tied=tied)
    gqa(t, replace_layers(c, n_attn), qkv_bias=bias, o_bias=bias)
    inner = r.size("mamba_expand", default=2) * c.hidden
    heads = r.size("mamba_n_heads", default=128)
    if inner % heads:
        raise r.fail("mamba_n_heads", f"must divide mamba_expand × hidden_size ({inner}), got {heads}")
    head_dim = inner // heads if r.data.get("mamba_d_head") in (None, "auto") else r.size("mamba_d_head")
    if head_dim * heads != inner:
        raise r.fail("mamba_d_head", f"times mamba_n_heads must equal mamba_expand × hidden_size ({inner})")
    rec = mamba2_mixer(t, h=c.hidden, heads=heads, head_dim=head_dim, groups=r.size("mamba_n_groups", default=1),
                       state=r.size("mamba_d_state", default=256), kernel=r.size("mamba_d_conv", default=4),
                       count=c.layers - n_attn, proj_bias=r.flag("mamba_proj_bias", default=False),
                       conv_bias=r.flag("mamba_conv_bias", default=True))
    n_exp = r.size("num_local_experts", default=8, minimum=0)
    moe = None
    if n_exp:
        top_k = read_top_k(r, n_exp)
        ffn = r.size("intermediate_size", default=11008)
        t.linear("router", "router", c.hidden, n_exp, count=c.layers)
        gated_mlp(t, c.hidden, ffn, count=c.layers * n_exp, active_count=c.layers * top_k, component="experts",
                  prefix="expert_")
        moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=1, expert_intermediate_size=ffn,
                      num_moe_layers=c.layers)
    shared = r.size("shared_intermediate_size", default=1024)
    gated_mlp(t, c.hidden, shared, count=c.layers, fused=True, component="shared_experts" if n_exp else "mlp",
              prefix="shared_" if n_exp else "")
    rms_norms(t, c, per_layer=2)
    return assemble_recurrent(t, r, c, name, source, tied=tied, ffn=0 if n_exp else shared, gated=True, kinds=kinds,
                              recurrent=rec, moe=moe)


_QWEN_NEXT_TYPES = {"linear_attention": "recurrent", "full_attention": "attention"}


def qwen3_next(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Qwen3-Next: gated DeltaNet on most layers, gated GQA (q_proj doubled for the output gate, q/k norms)
    every ``full_attention_interval``-th layer; MoE with a gated shared expert, dense on ``mlp_only_layers``."""
    c = core_shape(r, head_dim_default=256, context_default=32768, model_type="qwen3_next")
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    listed = layer_types(r, "layer_types", c.layers, _QWEN_NEXT_TYPES)
    if listed is None:
        every = r.size("full_attention_interval", default=4)
        listed = tuple("recurrent" if (i + 1) % every else "attention" for i in range(c.layers))
    kinds: list[LayerKind] = ["attention" if k == "attention" else "recurrent" for k in listed]
    n_attn = kinds.count("attention")
    bias = r.flag("attention_bias", default=False)
    q_out = c.heads * c.head_dim
    t.linear("attention", "q", c.hidden, 2 * q_out, count=n_attn, bias=bias, parts=(("q", q_out), ("gate", q_out)))
    t.linear("attention", "k", c.hidden, c.kv_heads * c.head_dim, count=n_attn, bias=bias)
    t.linear("attention", "v", c.hidden, c.kv_heads * c.head_dim, count=n_attn, bias=bias)
    t.linear("attention", "o", q_out, c.hidden, count=n_attn, bias=bias)
    t.vector("attention", c.head_dim, count=2 * n_attn)
    rec = gated_deltanet_mixer(t, h=c.hidden, key_heads=r.size("linear_num_key_heads", default=16),
                               value_heads=r.size("linear_num_value_heads", default=32),
                               key_dim=r.size("linear_key_head_dim", default=128),
                               value_dim=r.size("linear_value_head_dim", default=128),
                               kernel=r.size("linear_conv_kernel_dim", default=4), count=c.layers - n_attn)
    n_exp = r.size("num_experts", default=512, minimum=0)
    step = r.size("decoder_sparse_step", default=1)
    dense_only = set(r.int_list("mlp_only_layers"))
    moe_layers = sum(1 for i in range(c.layers) if i not in dense_only and n_exp > 0 and (i + 1) % step == 0)
    dense_layers = c.layers - moe_layers
    dense_ffn = r.size("intermediate_size", default=5632) if dense_layers else 0
    embeddings(t, c, tied=tied)
    gated_mlp(t, c.hidden, dense_ffn, count=dense_layers)
    moe = None
    if moe_layers:
        top_k = read_top_k(r, n_exp)
        expert_ffn = r.size("moe_intermediate_size", default=512)
        shared_ffn = r.size("shared_expert_intermediate_size", default=512)
        t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
        gated_mlp(t, c.hidden, expert_ffn, count=moe_layers * n_exp, active_count=moe_layers * top_k,
                  component="experts", prefix="expert_")
        gated_mlp(t, c.hidden, shared_ffn, count=moe_layers, component="shared_experts", prefix="shared_")
        t.linear("router", "shared_expert_gate", c.hidden, 1, count=moe_layers)
        moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=1,
                      expert_intermediate_size=expert_ffn, num_moe_layers=moe_layers)
    rms_norms(t, c, per_layer=2)
    return assemble_recurrent(t, r, c, name, source, tied=tied, ffn=dense_ffn, gated=True, kinds=kinds,
                              recurrent=rec, moe=moe)


_ZAMBA2_DEFAULT = (("recurrent",) + (("recurrent",) * 5 + ("hybrid",)) * 7 + ("recurrent",) * 4 + ("hybrid",)
                   + ("recurrent",) * 3 + ("hybrid",) + ("recurrent",) * 2)
_ZAMBA2_TYPES = {"mamba": "recurrent", "linear_attention": "recurrent", "hybrid": "hybrid"}


def zamba2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Zamba2: a Mamba-2 layer everywhere; ``hybrid`` layers add one of ``num_mem_blocks`` shared transformer
    blocks (attention over ``2h`` with head dim ``2h / heads``, a fused SwiGLU MLP) reached through a per-layer
    ``h→h`` linear, with per-layer LoRA-style adapters (rank ``adapter_rank``) on the shared MLP's gate_up and,
    with ``use_shared_attention_adapter``, on q, k and v. Shared blocks are counted once."""
    t = Tally()
    listed = r.str_list("layers_block_type")
    if listed is None:
        blocks: tuple[str, ...] = _ZAMBA2_DEFAULT
    else:
        bad = [b for b in listed if b not in _ZAMBA2_TYPES]
        if bad or not listed:
            raise r.fail("layers_block_type", f"has an unsupported layer type {(bad or [''])[0]!r}")
        blocks = tuple(_ZAMBA2_TYPES[b] for b in listed)
    depth = len(blocks)
    stated = r.opt_size("num_hidden_layers", maximum=100_000)
    if stated is not None and stated != depth:  # transformers 5.24's Zamba2Config refuses it too (validate_layer_type)
        which = "its layers_block_type" if listed is not None else "transformers' default layers_block_type (the config lists none)"
        raise r.fail("num_hidden_layers", f"must equal the {depth} entries of {which}, got {stated}: transformers "
                                          "refuses such a config, so no count is given")
    h = r.size("hidden_size", default=2560)
    heads = r.size("num_attention_heads", default=32)
    kv = r.size("num_key_value_heads", default=heads)
    if (2 * h) % heads:
        raise r.fail("num_attention_heads", f"must divide 2 × hidden_size ({2 * h}), got {heads}")
    context = 16384 if r.flag("use_long_context", default=False) else r.size("max_position_embeddings", default=4096)
    c = Core(hidden=h, layers=depth, heads=heads, kv_heads=kv, head_dim=2 * h // heads,
             vocab=r.size("vocab_size", default=32000), context=context)
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("add_bias_linear", default=False)
    ffn = r.size("intermediate_size", default=4 * h)
    n_hybrid = blocks.count("hybrid")
    shared = min(r.size("num_mem_blocks", default=1), n_hybrid)
    rank = r.size("adapter_rank", default=128)
    inner = r.size("mamba_expand", default=2) * h
    m_heads = r.size("n_mamba_heads", default=8)
    if inner % m_heads:
        raise r.fail("n_mamba_heads", f"must divide mamba_expand × hidden_size ({inner}), got {m_heads}")
    embeddings(t, c, tied=tied)
    rec = mamba2_mixer(t, h=h, heads=m_heads, head_dim=inner // m_heads, groups=r.size("mamba_ngroups", default=1),
                       state=r.size("mamba_d_state", default=64), kernel=r.size("mamba_d_conv", default=4), count=depth,
                       proj_bias=bias, conv_bias=r.flag("use_conv_bias", default=True))
    t.vector("norms", h, count=depth + 1)  # each layer's input norm and the final norm
    # shared transformer blocks (counted once each), then what every hybrid layer owns
    t.linear("attention", "q", 2 * h, heads * c.head_dim, count=shared)
    t.linear("attention", "k", 2 * h, kv * c.head_dim, count=shared)
    t.linear("attention", "v", 2 * h, kv * c.head_dim, count=shared)
    t.linear("attention", "o", heads * c.head_dim, h, count=shared)
    gated_mlp(t, h, ffn, count=shared, bias=bias, fused=True)
    t.vector("norms", 3 * h, count=shared)  # input norm over 2h, pre-MLP norm over h
    t.linear("other", "hybrid_linear", h, h, count=n_hybrid)
    t.linear("mlp", "gate_up_adapter_a", h, rank, count=n_hybrid)
    t.linear("mlp", "gate_up_adapter_b", rank, 2 * ffn, count=n_hybrid)
    if r.flag("use_shared_attention_adapter", default=False):
        t.linear("attention", "qkv_adapter_a", 2 * h, rank, count=3 * n_hybrid)
        t.linear("attention", "qkv_adapter_b", rank, 2 * h, count=3 * n_hybrid)
    t.notes.append(f"{shared} shared transformer block(s) counted once, reused by {n_hybrid} hybrid layer(s); "
                   "each hybrid layer keeps its own KV cache and adapters")
    kinds: list[LayerKind] = ["attention_recurrent" if b == "hybrid" else "recurrent" for b in blocks]
    if not r.has("max_position_embeddings"):
        t.notes.append(f"max_position_embeddings is not in the config: transformers' default of {context:,} tokens assumed")
    return assemble_recurrent(t, r, c, name, source, tied=tied, ffn=ffn, gated=True, kinds=kinds, recurrent=rec,
                              mlp_layers=n_hybrid)
