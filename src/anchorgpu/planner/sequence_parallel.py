"""Megatron's sequence parallelism as a plan states it (Korthikanti et al. 2022, arXiv 2205.05198, section 4.2.2):
with tensor parallelism the norms, dropout and residual adds of a layer run on ``1/t`` of the sequence on each TP
rank, and their activations are kept split the same way. It is a choice, not a given: Megatron-LM's
``--sequence-parallel`` is off by default (``megatron/training/arguments.py``, ``store_true``), and its functional
test ``gpt3_7b_tp4_pp1_memory_speed`` runs TP 4 without it. A plan turns it on with TP > 1 for training unless the
layout states it (:attr:`~anchorgpu.planner.inputs.Layout.sequence_parallel`). Pure; stdlib only.
"""

from __future__ import annotations

from anchorgpu.errors import InvalidWorkload, said

__all__ = ["memory_off_line", "resolve_sequence_parallel", "sequence_split_refusal", "speed_off_line",
           "splits_whatever_stated", "stated_off_refusal"]


def resolve_sequence_parallel(stated: object, *, training: bool, tp: int, moe: bool = False) -> bool:
    """Whether the layout runs sequence parallelism: as ``stated``, or (``None``) on with ``tp > 1`` for training.
    Refused in one line: stated for inference or diffusion (serving engines have none), stated on with TP 1, or
    stated off for a mixture of experts under TP, which Megatron-LM refuses ("When using MoE and tensor parallelism,
    sequence parallelism must be used.", ``megatron/training/arguments.py``, ``validate_args``).

    >>> resolve_sequence_parallel(None, training=True, tp=4), resolve_sequence_parallel(False, training=True, tp=4)
    (True, False)
    >>> resolve_sequence_parallel(None, training=False, tp=8), resolve_sequence_parallel(False, training=True, tp=1)
    (False, False)
    >>> resolve_sequence_parallel(None, training=True, tp=2, moe=True)
    True
    """
    if stated is None:
        return training and tp > 1
    if type(stated) is not bool:
        raise InvalidWorkload(said("sequence-parallel={stated!r}: must be true or false", stated=stated))
    if not training:
        raise InvalidWorkload(said("--sequence-parallel / --no-sequence-parallel applies to training (Megatron's "
                                   "sequence parallelism); serving engines have none"))
    if stated and tp < 2:
        raise InvalidWorkload(said("--sequence-parallel needs tensor parallelism (--tp 2 or more): it splits the "
                                   "norms, dropout and residual adds over the TP ranks"))
    if not stated and moe and tp > 1:
        raise InvalidWorkload(said("--no-sequence-parallel with --tp {tp}: a mixture of experts under tensor "
                                   "parallelism needs sequence parallelism (Megatron-LM refuses it without: 'When "
                                   "using MoE and tensor parallelism, sequence parallelism must be used')", tp=tp))
    return stated


def memory_off_line(tp: int) -> str:
    """The memory assumption of a TP layout stated without sequence parallelism."""
    return (f"Sequence parallelism off (stated): the layer-norm inputs, the QKV and MLP inputs (and the dropout masks "
            f"where the model trains with dropout) are kept whole on each of the {tp} TP ranks, not split by t "
            "(Korthikanti et al. 2022, Table 2: s·b·h·(10 + 24/t) a GPT layer in place of 34/t).")


def speed_off_line(tp: int, share: float, *, stages: bool) -> str:
    """The speed assumption of a TP layout stated without sequence parallelism; ``share``: the memory-bound operators'
    traffic outside the TP-split region (:func:`~anchorgpu.planner.memory.activations.sequence_parallel_share`);
    ``stages``: the layout has pipeline stages, whose transfers then carry the whole sequence."""
    return (f"Sequence parallelism off (stated): each TP collective is one all-reduce in place of a reduce-scatter "
            f"and an all-gather of the same volume (a ring all-reduce is the two), so the TP traffic is unchanged; "
            f"but the norms, dropout and residual adds run on the whole sequence on each of the {tp} TP ranks: "
            f"the memory-bound operators' {share:.0%} share outside the TP-split region (their share of the layer's "
            f"kept activations) takes {tp}x its time"
            + (", and stage-to-stage transfers carry the whole sequence, not its 1/t." if stages else "."))


