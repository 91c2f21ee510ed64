"""``planner._frozen.evolve`` gives what ``dataclasses.replace`` gives, and refuses what it refuses."""

from __future__ import annotations

import dataclasses

import pytest

from anchorgpu.planner import Layout, PrecisionPlan, Workload
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.inputs import Overheads


@pytest.mark.parametrize(("obj", "changes"), [
    (Workload(task="train", seq_tokens=4096), {"micro_batch": 2, "recompute": "full"}),
    (Workload(context_tokens=8192, lora_targets=("q_proj",)), {"concurrency": 3, "prompt_tokens": None}),
    (Layout(gpus=8, tp=4), {"zero": 3, "fsdp": False}),
    (PrecisionPlan(), {"weights": "fp8"}),
    (Overheads(), {}),
])
def test_same_as_replace(obj: object, changes: dict[str, object]) -> None:
    new, ref = evolve(obj, **changes), dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    assert type(new) is type(ref) and new == ref and hash(new) == hash(ref)
    assert new is not obj
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(new, dataclasses.fields(new)[0].name, None)  # type: ignore[arg-type]


def test_unknown_field_refused_like_replace() -> None:
    with pytest.raises(TypeError):
        evolve(Workload(), context=8192)


def test_planned_precision_is_its_two_formats_alone() -> None:
    """``plan`` memoises the precision planned on the weight format and KV dtype alone: right while they are all of
    a PrecisionPlan's fields (a new field would have to join that memo's key)."""
    from anchorgpu.planner.plan import _with_weights

    assert tuple(field.name for field in dataclasses.fields(PrecisionPlan)) == ("weights", "kv_cache")
    asked = PrecisionPlan(weights="fp8")
    planned = _with_weights("fp8", "bf16")
    assert planned == dataclasses.replace(asked, weights="fp8", kv_cache="bf16") and planned is _with_weights("fp8", "bf16")
