"""The units FSDP / ZeRO-3 gathers, and the most a GPU holds unsharded at any moment of a step (bytes). Pure; stdlib
only.

The units follow how the PyTorch stacks wrap a decoder (sources read for this, stop 59 ``fsdpunits``):

* torchtitan ``torchtitan/models/llama3/infra/parallelize.py`` ``apply_fsdp`` (pytorch/torchtitan at 018740b): one
  ``fully_shard`` for ``tok_embeddings``, one per transformer block, one for ``[norm, output]`` with
  ``reshard_after_forward=(policy == "always")`` ("do not reshard_after_forward the last layers by default since FSDP
  would prefetch them immediately after the forward pass"), then the root ``fully_shard(model)`` holding nothing else.
* PyTorch FSDP2 ``torch/distributed/fsdp/_fully_shard/_fsdp_state.py`` ``_lazy_init``: "For the root, do not reshard
  after forward since for training, the parameters would be freed and all-gathered immediately"; a root's
  post-backward runs in the final callback, so its parameters stay gathered, and its gradients unsharded, through the
  whole backward. That is where a tied embedding/head (one parameter, so in no block's unit) sits in torchtitan.
* accelerate 1.15.0 ``utils/fsdp_utils.py`` ``fsdp2_prepare_model`` (``TRANSFORMER_BASED_WRAP``, the recipe's): a
  ``fully_shard`` per ``_no_split_modules`` block, then "Carve embed + tail=[final_norm, lm_head] into their own
  units": ``fully_shard(input_embed)`` where untied, ``fully_shard(tail, reshard_after_forward=False)`` with the tied
  embedding inside the tail (gathered from the forward's start, its post-backward in the final callback: as a root),
  then the root: torchtitan's units.
* FSDP2 ``_fsdp_collectives.py`` ``foreach_reduce``: the unit's unsharded gradients (``param_dtype``, 16 bit) are
  copied into one ``reduce_scatter_input`` of ``reduce_dtype``; "only after the copy-in finishes can we free the
  gradients"; ``_fsdp_param_group.py`` ``post_backward`` reshards the unit's parameters before that copy-in.
  Implicit prefetching gathers the next unit while one computes (forward and backward: one unit ahead; FSDP1's
  ``BACKWARD_PRE`` / ``forward_prefetch`` and ``limit_all_gathers`` likewise keep at most two gathered).
"""

from __future__ import annotations

import math

from anchorgpu.planner.weight_parts import ModelParts

__all__ = ["fsdp_gather_peak_bytes", "fsdp_unit_gradients_bytes", "fsdp_unresharded_gradients_bytes"]


def _units(parts: ModelParts, tp: int) -> tuple[float, float, float, float]:
    """(root, embedding unit, a transformer block, head unit) of ``parts`` on one GPU (TP splits the vocabulary and
    the blocks' linears; parts are what the caller built them in, parameters or bytes). Untied: the embedding and
    the head (its final norm is a few kB) are their own units; tied: one parameter, gathered throughout as a root."""
    layer = parts.largest_layer / tp
    if parts.tied:
        return parts.embed / tp, 0.0, layer, 0.0
    return 0.0, parts.embed / tp, layer, parts.head / tp


def fsdp_gather_peak_bytes(parts: ModelParts, *, tp: int) -> int:
    """The most parameters FSDP / ZeRO-3 holds gathered at once, in ``parts``' units: the root (kept gathered) plus
    the largest two units gathered together (the current one and the one prefetched): embedding + first block, two
    blocks, last block + head. Below the 2 blocks the plan counted before whenever the embedding or the head is the
    larger (Llama-3.1-8B: 525M values each against 218M a block).

    >>> p = ModelParts(dense=800, experts=0, layer_other=0, embed=300, head=300, num_layers=8, tied=False)
    >>> fsdp_gather_peak_bytes(p, tp=1)  # embedding (300) + a block (100)
    400
    >>> fsdp_gather_peak_bytes(ModelParts(dense=800, experts=0, layer_other=0, embed=30, head=30, num_layers=8,
    ...                                   tied=False), tp=1)  # two blocks
    200
    >>> fsdp_gather_peak_bytes(ModelParts(dense=800, experts=0, layer_other=0, embed=300, head=0, num_layers=8,
    ...                                   tied=True), tp=2)  # tied: root (150) + two blocks (50 each)
    250
    """
    root, embed, layer, head = _units(parts, tp)
    return math.ceil(root + max(embed + layer, 2 * layer, layer + head))


