"""``anchorgpu allocations recipe``'s words (stop 60, faces60): its launch lines name no ``--engine`` the command lacks,
and its refusals name its own ``--kind``, not ``plan``'s ``--recipe``."""

from __future__ import annotations

from typing import Any


def test_allocations_recipe_names_its_own_options(cli: Any) -> None:
    quote, _ = cli("quote", "h100-sxm-8x-bm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    launch, _ = cli("allocations", "recipe", booked["id"], "--kind", "trtllm", "--model", "llama-3.1-8b", "--json")
    lines = launch["recipe"]["assumptions"]
    assert any(a.startswith("--free_gpu_memory_fraction as planned (TensorRT-LLM, this launch's engine):")
               for a in lines), lines
    assert not any("--engine" in a for a in lines), lines
    _, err = cli("allocations", "recipe", booked["id"], "--kind", "deepspeed", "--model", "llama-3.1-8b", code=2)
    assert err.strip() == ("error: --kind deepspeed: a training recipe for an inference plan (use vllm, sglang or "
                           "trtllm)"), err
