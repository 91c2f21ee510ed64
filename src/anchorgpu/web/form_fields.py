"""Form fields the plan and recommend pages share beyond the request's own: the label of each input (which a refusal
names the field by), the fields each form has no input of its own for, carried from the URL into inputs named by their
field, and a GPU alias as the GPU select's option."""

from __future__ import annotations

import re
from typing import Any

from anchorgpu.errors import AnchorError
from anchorgpu.web.i18n import N_, PageText

__all__ = ["ALLOCATION_LAUNCH_LABELS", "PLAN_CARRIED", "PLAN_LABELS", "RECOMMEND_CARRIED", "RECOMMEND_LABELS", "Label", "canonical_gpu", "carried",
           "label_of", "ungrouped"]

Label = str | tuple[str, str]
"""A label's catalogue id, or (context, id) for one the catalogue keeps under a context (``pgettext``)."""

_SHARED_LABELS: dict[str, Label] = {
    "model": N_("Model"), "task": N_("Task"), "context": N_("Context (tokens)"), "concurrency": N_("Concurrency"),
    "prompt": N_("Prompt tokens per request"), "output_tokens": N_("Output tokens per request"),
    "weights": N_("Weights"), "kv_cache": N_("KV cache"), "global_batch": N_("Global batch (tokens)"),
    "recompute": N_("Recompute"), "train_stack": N_("Training stack"), "engine": N_("Serving engine"),
    "train_precision": N_("Training precision"), "allow_long_context": N_("Allow context beyond the model's limit"),
}
ALLOCATION_LAUNCH_LABELS: dict[str, Label] = {
    "kind": N_("Launch kind"), "model": N_("Model"), "task": N_("Task"), "context": N_("Context tokens"),
    "concurrency": N_("Concurrency"),
}
"""The allocation page's launch form's controls, by the name each sends (its select and inputs' ``aria-label``)."""
PLAN_LABELS: dict[str, Label] = {
    **_SHARED_LABELS, "gpu": N_("GPU"), "gpus": ("count", "GPUs"),
    "tp": "TP", "pp": "PP", "dp": "DP", "ep": "EP", "cp": "CP",  # the parallelisms' own names, in every language
    "zero": N_("ZeRO stage"), "fsdp": N_("FSDP full shard"), "offload": N_("Offload"), "micro_batch": N_("Micro-batch"),
    "seq": N_("Sequence (tokens)"), "virtual_stages": N_("Virtual pipeline stages"), "optimizer": N_("Optimizer"),
    "optimizer_state": N_("Optimizer state"), "cross_entropy": N_("Loss (cross-entropy)"),
    "lora_rank": N_("LoRA rank"), "lora_targets": N_("LoRA targets"),
    "gpu_memory_utilization": N_("GPU memory utilization"),
    "max_num_seqs": N_("Sequences the engine runs at once (max_num_seqs)"),
    "max_num_batched_tokens": N_("Prefill tokens per step (max_num_batched_tokens)"),
    "resolution": N_("Diffusion: resolution (WxH)"), "images": N_("Diffusion: images per batch"),
    "images_per_request": N_("Vision model: images per request"),
    "image_resolution": N_("Vision model: image size (WxH)"), "vae_tiling": N_("VAE tiling"),
    "tokens": N_("Training tokens"),
    "tp_overlap": N_("Overlap TP communication with the products"),
    "sequence_parallel": N_("Sequence parallelism"),
    "ep_overlap": N_("Overlap EP all-to-alls with another micro-batch"),
    "pipeline_layout": N_("Pipeline layout (Megatron-Core syntax)"),
    "offload_activation_layers": N_("Layers whose activations wait in host memory"),
    "network_gbit_per_gpu": N_("Network between servers, Gb/s per GPU"),
    "mfu": N_("Your MFU (replaces the calibrated efficiency)"),
    "mbu": N_("Your MBU (replaces the calibrated decode efficiency)"),
}
"""The plan form's label of each input, by the request field it sends: a refusal on the page names a field by it (the
page's words for the API's ``global_batch``); tests/hardening/test_stop55_qa13.py checks each is the label the form
shows."""
RECOMMEND_LABELS: dict[str, Label] = {
    **_SHARED_LABELS, "gpu": N_("GPU only"), "term": N_("Term"), "max_usd": N_("Max price, USD (the term's total; with train tokens, the run's)"),
    "min_tokens_per_s_per_user": N_("Min tokens/s per user"), "max_ttft_s": N_("Max time to first token, s"),
    "tokens": N_("Train tokens"), "seq": N_("Sequence (training)"),
    "micro_batch": N_("Micro-batch"), "mfu": N_("Your MFU (replaces the calibrated efficiency)"),
    "mbu": N_("Your MBU (replaces the calibrated decode efficiency)"),
    "lower_precision": N_("Also consider lower precisions (fp8, int4 weights, fp8 KV cache): outputs change"),
}
"""The same for the recommend form."""


