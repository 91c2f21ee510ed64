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


@pytest.mark.parametrize("cls", [Workload, Layout, PrecisionPlan, Overheads])
def test_all_default_value_built_by_its_new_as_the_dataclass_builds_it(cls: type) -> None:
    """A class whose every field has a default is built by ``_frozen``'s ``__new__`` (fields declared by position
    after a guard): the same value as the dataclass's own ``__init__`` gives, a value by position refused as that
    keyword-only ``__init__`` refuses it, and ``copy``/``pickle`` (``cls.__new__(cls)``, then the fields) intact."""
    import copy
    import inspect
    import pickle

    assert "__new__" in vars(cls) and "__init__" not in vars(cls)
    fields = dataclasses.fields(cls)
    changed = {fields[-1].name: None, fields[0].name: None}
    made = cls(**changed)
    ref = object.__new__(cls)
    for field in fields:  # what the generated __init__ stores: the given value, else the default
        object.__setattr__(ref, field.name, changed.get(field.name, field.default))
    assert type(made) is cls and made == ref and hash(made) == hash(ref)
    assert copy.copy(made) == made and copy.deepcopy(made) == made and pickle.loads(pickle.dumps(made)) == made
    assert all(p.kind is p.KEYWORD_ONLY for p in inspect.signature(cls).parameters.values())
    with pytest.raises(TypeError, match="keyword arguments only"):
        cls(None)
    with pytest.raises(TypeError):
        cls(no_such_field=1)


def test_subclass_of_an_all_default_value_filled_by_the_generated_init() -> None:
    class Wider(Layout):
        __slots__ = ("note",)

    wide = Wider(tp=2)
    assert type(wide) is Wider and wide.tp == 2 and wide.gpus is None
