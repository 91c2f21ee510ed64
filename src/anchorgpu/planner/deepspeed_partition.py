"""DeepSpeed ZeRO-1/2's gradient partition buffer and the parameters that straddle a partition's edges. Pure.

DeepSpeed 0.19.8 ``deepspeed/runtime/zero/stage_1_and_2.py``: each optimizer group's trainable parameters are
flattened in order (``round_robin_gradients`` off, the default) and padded to a multiple of
``nccl_start_alignment_factor`` (2) x DP (``aligned_numel``), then cut into DP equal partitions
(``get_data_parallel_partitions``). ``get_partition_info`` puts a parameter in a rank's ``params_in_partition`` if it
starts inside the partition or starts before it and reaches into it: a parameter that straddles an edge is in both
neighbours' lists, whole. ``copy_grads_in_partition`` (stage 2, and stage 1 with ``contiguous_gradients``, the
recipe's) allocates ``grads_in_partition`` = the sum of ``params_in_partition``'s **whole** numels and moves each such
gradient into it; so a rank holds, beyond its partition, the parts of its one or two edge parameters outside it (up to
a whole embedding where the partition lies inside it). The buffer is one tensor for all groups: its storage is freed
only when the step has dropped the last group's gradient views (``free_grad_in_param_list(params_in_partition[i])``),
so the whole buffer is held through the step. Under ``cpu_offload`` gradients go to the host instead (no buffer).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Sequence
from importlib import resources
from itertools import accumulate

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.deepspeed_zero import DATA_FILE

__all__ = ["ALIGNMENT_FACTOR", "boundary_overhang_numel", "expert_order", "parameter_order", "partition_overhang_numel"]

ALIGNMENT_FACTOR: int = json.loads(resources.files("anchorgpu").joinpath(DATA_FILE).read_text("utf-8"))[
    "nccl_start_alignment_factor"]["value"]
"""``stage_1_and_2.py`` ``self.nccl_start_alignment_factor = 2  # 4-byte alignment/sizeof(fp16) = 2``: the flat group
is padded to a multiple of this x DP (``planner/data/deepspeed_zero.json``)."""


def partition_overhang_numel(numels: Sequence[int], dp: int) -> int:
    """The most values any of ``dp`` ranks holds in ``grads_in_partition`` beyond its partition: over each rank, the part
    of the parameter straddling its start that lies before it plus the part of the one straddling its end that lies
    after it (one parameter spanning the whole partition counts once: its size less the partition's). ``numels``: the
    group's parameters in flattening order.

    >>> partition_overhang_numel([10, 10], 2)  # partitions [0, 10), [10, 20): no parameter straddles
    0
    >>> partition_overhang_numel([3, 12, 5], 2)  # [0, 10) holds 0..15 (the 12 whole): 5 after; [10, 20) 7 before
    7
    >>> partition_overhang_numel([100, 4], 4)  # partitions of 26; the last one starts at 78 in the 100-value tensor
    78
    """
    total = sum(numels)
    if dp <= 1 or total == 0:
        return 0
    alignment = ALIGNMENT_FACTOR * dp
    part = -(-total // alignment) * alignment // dp
    starts = [0, *accumulate(numels)]  # starts[i]: the offset of parameter i; starts[-1]: the end of the last
    most = 0
    for rank in range(dp):
        lo, hi = rank * part, (rank + 1) * part
        if lo >= total:
            break
        first = bisect.bisect_right(starts, lo) - 1  # the parameter holding the partition's first value
        before = lo - starts[first]
        last = bisect.bisect_right(starts, min(hi, total) - 1) - 1  # ... and its last
        after = max(0, starts[last + 1] - hi)
        most = max(most, before + after)
    return most


@memo_on_frozen
def parameter_order(model: ModelSpec, experts_apart: bool = False) -> tuple[int, ...]:
    """A model's parameter tensors (values each) in ``model.parameters()`` order, as a transformers decoder registers
    them: the token embedding, then each layer's linear layers in the spec's group order (attention's q, k, v, o; the
    MLP's gate, up, down; the routed experts as transformers 5 holds them, one 3D parameter per projection, gate and
    up fused (``Qwen3MoeExperts``: ``gate_up_proj`` (E, 2I, H), ``down_proj`` (E, H, I)); biases beside their matrix)
    with the layer's norms and other small tensors after them, then the final norm and an untied head. Whatever the
    spec does not place in a layer (norms, recurrent mixers' own tensors, vision towers) is spread over the layers
    evenly, one tensor each. ``experts_apart``: the routed experts left out (DeepSpeed's MoE keeps them in groups of
    their own, :func:`expert_order`). Memoised on the (frozen) model.

    >>> from anchorgpu.architectures import load_model
    >>> m = load_model("llama-3.1-8b")
    >>> order = parameter_order(m)
    >>> order[:3], sum(order) == m.params_total
    ((525336576, 16777216, 4194304), True)
    """
    layers = max(1, model.num_layers)
    embed, head = model.params.embeddings + model.params.position_embeddings, model.params.head
    per_layer: list[int] = []
    expert_values = 0
    for g in model.linear_groups:
        each = g.count // layers
        if g.component == "experts":
            expert_values += g.count * g.d_in * g.d_out
            if experts_apart or not each:
                continue
            if g.name == "expert_up" and per_layer and per_layer[-1] == each * g.d_in * g.d_out:
                per_layer[-1] *= 2
            else:
                per_layer.append(each * g.d_in * g.d_out)
            continue
        for _ in range(each):
            per_layer.append(g.d_in * g.d_out)
            per_layer += [g.d_out] if g.bias else []
    trained = model.params_total - (expert_values if experts_apart else 0)
    rest = max(0, trained - embed - head - sum(per_layer) * layers - model.hidden_size)
    small = rest // layers
    layer = (*per_layer, small) if small else tuple(per_layer)
    return (embed, *layer * layers, model.hidden_size, *((head,) if head else ()))


@memo_on_frozen
def expert_order(model: ModelSpec) -> tuple[int, ...]:
    """The routed experts' matrices as DeepSpeed's MoE layer holds them (``deepspeed/moe/experts.py`` ``Experts``: a
    ModuleList of copies of one expert; ``moe/utils.py`` ``split_params_into_different_moe_groups_for_optimizer`` puts
    them in groups of their own): each expert's matrices in the spec's group order, expert by expert."""
    groups = [g for g in model.linear_groups if g.component == "experts"]
    experts = max((g.count for g in groups), default=0)
    one = tuple(g.d_in * g.d_out for g in groups)
    return one * experts


@memo_on_frozen
def boundary_overhang_numel(model: ModelSpec, dp: int, expert_dp: int = 0) -> int:
    """:func:`partition_overhang_numel` of full training's optimizer group (``model.parameters()``, what
    ``deepspeed.initialize(model_parameters=...)`` or a ds_config ``optimizer`` section gives DeepSpeed) over ``dp``
    ranks, in :func:`parameter_order`; with ``expert_dp`` (expert parallelism: DeepSpeed's MoE) the experts' groups
    over ``expert_dp`` ranks added (each group's busiest rank, the larger bound where they are not one rank).
    Memoised on the (frozen) model and the counts.

    >>> from anchorgpu.architectures import load_model
    >>> boundary_overhang_numel(load_model("llama-3.1-8b"), 2)  # the cut: 2,048 values into layer 16's q (4,096²)
    16775168
    """
    if not expert_dp:
        return partition_overhang_numel(parameter_order(model), dp)
    return (partition_overhang_numel(parameter_order(model, True), dp)
            + partition_overhang_numel(expert_order(model), expert_dp))
