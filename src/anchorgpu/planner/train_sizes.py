"""The parallel sizes a layout chosen for training, and the recommend sweep of them, try: context-parallel sizes by
the sequence, expert-parallel sizes by the experts, pipeline depths by the layers (and the GPUs left). Each search
keeps the sizes that divide its own GPUs. Pure; stdlib only."""

from __future__ import annotations

__all__ = ["CP_MIN_TOKENS_PER_RANK", "MAX_TRAIN_PP", "train_cp_sizes", "train_ep_sizes", "train_pp_sizes"]


def train_cp_sizes(seq_tokens: int) -> tuple[int, ...]:
    """The context-parallel sizes a layout chosen for training, and the recommend sweep, try: none below 16,384
    tokens a sequence; above, the powers of two whose 2 x CP chunks split the sequence and leave each GPU at least
    :data:`CP_MIN_TOKENS_PER_RANK` of its tokens (shorter pieces make ring attention's chunks too small to hide their
    K/V transfers), however many: CP 8 at 32,768 tokens, 32 at 131,072 (Llama 3 trained its 128K stage at CP 16,
    arXiv:2407.21783 Table 4: TP 8 x CP 16 x PP 16 on 16,384 H100), 256 at 1,048,576. Each search keeps the sizes that divide its GPUs.

    >>> train_cp_sizes(8192), train_cp_sizes(32768), train_cp_sizes(131072)
    ((1,), (1, 2, 4, 8), (1, 2, 4, 8, 16, 32))
    >>> train_cp_sizes(16384), train_cp_sizes(1_048_576)[-1], train_cp_sizes(3 * 2**15), train_cp_sizes(2 * 9001)
    ((1, 2, 4), 256, (1, 2, 4, 8, 16), (1,))
    """
    if seq_tokens < 16384:
        return (1,)
    sizes = [1]
    # each size cuts the sequence into 2 x CP equal chunks (speed.context_parallel.cp_split_refusal)
    while seq_tokens % (sizes[-1] * 4) == 0 and seq_tokens // (sizes[-1] * 2) >= CP_MIN_TOKENS_PER_RANK:
        sizes.append(sizes[-1] * 2)
    return tuple(sizes)


CP_MIN_TOKENS_PER_RANK = 4096
"""The fewest of a sequence's tokens a context-parallel rank is left by :func:`train_cp_sizes`."""


def train_ep_sizes(num_experts: int) -> tuple[int, ...]:
    """The expert-parallel sizes a layout chosen for training a mixture of experts, and the sweep of them, try: the
    powers of two up to 64 that divide its experts (each layout then keeps those that divide its GPUs of a stage).

    >>> train_ep_sizes(128), train_ep_sizes(8)
    ((1, 2, 4, 8, 16, 32, 64), (1, 2, 4, 8))
    """
    return tuple(e for e in (1, 2, 4, 8, 16, 32, 64) if num_experts % e == 0)


MAX_TRAIN_PP = 64
"""The deepest pipeline a training search tries (:func:`train_pp_sizes`)."""


def train_pp_sizes(num_layers: int, gpus: int | None = None) -> tuple[int, ...]:
    """The pipeline depths a layout chosen for training, and the recommend sweep of them, try: 1 and the powers of two
    up to :data:`MAX_TRAIN_PP` that are no more than the model's layers and, where ``gpus`` is given (the GPUs left
    after TP and CP), divide them. Each search keeps the depths that divide its own GPUs.

    >>> train_pp_sizes(126), train_pp_sizes(126, gpus=48), train_pp_sizes(32, gpus=128)
    ((1, 2, 4, 8, 16, 32, 64), (1, 2, 4, 8, 16), (1, 2, 4, 8, 16, 32))
    """
    return tuple(p for p in (1 << k for k in range(MAX_TRAIN_PP.bit_length()))
                 if p <= MAX_TRAIN_PP and (p == 1 or p <= num_layers) and (gpus is None or gpus % p == 0))