def label_of(name: str, labels: dict[str, Label], text: PageText) -> str | None:
    """The label the form shows for field ``name`` in the page's language, or None where it has none of its own (a
    field carried from a link is shown by its name).

    >>> label_of("global_batch", PLAN_LABELS, PageText("ru")), label_of("gpus", PLAN_LABELS, PageText("ru"))
    ('Глобальный батч (токены)', 'Число GPU')
    >>> label_of("cp", PLAN_LABELS, PageText("ru")), label_of("fragmentation", PLAN_LABELS, PageText("en"))
    ('CP', None)
    """
    label = labels.get(name)
    if label is None:
        return None
    if isinstance(label, tuple):
        return text.pgettext(*label)
    return text.gettext(label)


PLAN_CARRIED = ("fragmentation", "cuda_context_mib")
"""Request fields the plan form has no input of its own for (the API's and the CLI's memory overrides). One given in the
URL (a link, the recommend page's "check the workload in the planner") gets an input named by its field, so a changed
and resubmitted form keeps it and a refused value can be corrected; tests/web/test_form_keeps_values.py checks that
every field is an input or here."""
RECOMMEND_CARRIED = ("cross_entropy", "gpu_memory_utilization", "image_resolution", "images",
                     "images_per_request", "lora_rank", "max_num_seqs", "max_servers", "optimizer", "optimizer_state",
                     "resolution", "top", "vae_tiling")
"""The same for the recommend form: fields the plan page's "cheapest offerings that fit this" link brings."""


def carried(values: dict[str, Any], names: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, value) of the fields in ``names`` that ``values`` holds, as the form sends them back.

    >>> carried({"model": "m", "tp_overlap": True, "mfu": "0.4", "lora_targets": ["q", "v"]}, ("tp_overlap", "mfu"))
    [('tp_overlap', 'on'), ('mfu', '0.4')]
    """
    return [(name, "on" if values[name] is True else str(values[name])) for name in names
            if values.get(name) not in (None, "", False)]


def canonical_gpu(raw: str) -> str:
    """The canonical name of a GPU typed as an alias, which the forms' GPU select shows selected (also when the
    answer is a refusal); a name no GPU has is left as typed, for the planner to refuse.

    >>> canonical_gpu("h100"), canonical_gpu("no-such-gpu")
    ('h100-sxm', 'no-such-gpu')
    """
    from anchorgpu.hardware import get_gpu

    try:
        return get_gpu(raw).name
    except AnchorError:
        return raw


_GROUPED = re.compile(r"\d{1,3}([,\s\u00a0\u202f])\d{3}(?:\1\d{3})*")
_DECIMAL_COMMA = re.compile(r"\d+,\d+(?:[eE]\d+|[a-zA-Z])?")


def ungrouped(typed: object) -> str | None:
    """A count typed as the pages write numbers, in the spelling the form reads: digit groups joined ('4,194,304',
    ru '4\xa0194\xa0304' -> '4194304'), a decimal comma made a point ('4,5M' -> '4.5M'); None for anything else. The
    form never reads such text itself (en '1,000' and ru '1,000' are different numbers): its refusal names the
    spelling to type.

    >>> ungrouped("4,194,304"), ungrouped("16\u00a0777\u00a0216"), ungrouped("4,5M"), ungrouped("12,34,567"), ungrouped("4M")
    ('4194304', '16777216', '4.5M', None, None)
    """
    if not isinstance(typed, str):
        return None
    text = typed.strip()
    if _GROUPED.fullmatch(text):
        return re.sub(r"\D", "", text)
    if _DECIMAL_COMMA.fullmatch(text):
        return text.replace(",", ".")
    return None
