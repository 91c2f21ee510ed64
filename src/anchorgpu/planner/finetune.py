"""LoRA/QLoRA memory terms the layer-activation formula leaves out, each a named mechanism.

Constants and their sources are data (``data/finetune_memory.json``), read once. The terms:

* ``quantized_layer_inputs``: a bitsandbytes 4-bit layer keeps its input for the backward pass (a frozen
  16-bit layer keeps none), per token and layer, over the distinct inputs of the quantized layers;
* ``dequantization_workspace``: the largest quantized matrix dequantized to 16 bit;
* ``logits_gradient``: the fp32 gradient of the logits at the start of the backward pass;
* ``frozen_inputs_not_kept`` (taken off): inputs of frozen 16-bit MLP matrices, which autograd does not keep.

Checked against LitGPT's measured peaks in ``tests/planner/test_finetune_memory.py``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from anchorgpu.architectures.spec import LinearGroup, ModelSpec
from anchorgpu.errors import DataFileError
from anchorgpu.planner.formats import WeightFormat

__all__ = ["BNB_FORMATS", "FinetuneConstants", "FinetuneTerms", "constants", "finetune_terms", "frozen_input_values",
           "quantized_input_values"]

DATA_FILE = "planner/data/finetune_memory.json"
BNB_FORMATS = ("nf4", "nf4-dq", "bnb-fp4", "bnb-fp4-dq")

# Linear groups that read the same input tensor: one saved copy for the family.
_SHARED_INPUT = {
    "q": "attn_in", "k": "attn_in", "v": "attn_in", "qkv": "attn_in", "q_a": "attn_in", "kv_a": "attn_in",
    "gate": "mlp_in", "up": "mlp_in", "gate_up": "mlp_in",
    "expert_gate": "expert_in", "expert_up": "expert_in", "expert_gate_up": "expert_in",
    "shared_gate": "shared_in", "shared_up": "shared_in", "shared_gate_up": "shared_in",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class FinetuneConstants:
    saved_input_bytes_per_value: float
    dequant_copies: int
    logits_gradient_bytes_per_value: float


@dataclass(frozen=True, slots=True, kw_only=True)
class FinetuneTerms:
    """Bytes per GPU of each fine-tuning term (0 when it does not apply)."""

    quantized_layer_inputs_bytes: int
    dequantization_workspace_bytes: int
    logits_gradient_bytes: int
    frozen_inputs_not_kept_bytes: int  # taken off the layer-activation formula

    @property
    def total_bytes(self) -> int:
        """Net change to the activations (may be negative)."""
        return (self.quantized_layer_inputs_bytes + self.dequantization_workspace_bytes + self.logits_gradient_bytes
                - self.frozen_inputs_not_kept_bytes)


def _read() -> dict[str, Any]:
    text = resources.files("anchorgpu.planner").joinpath("data", "finetune_memory.json").read_text("utf-8")
    doc = json.loads(text)
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise DataFileError(DATA_FILE, "schema_version", "must be 1")
    return doc


@cache
def constants() -> FinetuneConstants:
    """The constants of ``data/finetune_memory.json`` (read once; a bad file is one DataFileError)."""
    terms = _read().get("terms", {})
    try:
        values = FinetuneConstants(
            saved_input_bytes_per_value=float(terms["quantized_layer_inputs"]["bytes_per_value"]),
            dequant_copies=int(terms["dequantization_workspace"]["copies"]),
            logits_gradient_bytes_per_value=float(terms["logits_gradient"]["bytes_per_value"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DataFileError(DATA_FILE, "terms", f"missing or malformed constant ({exc})") from None
    if min(values.saved_input_bytes_per_value, values.dequant_copies, values.logits_gradient_bytes_per_value) < 0:
        raise DataFileError(DATA_FILE, "terms", "constants must not be negative")
    return values


def _quantized(group: LinearGroup, fmt: WeightFormat) -> bool:
    if group.component == "router" or group.name == "router":
        return False
    if fmt.shipped is not None:
        return fmt.shipped.fraction(group.name) > 0
    return fmt.group_bits(group.name, is_moe=False) < 16 or fmt.storage is not None


def quantized_input_values(model: ModelSpec, fmt: WeightFormat) -> float:
    """Values per token, averaged over the layers, that the quantized layers take as input (shared inputs once).

    Mistral-7B (h 4096, attention output 4096, MLP 14336): attention input + o input + MLP input + down
    input = 4096 + 4096 + 4096 + 14336 = 26,624.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import get_format
    >>> quantized_input_values(load_model("mistral-7b-v0.1"), get_format("nf4"))
    26624.0
    """
    seen: dict[str, float] = {}
    for g in model.linear_groups:
        if not _quantized(g, fmt):
            continue
        key = _SHARED_INPUT.get(g.name, g.name)
        per_token = g.d_in * g.active_count / max(1, model.num_layers)
        seen[key] = max(seen.get(key, 0.0), per_token)
    return sum(seen.values())


def finetune_terms(model: ModelSpec, fmt: WeightFormat, *, task: str, seq: int, micro_batch: int, tp: int,
                   stage_layers: int, recompute: str, targets: Sequence[str] = ()) -> FinetuneTerms:
    """The fine-tuning terms of one GPU (most-loaded pipeline stage of ``stage_layers`` layers)."""
    c = constants()
    tokens = seq * micro_batch
    inputs = workspace = 0
    if task == "qlora" and fmt.quantized:
        largest = max((g.d_in * g.d_out for g in model.linear_groups if _quantized(g, fmt)), default=0)
        workspace = math.ceil(c.dequant_copies * 2 * largest / tp)
        if fmt.name in BNB_FORMATS:
            layers = 1 if recompute == "full" else stage_layers
            inputs = math.ceil(c.saved_input_bytes_per_value * quantized_input_values(model, fmt) * tokens * layers / tp)
    logits_grad = frozen = 0
    if task in ("lora", "qlora"):
        logits_grad = math.ceil(c.logits_gradient_bytes_per_value * tokens * model.vocab_size / tp)
        if recompute != "full":
            frozen = math.ceil(2 * frozen_input_values(model, targets) * tokens * stage_layers / tp)
    return FinetuneTerms(quantized_layer_inputs_bytes=inputs, dequantization_workspace_bytes=workspace,
                         logits_gradient_bytes=logits_grad, frozen_inputs_not_kept_bytes=frozen)


def frozen_input_values(model: ModelSpec, targets: Sequence[str]) -> int:
    """Values per token and layer that the layer-activation formula keeps as inputs of dense MLP matrices, but
    that a frozen 16-bit layer does not keep (autograd saves a matmul input only for its weight's gradient):
    the MLP input (hidden size) unless an adapter sits on gate/up, and for a plain two-matrix MLP the
    down-projection input (its width) unless an adapter sits on down. Gated MLPs keep gate, up and their
    product's factors anyway; MoE and attention inputs are left as the formula has them.

    >>> from anchorgpu.architectures import load_model
    >>> frozen_input_values(load_model("gpt2"), ("q", "v")), frozen_input_values(load_model("mistral-7b-v0.1"), ("q", "v"))
    (3840, 4096)
    """
    if model.moe is not None:
        return 0
    wanted = set(targets)
    values = 0
    if not wanted & {"gate", "up", "gate_up"}:
        values += model.hidden_size
    if not model.gated_mlp and "down" not in wanted:
        values += model.intermediate_size
    return values