def sequence_split_refusal(tp: int, cp: int, seq_tokens: int, train_stack: str) -> str | None:
    """Why sequence parallelism over ``tp`` ranks cannot split each CP rank's ``seq_tokens / cp`` tokens, or ``None``
    where it can. Megatron-Core scatters the local sequence over the TP ranks (``scatter_to_sequence_parallel_region``),
    and its ``_split_along_first_dim`` asserts "First dimension of the tensor should be divisible by tensor parallel
    size" (NVIDIA/Megatron-LM@00caa53a ``megatron/core/tensor_parallel/mappings.py``); a check only where sequence
    parallelism is on (``--no-sequence-parallel`` lifts it). The PyTorch stack's TP is torchtitan's ``apply_tp``, which
    runs sequence parallelism with every TP (no switch) and asserts ``seq_len % parallel_dims.seq_len_divisor == 0``,
    the divisor TP x 2 x CP: "Sequence Parallel requires that seq_len be divisible by TP degree", with CP's 2 x CP
    load-balanced chunks (pytorch/torchtitan@0119de15 ``torchtitan/distributed/parallel_dims.py``, the assertion in
    @018740b7 ``torchtitan/models/llama3/infra/parallelize.py``: "TP currently cannot handle uneven seq_len"), so
    that stack's rule holds whatever ``--sequence-parallel`` says (:func:`splits_whatever_stated`).

    >>> sequence_split_refusal(8, 1, 2048, "megatron") is None, sequence_split_refusal(8, 1, 2056, "megatron") is None
    (True, True)
    >>> print(sequence_split_refusal(8, 1, 2052, "megatron"))  # doctest: +ELLIPSIS
    --tp 8 with sequence parallelism: Megatron-Core splits each sequence's 2,052 tokens over the 8 TP ranks ...
    >>> print(sequence_split_refusal(8, 1, 2056, "pytorch"))  # doctest: +ELLIPSIS
    --tp 8 on the PyTorch stack: torchtitan runs sequence parallelism with its TP and asserts the sequence is a multiple of TP 8 x 2 x CP 1 = 16 tokens ...
    """
    if tp <= 1:
        return None
    if train_stack == "pytorch":
        divisor = tp * 2 * cp
        if seq_tokens % divisor == 0:
            return None
        return (said("--tp {tp} on the PyTorch stack: torchtitan runs sequence parallelism with its TP and "
                     "asserts the sequence is a multiple of TP {tp} x 2 x CP {cp} = {divisor:,} tokens (its "
                     "seq_len_divisor); {seq_tokens:,} is not: give a multiple of {divisor:,}, or a smaller --tp",
                     tp=tp, cp=cp, divisor=divisor, seq_tokens=seq_tokens))
    local = seq_tokens // cp
    if train_stack != "megatron" or local % tp == 0:
        return None
    where = "each CP rank's share of a sequence," if cp > 1 else "each sequence's"
    return (said("--tp {tp} with sequence parallelism: Megatron-Core splits {where} {local:,} tokens over the "
                 "{tp} TP ranks and refuses a remainder; give a sequence that is a multiple of {value:,} tokens, "
                 "or --no-sequence-parallel (a dense model)", tp=tp, where=where, local=local, value=tp * cp))


def splits_whatever_stated(train_stack: str) -> bool:
    """Whether ``train_stack``'s sequence split (:func:`sequence_split_refusal`) holds with sequence parallelism
    stated off: torchtitan's TP runs it with no switch; Megatron-Core's ``--sequence-parallel`` is a choice.

    >>> splits_whatever_stated("pytorch"), splits_whatever_stated("megatron")
    (True, False)
    """
    return train_stack == "pytorch"


def stated_off_refusal(stated: object, train_stack: str) -> str | None:
    """The one-line refusal of ``--no-sequence-parallel`` on the PyTorch stack, else None. torchtitan's ``apply_tp``
    applies ``SequenceParallel`` to the norms and shards the embedding's output on the sequence with every TP, and
    has no switch to leave it off (pytorch/torchtitan@018740b7 ``torchtitan/models/llama3/infra/parallelize.py``,
    as :func:`sequence_split_refusal` cites): a plan "with sequence parallelism off" there describes a run that stack
    cannot launch, so it is refused rather than planned (stated on, it is what the stack does: taken).

    >>> print(stated_off_refusal(False, "pytorch"))  # doctest: +ELLIPSIS
    --no-sequence-parallel on the PyTorch stack: torchtitan's tensor parallelism always runs sequence parallelism ...
    >>> stated_off_refusal(False, "megatron"), stated_off_refusal(True, "pytorch"), stated_off_refusal(None, "pytorch")
    (None, None, None)
    """
    if stated is not False or train_stack != "pytorch":
        return None
    return said("--no-sequence-parallel on the PyTorch stack: torchtitan's tensor parallelism always runs sequence "
                "parallelism (its apply_tp has no switch to leave it off); drop --no-sequence-parallel, or give "
                "--train-stack megatron, where it is a choice")
