"""What the loss of full training holds, by cross-entropy implementation: bytes a token and vocabulary entry (the
logits each tensor-parallel rank holds, s·b·V/t) at the peak of a step, with what they are and where the figure
comes from. Data in ``planner/data/loss_memory.json``, read once.

Each training stack has a default implementation (Megatron-Core: its unfused vocabulary-parallel loss, Megatron-LM's
default; PyTorch-native: an eager fp32 loss); ``Workload.cross_entropy`` states another (Megatron-Bridge's recipes
fused the loss with Transformer Engine's kernel from r0.1.0 to 2026-06).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import cast

from anchorgpu.errors import DataFileError, Said, said
from anchorgpu.planner.inputs import CROSS_ENTROPY_IMPLS, CrossEntropy

__all__ = ["CROSS_ENTROPY_IMPLS", "CrossEntropy", "LossMemory", "default_cross_entropy", "loss_memory",
           "loss_memory_line"]

DATA_FILE = "planner/data/loss_memory.json"

@dataclass(frozen=True, slots=True)
class LossMemory:
    """One implementation's entry: ``bytes_per_logit`` held at the step's peak, what they are, the source."""

    name: CrossEntropy
    bytes_per_logit: int
    keeps: str
    source: str
    default_for_stack: str | None = None


@cache
def _table() -> dict[str, LossMemory]:
    doc = json.loads(resources.files("anchorgpu").joinpath(DATA_FILE).read_text("utf-8"))
    if doc.get("schema_version") != 1:
        raise DataFileError(DATA_FILE, "schema_version", "must be 1")
    table: dict[str, LossMemory] = {}
    for name, entry in doc["implementations"].items():
        if name not in CROSS_ENTROPY_IMPLS:
            raise DataFileError(DATA_FILE, name, f"unknown implementation (known: {', '.join(CROSS_ENTROPY_IMPLS)})")
        per_logit = entry.get("bytes_per_logit")
        if not isinstance(per_logit, int) or per_logit <= 0:
            raise DataFileError(DATA_FILE, name, "bytes_per_logit must be a positive integer")
        table[name] = LossMemory(name=cast(CrossEntropy, name), bytes_per_logit=per_logit, keeps=str(entry["keeps"]),
                                 source=str(entry["source"]), default_for_stack=entry.get("default_for_stack"))
    if set(table) != set(CROSS_ENTROPY_IMPLS):
        raise DataFileError(DATA_FILE, "implementations", f"must list exactly {', '.join(CROSS_ENTROPY_IMPLS)}")
    return table


def loss_memory(name: str) -> LossMemory:
    """The entry of one implementation.

    >>> loss_memory("unfused").bytes_per_logit, loss_memory("te").bytes_per_logit, loss_memory("eager").bytes_per_logit
    (6, 2, 12)
    """
    return _table()[name]


@lru_cache(maxsize=16)  # a handful of stacks (a name not in the table raises, never kept), asked by every full-training plan
def default_cross_entropy(train_stack: str) -> CrossEntropy:
    """The implementation a stack runs unless told otherwise (the data file's ``default_for_stack``).

    >>> default_cross_entropy("megatron"), default_cross_entropy("pytorch")
    ('unfused', 'eager')
    """
    return next(entry.name for entry in _table().values() if entry.default_for_stack == train_stack)


@lru_cache(maxsize=32)  # a few stacks and losses, said by every full-training plan (an unknown name raises, never kept)
def loss_memory_line(name: str, *, stated: bool) -> str:
    """The assumption a full-training plan carries about its loss: what it keeps and why this implementation."""
    entry = loss_memory(name)
    # ``keeps`` is the data file's sentence, its own message id (a page translates it where messages.po has it:
    # tests/web/test_said_lines_in_russian.py holds every entry's); Said, not said(): it is no template
    return said("Loss ({name} cross-entropy, {why}): {bytes} bytes a token and vocabulary entry held at the step's "
                "peak: {keeps}.", name=name, bytes=entry.bytes_per_logit, keeps=Said(entry.keeps, {}),
                why=_AS_STATED if stated else said("the {stack} stack's default; --cross-entropy states another",
                                                   stack=entry.default_for_stack))


_AS_STATED = said("as stated")
