"""What a serving plan's memory already worked out that its speed estimate needs again, handed from
:func:`~anchorgpu.planner.inference.plan_inference` to :func:`~anchorgpu.planner.speed.estimate.plan_performance`
rather than derived a second time from the :class:`~anchorgpu.planner.result.Plan`: the KV cache's shape (values a
token, layers by window, the stage's layers), its bytes a value and page, the KV capacity and the engine's limits.
Pure values; one slot of module state.

The hand-over is tied to the plan's identity: ``plan()`` hands its newest serving plan over (:func:`hand_over`), and
the estimate of that same object reads it (:func:`handed`); any other plan (an older one, a copy made by
``dataclasses.replace`` or ``evolve``, a plan built by hand) finds nothing and the estimate derives the figures from
the plan as before. A plan is frozen and its terms are formed once, so what was handed over stays true of it. One
slot, replaced whole (a tuple), so two threads planning at once at worst miss each other's hand-over.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from anchorgpu.planner._frozen import builder, fast_init

if TYPE_CHECKING:
    from anchorgpu.planner.result import Plan
    from anchorgpu.planner.serving_engine import EngineMemory

__all__ = ["HANDED", "ServingTerms", "hand_over", "handed", "new_serving_terms", "shaped_kv_bytes"]

KvShape = tuple[float, tuple[tuple[int | None, int], ...], int, int]
"""(values a token a layer on one GPU, layers by attention window, layers of the busiest stage, layers):
``memory.kv``'s shape of a model under a split."""


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ServingTerms:
    """A serving plan's terms as :func:`~anchorgpu.planner.inference.plan_inference` formed them (a text model's:
    no encoder, cross-attention or recurrent state, which the estimate still reads from the plan)."""

    kv_shape: KvShape  # memory.kv's shape under the plan's TP, PP and attention DP
    bytes_per_value: float  # the KV cache's dtype
    block_tokens: int  # the engine's KV page
    capacity_bytes: int  # the breakdown's kv_cache_capacity_bytes
    max_num_batched_tokens: int  # the engine's limits as planned (the resolved workload's)
    max_num_seqs: int
    engine_memory: EngineMemory  # the layout's engine memory (serving_engine.engine_memory's memo: one object for every
    # plan of that model, format, GPU, split and engine settings), which the estimate's own memos key on


# ServingTerms(...) once per serving plan, its fields by position but the last (a slotted value: the estimate's reads of
# its fields are the interpreter's specialised slot reads, which a named tuple's are not)
new_serving_terms: Callable[..., ServingTerms] = builder(ServingTerms, positional=6)
HANDED: list[tuple[object, ServingTerms | None]] = [(None, None)]
"""The newest hand-over, ``[(plan, its terms)]``: its one item is replaced whole (:func:`hand_over`; ``plan()`` sets it
in place, a frame fewer) and read whole (:func:`handed`; ``plan_performance`` reads it in place), so a reader never
sees one plan's terms beside another plan."""


def hand_over(plan: Plan, terms: ServingTerms) -> None:
    """Keep ``terms`` for ``plan``'s estimate (replacing any earlier hand-over)."""
    HANDED[0] = (plan, terms)


def handed(plan: Plan) -> ServingTerms | None:
    """The terms handed over for ``plan`` itself, else None."""
    last = HANDED[0]
    return last[1] if last[0] is plan else None


def shaped_kv_bytes(shape: KvShape, tokens: int, bytes_per_value: float, block_size: int) -> int:
    """KV bytes one sequence of ``tokens`` holds on a GPU of ``shape``, in pages of ``block_size`` tokens: the same
    operations as :func:`~anchorgpu.planner.memory.kv_sequence_bytes` (each layer's tokens, a sliding window's at
    most its window, in whole pages; times the values a token, the bytes a value and the stage's share).

    >>> shaped_kv_bytes((2048, ((None, 32),), 32, 32), 8192, 2, 16)  # Llama-3.1-8B's 8,192 tokens in BF16: 1 GiB
    1073741824
    """
    values, groups, stage, layers = shape
    token_slots = 0
    for window, count in groups:
        held = tokens if window is None else min(tokens, window)
        token_slots += -(-held // block_size) * block_size * count  # ceil_div(held, block_size)
    return math.ceil(token_slots * values * bytes_per_value * 1 * stage / layers)  # kv_sequence_bytes's, in order