def fsdp_unit_gradients_bytes(params: ModelParts, *, tp: int, param_bytes: int, reduce_bytes: int) -> int:
    """What FSDP2's backward holds beyond :func:`fsdp_gather_peak_bytes` at its fullest moment: the unit's unsharded
    gradients (``param_bytes`` a value: ``param_dtype``) and, while they are copied in, its ``reduce_scatter_input``
    (``reduce_bytes`` a value: ``reduce_dtype``, 4 under torchtitan's default fp32 reduce), beside the parameters then
    gathered. ``params`` in parameters. Backward walks the units in reverse (head, blocks, embedding); at each, two
    moments: computing (the unit and the next one prefetched gathered, the unit's gradients, and the previous unit's
    reduce-scatter input, still held) and the copy-in (the unit resharded: the next one gathered, its gradients and
    its own reduce-scatter input). ``_fsdp_param_group.py`` ``post_backward`` keeps each unit's input in
    ``comm_ctx.reduce_scatter_state`` (it was allocated in the default stream and is read by the reduce-scatter
    stream) and drops it only in the next unit's ``post_backward``, after waiting on its event and before that unit's
    ``foreach_reduce`` allocates its own: so it is alive through the next unit's whole backward computation, not at its
    copy-in. A root's parameters (a tied embedding) and gradients are held throughout.

    >>> p = ModelParts(dense=800, experts=0, layer_other=0, embed=300, head=300, num_layers=8, tied=False)
    >>> fsdp_unit_gradients_bytes(p, tp=1, param_bytes=2, reduce_bytes=4)  # head: 2x100 + 2x300 + 4x300 - 800
    1200
    >>> q = ModelParts(dense=800, experts=0, layer_other=0, embed=120, head=120, num_layers=8, tied=False)
    >>> fsdp_unit_gradients_bytes(q, tp=1, param_bytes=2, reduce_bytes=4)  # a block after the head: 6x100 + 4x120 - 440
    640
    """
    root, embed, layer, head = _units(params, tp)
    held = root * 2 * param_bytes  # parameters and gradients
    # three blocks stand for all of them: the middle one has a block on either side
    order = [u for u in (head, *[layer] * min(3, max(1, params.num_layers)), embed) if u]
    peak = 0.0
    for i, unit in enumerate(order):
        following = order[i + 1] if i + 1 < len(order) else 0.0
        previous_input = order[i - 1] * reduce_bytes if i else 0.0  # reduce_scatter_state, until this post_backward
        computing = (unit + following) * param_bytes + unit * param_bytes + previous_input
        copy_in = following * param_bytes + unit * (param_bytes + reduce_bytes)
        peak = max(peak, computing, copy_in)
    if root:
        # the root's own copy-in, in the final callback, after the last unit's input was dropped
        peak = max(peak, root * reduce_bytes - held + root * param_bytes)
    gathered = fsdp_gather_peak_bytes(params, tp=tp) * param_bytes
    return max(0, math.ceil(held + peak - gathered))


def fsdp_unresharded_gradients_bytes(params: ModelParts, *, tp: int, param_bytes: int, reduce_bytes: int) -> int:
    """What FSDP2 with ``reshard_after_forward=False`` holds in backward beyond the whole model's 16-bit weights, which
    it keeps gathered from the forward pass into the backward (every unit unsharded at the backward's start):
    ``post_backward`` reshards each unit after its backward (``reshard_after_backward``, on by default) before its
    ``foreach_reduce`` copies the unit's 16-bit gradients into a ``reduce_scatter_input`` of ``reduce_bytes`` a value,
    and the previous unit's input is held until then (``reduce_scatter_state``). Walking the units in reverse (head,
    blocks, embedding; a tied embedding held gathered with its gradients throughout), at each unit: computing (its
    gradients, the previous unit's input, less the units already resharded) and the copy-in (its input, less those
    and itself). ``params`` in parameters; 0 where nothing exceeds the whole weights.

    >>> p = ModelParts(dense=800, experts=0, layer_other=0, embed=300, head=300, num_layers=8, tied=False)
    >>> fsdp_unresharded_gradients_bytes(p, tp=1, param_bytes=2, reduce_bytes=4)  # head's copy-in: grads for params
    1200
    """
    root, embed, layer, head = _units(params, tp)
    held = root * param_bytes  # a tied embedding's gradients, unsharded until the final callback
    order = [u for u in (head, *[layer] * max(1, params.num_layers), embed) if u]
    peak, released, previous_input = 0.0, 0.0, 0.0
    for unit in order:
        peak = max(peak, unit * param_bytes + previous_input - released * param_bytes)  # computing
        released += unit
        previous_input = unit * reduce_bytes
        peak = max(peak, previous_input - released * param_bytes + unit * param_bytes)  # copy-in: grads, input
    return max(0, math.ceil(held + peak))
