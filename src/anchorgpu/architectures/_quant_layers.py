"""Which linear layers a quantization covers: module names per layer group and ignore/target patterns.

Split from :mod:`anchorgpu.architectures.quantization`. Pure; stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from anchorgpu.architectures.spec import LinearGroup, ModelSpec
from anchorgpu.errors import InvalidConfig

__all__ = ["membership"]


_ATTN = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj", "qkv": "qkv_proj", "q_a": "q_a_proj",
         "q_b": "q_b_proj", "kv_a": "kv_a_proj_with_mqa", "kv_b": "kv_b_proj"}
_MLP = {"gate": "gate_proj", "up": "up_proj", "down": "down_proj", "gate_up": "gate_up_proj"}
_MIXTRAL = {"gate": "w1", "down": "w2", "up": "w3"}
_ROUTER_PATHS = ("mlp.gate", "mlp.router", "block_sparse_moe.gate", "mlp.shared_expert_gate", "feed_forward.router")
# Prefixes multimodal checkpoints put before the text model's layers (Llama 4, Gemma 3, Mistral 3 …).
_TEXT_PREFIXES = ("model.language_model.", "language_model.model.", "language_model.", "model.text_model.",
                  "text_model.")


def _paths(group: LinearGroup, layer: int) -> tuple[str, ...]:
    """Module names transformers gives this group's matrices in ``layer`` (a few spellings across families)."""
    base = f"model.layers.{layer}."
    prefix, _, rest = group.name.partition("_")
    if group.component == "router":
        return tuple(base + p for p in _ROUTER_PATHS)
    if group.component == "attention":
        leaf = _ATTN.get(group.name, group.name)
        return (base + "self_attn." + leaf, base + "attention." + leaf, base + "self_attention." + leaf)
    if group.component == "experts" and prefix == "expert":
        return (base + "mlp.experts.0." + _MLP.get(rest, rest), base + "mlp.experts." + _MLP.get(rest, rest),
                base + "block_sparse_moe.experts.0." + _MIXTRAL.get(rest, rest),
                base + "feed_forward.experts." + _MLP.get(rest, rest))
    if group.component == "shared_experts" and prefix == "shared":
        leaf = _MLP.get(rest, rest)
        return (base + "mlp.shared_experts." + leaf, base + "mlp.shared_expert." + leaf,
                base + "feed_forward.shared_expert." + leaf)
    if group.component == "mlp":
        return (base + "mlp." + _MLP.get(group.name, group.name), base + "feed_forward." + _MLP.get(group.name, group.name))
    return (base + f"{group.component or 'layer'}.{group.name}",)


def _group_layers(group: LinearGroup, model: ModelSpec) -> range:
    """Layer indices a group's matrices sit in. MoE models: experts, shared experts and routers in the last
    ``num_moe_layers`` layers, dense MLPs in the first (DeepSeek/Kimi/GLM ``first_k_dense_replace``)."""
    n = model.num_layers
    if model.moe is not None and group.component in ("experts", "shared_experts", "router"):
        return range(n - model.moe.num_moe_layers, n)
    if model.moe is not None and group.component == "mlp":
        return range(0, n - model.moe.num_moe_layers)
    return range(n)


class _Patterns:
    """Module-name patterns as configs write them: ``re:REGEX`` (compressed-tensors), globs with ``*``, dotted
    names matched on whole dotted segments, and plain substrings (transformers' ``modules_to_not_convert``)."""

    def __init__(self, patterns: Sequence[str], *, where: str, key: str) -> None:
        self.raw = tuple(patterns)
        regexes: list[str] = []
        for p in patterns:
            for prefix in _TEXT_PREFIXES:
                if p.startswith(prefix):
                    p = "model." + p[len(prefix):] if not p[len(prefix):].startswith("model.") else p[len(prefix):]
                    break
            if p.startswith("re:"):
                try:
                    re.compile(p[3:])
                except re.error as exc:
                    raise InvalidConfig(f"{where}: field {key!r} has an invalid regular expression {p!r} ({exc})") from None
                regexes.append(f"(?:{p[3:]})")
            else:
                body = re.escape(p.rstrip(".")).replace(r"\*", r"[^ ]*")
                regexes.append(rf"(?:(?:^|\.){body}(?:\.|$))" if "." in p or "*" in p else rf"(?:{body})")
        self.regex = re.compile("|".join(regexes)) if regexes else None
        self.layer_specific = any(re.search(r"(?:^|\.)\d+(?:\.|$)", p) for p in patterns)
        self.linear_class = any(p.lower() in ("linear", "torch.nn.linear") for p in patterns)

    def hit(self, path: str) -> bool:
        return self.regex is not None and self.regex.search(path) is not None


def _fraction(group: LinearGroup, model: ModelSpec, ignore: _Patterns, targets: _Patterns | None) -> float:
    """Fraction of the group's layers that are quantized: targeted (when targets are given) and not ignored."""
    layers = _group_layers(group, model)
    if not layers:
        return 0.0
    probe = layers if (ignore.layer_specific or (targets is not None and targets.layer_specific)) else layers[:1]
    kept = 0
    for layer in probe:
        paths = _paths(group, layer)
        targeted = targets is None or targets.linear_class or any(targets.hit(p) for p in paths)
        if targeted and not any(ignore.hit(p) for p in paths):
            kept += 1
    return kept / len(probe)


def membership(model: ModelSpec, ignore: Sequence[str], *, where: str, key: str,
                targets: Sequence[str] | None = None, only: Sequence[str] | None = None
                ) -> tuple[tuple[tuple[str, float], ...], bool]:
    """(group fractions, LM head quantized?) for ignore patterns, optional targets and an optional
    ``only`` list of group names (GPTQ ``modules_in_block_to_quantize``)."""
    ig = _Patterns(ignore, where=where, key=key)
    tg = None if targets is None else _Patterns(targets, where=where, key="targets")
    groups: list[tuple[str, float]] = []
    for g in model.linear_groups:
        if g.component == "router":
            groups.append((g.name, 0.0))  # routers stay 16-bit: small, and engines keep them so
            continue
        frac = _fraction(g, model, ig, tg)
        if only is not None and not any(p in only for p in _paths(g, 0)[0].split(".")):
            frac = 0.0
        groups.append((g.name, frac))
    head = model.params.head > 0 and tg is not None and (tg.linear_class or tg.hit("lm_head")) and not ig.hit("lm_head")
    return tuple(groups), head

