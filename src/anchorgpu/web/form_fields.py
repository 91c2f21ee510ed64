"""Form fields the plan and recommend pages share beyond the request's own: the fields each form has no input of its
own for, carried from the URL into inputs named by their field, and a GPU alias as the GPU select's option."""

from __future__ import annotations

from typing import Any

from anchorgpu.errors import AnchorError

__all__ = ["PLAN_CARRIED", "RECOMMEND_CARRIED", "canonical_gpu", "carried"]

PLAN_CARRIED = ("pipeline_layout", "tp_overlap", "sequence_parallel", "ep_overlap", "offload_activation_layers",
                "network_gbit_per_gpu", "mfu", "mbu", "fragmentation", "cuda_context_mib")
"""Request fields the plan form has no input of its own for (the API's and the CLI's finer options). One given in the
URL (a link, the recommend page's "check the workload in the planner") gets an input named by its field, so a changed
and resubmitted form keeps it and a refused value can be corrected; tests/web/test_form_keeps_values.py checks that
every field is an input or here."""
RECOMMEND_CARRIED = ("cross_entropy", "gpu_memory_utilization", "image_resolution", "images",
                     "images_per_request", "lora_rank", "max_num_seqs", "max_servers", "mbu", "mfu", "micro_batch",
                     "optimizer", "optimizer_state", "resolution", "top", "vae_tiling")
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
