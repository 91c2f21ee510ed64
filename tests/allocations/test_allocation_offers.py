"""What an allocation's launch offers when the plan does not fit on the booked GPUs (stop 61, faces61): only a change its
faces can make (``--context``, ``--concurrency``: the allocation's options), named as its option; a change they cannot
make (a weight format, offload, a layout) is not offered as theirs ("--weights int4-awq" was, on a route with no
``weights`` parameter): the ``plan`` command that makes it and writes the launch is named instead."""

from __future__ import annotations

from typing import Any


def test_a_change_the_allocation_takes_is_offered_as_its_own_option(cli: Any) -> None:
    # QLoRA of a 70B on one L40S at 1,024 tokens: README's journey misses by 1.21 GiB; "What would fit" on that one GPU
    # offers --offload optimizer, then --seq 512: the allocation has no offload option, so --seq 512 is its change,
    # written as its --context (its training sequence)
    quote, _ = cli("quote", "l40s-1x-vm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    _, err = cli("allocations", "recipe", booked["id"], "--kind", "torchrun-fsdp", "--model", "llama-3.1-70b",
                 "--task", "qlora", "--context", "1024", code=2)
    line = " ".join(err.split())
    assert line.startswith("error: --kind torchrun-fsdp: the plan does not fit on this allocation's 1 x 1 l40s"), line
    assert line.endswith("; it would fit with --context 512"), line


def test_a_change_the_allocation_cannot_take_names_the_plan_that_makes_it(cli: Any) -> None:
    quote, _ = cli("quote", "h100-sxm-8x-bm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    _, err = cli("allocations", "recipe", booked["id"], "--kind", "vllm", "--model", "llama-3.1-405b",
                 "--context", "8192", code=2)
    line = " ".join(err.split())
    assert "--weights" not in line.split("`")[0], line  # not offered as this command's option
    assert line.endswith("; it would fit on these GPUs only with a change this launch does not set: `anchorgpu plan "
                         "llama-3.1-405b --gpu h100-sxm --gpus 8 --context 8192 --weights int4-awq` plans it"), line
    # and that command does what the line says: it fits on those 8 GPUs (its launch is the plan's to write or refuse:
    # vLLM quantizes no 16-bit checkpoint to int4-awq while loading, so the line promises no launch)
    plan, _ = cli("plan", "llama-3.1-405b", "--gpu", "h100-sxm", "--gpus", "8", "--context", "8192", "--weights",
                  "int4-awq", "--json")
    assert plan["fits"] is True and plan["gpus"] == 8, (plan["fits"], plan["gpus"])
