"""A stated global batch is planned as given, never rounded: the checks that refuse one a training run could not take,
each in one line naming the values and the nearest batches it could, and the assumption line that says which batch a
step is timed with. Pure; stdlib only.

What the training stacks accept (each counts the data-parallel ranks without the context-parallel ones, which share
each sequence: a batch splits over DP x micro-batch sequences whatever CP is):

* Megatron-LM: ``--global-batch-size`` counts sequences; ``data_parallel_size = world_size // (TP x PP x CP)``
  (NVIDIA/Megatron-LM@000c4ac2 megatron/training/arguments.py, ``validate_args``), and the constant micro-batch
  calculator asserts ``global_batch_size % (micro_batch_size * data_parallel_size) == 0`` ("global batch size (..) is
  not divisible by micro batch size (..) times data parallel size (..)") unless ``--decrease-batch-size-if-needed``
  rounds it down (NVIDIA/Megatron-LM@00caa53a megatron/core/num_microbatches_calculator.py,
  ``ConstantNumMicroBatchesCalculator``).
* torchtitan: ``training.global_batch_size`` counts sequences and must be a multiple of ``local_batch_size`` times the
  ``dp`` mesh's size (replicate x shard; CP is a mesh dimension of its own), else it asserts
  (pytorch/torchtitan@000204a4 torchtitan/train.py, ``Trainer.__init__``).
* OLMo-core: counts tokens; the rank micro-batch must be a whole number of sequences, and the global batch a multiple
  of it times the data-parallel world size, else ``OLMoConfigurationError`` (allenai/OLMo-core@29dabb3b
  src/olmo_core/train/train_module/transformer/train_module.py, ``__init__`` and ``pre_train``).

The planner's ``--global-batch`` counts tokens, as OLMo-core does: it must be whole sequences of the run's length,
and whole micro-batches for every data-parallel rank. Only the planner's own default batch may be adjusted to the
layout, and the plan's assumptions then say so (:func:`batch_timed_line`).
"""

from __future__ import annotations

from functools import lru_cache

from anchorgpu.errors import InvalidWorkload, Said, said

BATCH_TIMED_LABEL = "global batch timed"
"""How the assumption that says which global batch a training step is timed with begins (:func:`batch_timed_line`)."""

__all__ = ["BATCH_TIMED_LABEL", "batch_timed_line", "check_split", "check_whole_sequences", "split_refusal", "splits",
           "unfit_fallback_refusal", "unsplit_by_any_refusal", "whole_sequences_refusal"]


def whole_sequences_refusal(batch_tokens: int, seq_tokens: int) -> str | None:
    """Why a stated batch of ``batch_tokens`` is not whole sequences of ``seq_tokens``, naming the nearest whole
    batches; ``None`` where it is.

    >>> whole_sequences_refusal(100_000, 4096)
    '--global-batch 100,000 tokens is not a whole number of 4,096-token sequences (24.41 of them); the nearest whole batches are 98,304 tokens (24 sequences) and 102,400 tokens (25)'
    >>> whole_sequences_refusal(2048, 4096)
    '--global-batch 2,048 tokens is less than one sequence of 4,096 tokens; the smallest whole batch is 4,096 tokens'
    >>> whole_sequences_refusal(8192, 4096) is None
    True
    """
    if batch_tokens % seq_tokens == 0:
        return None
    below = batch_tokens // seq_tokens
    if below == 0:
        return said("--global-batch {batch_tokens:,} tokens is less than one sequence of {seq_tokens:,} tokens; "
                    "the smallest whole batch is {seq_tokens:,} tokens", batch_tokens=batch_tokens,
                    seq_tokens=seq_tokens)
    values = {"batch_tokens": batch_tokens, "seq_tokens": seq_tokens, "sequences": _fraction(batch_tokens, seq_tokens),
              "below_tokens": below * seq_tokens, "below": below, "above_tokens": (below + 1) * seq_tokens,
              "above": below + 1}
    if below == 1:
        return said("--global-batch {batch_tokens:,} tokens is not a whole number of {seq_tokens:,}-token sequences "
                    "({sequences} of them); the nearest whole batches are {below_tokens:,} tokens (1 sequence) and "
                    "{above_tokens:,} tokens ({above})", **values)
    return said("--global-batch {batch_tokens:,} tokens is not a whole number of {seq_tokens:,}-token sequences "
                "({sequences} of them); the nearest whole batches are {below_tokens:,} tokens ({below} sequences) "
                "and {above_tokens:,} tokens ({above})", **values)


def _fraction(batch_tokens: int, seq_tokens: int) -> str:
    """``batch_tokens / seq_tokens``, not whole, with two decimals or the more it takes not to read as whole.

    >>> _fraction(100_000, 4096), _fraction(2049, 2048), _fraction(4095, 2048)
    ('24.41', '1.0005', '1.9995')
    """
    ratio, places = batch_tokens / seq_tokens, 2
    while places < 12 and float(f"{ratio:.{places}f}").is_integer():
        places += 1
    return f"{ratio:.{places}f}"


def check_whole_sequences(batch_tokens: int | None, seq_tokens: int) -> None:
    """Refuse a stated batch that is not whole sequences (:func:`whole_sequences_refusal`); ``None``: not stated."""
    if batch_tokens is not None and (line := whole_sequences_refusal(batch_tokens, seq_tokens)) is not None:
        raise InvalidWorkload(line)


def splits(batch_tokens: int, *, dp: int, micro_batch: int, seq_tokens: int) -> bool:
    """Whether ``batch_tokens`` gives each of ``dp`` ranks a whole number (one or more) of micro-batches.

    >>> splits(98_304, dp=8, micro_batch=1, seq_tokens=4096), splits(98_304, dp=16, micro_batch=1, seq_tokens=4096)
    (True, False)
    """
    return batch_tokens % (dp * micro_batch * seq_tokens) == 0


def _stated(batch_tokens: int, seq_tokens: int) -> str:
    """``--global-batch N tokens (n sequences of s)``, as the refusals name a stated batch of whole sequences."""
    n = batch_tokens // seq_tokens
    if n == 1:
        return said("--global-batch {batch_tokens:,} tokens (1 sequence of {seq_tokens:,})", batch_tokens=batch_tokens,
                    seq_tokens=seq_tokens)
    return said("--global-batch {batch_tokens:,} tokens ({sequences:,} sequences of {seq_tokens:,})",
                batch_tokens=batch_tokens, sequences=n, seq_tokens=seq_tokens)


def _nearest(batch_tokens: int, round_tokens: int) -> str:
    """The nearest multiples of ``round_tokens`` either side of ``batch_tokens`` (the smallest, when it is below)."""
    below = batch_tokens // round_tokens * round_tokens
    if below == 0:
        return said("the smallest batch that does is {round_tokens:,} tokens", round_tokens=round_tokens)
    return said("the nearest batches that do are {below:,} and {above:,} tokens", below=below,
                above=below + round_tokens)


def split_refusal(batch_tokens: int, *, dp: int, micro_batch: int, seq_tokens: int, cp: int = 1) -> str | None:
    """Why a stated batch (whole sequences) does not give each data-parallel rank whole micro-batches, naming the
    layout's values and the nearest batches that would; ``None`` where it does. ``cp``: the context-parallel ranks,
    which share each sequence and so leave the split alone (named only to say so).

    >>> split_refusal(98_304, dp=16, micro_batch=1, seq_tokens=4096)
    '--global-batch 98,304 tokens (24 sequences of 4,096) does not split into whole micro-batches over DP 16 x micro-batch 1 (16 sequences, 65,536 tokens a round); the nearest batches that do are 65,536 and 131,072 tokens'
    >>> split_refusal(4096, dp=2, micro_batch=1, seq_tokens=4096, cp=2)
    '--global-batch 4,096 tokens (1 sequence of 4,096) is smaller than one micro-batch per data-parallel rank: DP 2 x micro-batch 1 (2 sequences, 8,192 tokens a round; the 2 CP ranks of a data-parallel rank share each sequence); the smallest batch that does is 8,192 tokens'
    >>> split_refusal(131_072, dp=8, micro_batch=2, seq_tokens=4096) is None
    True
    """
    round_tokens = dp * micro_batch * seq_tokens
    if batch_tokens % round_tokens == 0:
        return None
    stated, nearest = _stated(batch_tokens, seq_tokens), _nearest(batch_tokens, round_tokens)
    shared = said("; the {cp} CP ranks of a data-parallel rank share each sequence", cp=cp) if cp > 1 else ""
    if batch_tokens < round_tokens:
        return said("{stated} is smaller than one micro-batch per data-parallel rank: DP {dp} x micro-batch "
                    "{micro_batch} ({sequences:,} sequences, {round_tokens:,} tokens a round{shared}); {nearest}",
                    stated=stated, dp=dp, micro_batch=micro_batch, sequences=dp * micro_batch,
                    round_tokens=round_tokens, shared=shared, nearest=nearest)
    return said("{stated} does not split into whole micro-batches over DP {dp} x micro-batch {micro_batch} "
                "({sequences:,} sequences, {round_tokens:,} tokens a round{shared}); {nearest}", stated=stated, dp=dp,
                micro_batch=micro_batch, sequences=dp * micro_batch, round_tokens=round_tokens, shared=shared,
                nearest=nearest)


def check_split(batch_tokens: int | None, *, dp: int, micro_batch: int, seq_tokens: int, cp: int = 1) -> int:
    """The micro-batches each data-parallel rank runs a step with a stated batch, exactly; the batch refused in one
    line (:func:`whole_sequences_refusal`, then :func:`split_refusal`) where it does not split. ``None`` (no batch
    stated): 1, the caller times the default batch.

    >>> check_split(131_072, dp=8, micro_batch=1, seq_tokens=4096), check_split(None, dp=8, micro_batch=1, seq_tokens=4096)
    (4, 1)
    """
    if batch_tokens is None:
        return 1
    round_tokens = dp * micro_batch * seq_tokens
    if batch_tokens % round_tokens == 0:  # whole micro-batches for every rank, so whole sequences: neither refusal
        return batch_tokens // round_tokens
    check_whole_sequences(batch_tokens, seq_tokens)
    line = split_refusal(batch_tokens, dp=dp, micro_batch=micro_batch, seq_tokens=seq_tokens, cp=cp)
    if line is not None:
        raise InvalidWorkload(line)
    return batch_tokens // (dp * micro_batch * seq_tokens)


def unsplit_by_any_refusal(batch_tokens: int, tried: list[tuple[int, int]], seq_tokens: int, gpus: int) -> str:
    """The line refusing a stated batch that no (DP, micro-batch) pair a layout search tried on ``gpus`` GPUs splits,
    naming the pairs and the nearest batches the smallest of them would split.

    >>> unsplit_by_any_refusal(12 * 4096, [(8, 1), (8, 2), (8, 4)], 4096, 8)
    '--global-batch 49,152 tokens (12 sequences of 4,096) splits into whole micro-batches for no layout of the 8 GPUs: DP x micro-batch tried 8 x 1, 8 x 2, 8 x 4; over DP 8 x micro-batch 1 the nearest batches that do are 32,768 and 65,536 tokens'
    """
    pairs = sorted(set(tried), key=lambda p: (p[0] * p[1], p))
    dp, mb = pairs[0]
    return said("{stated} splits into whole micro-batches for no layout of the {gpus:,} GPUs: DP x micro-batch tried "
                "{tried}; over DP {dp:,} x micro-batch {micro_batch} {nearest}", stated=_stated(batch_tokens, seq_tokens),
                gpus=gpus, tried=", ".join(f"{d:,} x {m}" for d, m in pairs), dp=dp, micro_batch=mb,
                nearest=_nearest(batch_tokens, dp * mb * seq_tokens))


def unfit_fallback_refusal(batch_tokens: int, *, dp: int, micro_batch: int, seq_tokens: int, gpu_name: str) -> str:
    """The line refusing a stated batch where no layout chosen for the user that splits it fits the GPU, and the plain
    data-parallel layout a plan then shows in its place (to say what would fit) does not split it either.

    >>> unfit_fallback_refusal(12 * 4096, dp=8, micro_batch=1, seq_tokens=4096, gpu_name="l40s")
    '--global-batch 49,152 tokens (12 sequences of 4,096): no layout tried that splits it into whole micro-batches fits l40s, and the plain DP 8 x micro-batch 1 a plan shows in its place does not split it; the nearest batches that do are 32,768 and 65,536 tokens'
    """
    return said("{stated}: no layout tried that splits it into whole micro-batches fits {gpu_name}, and the plain DP "
                "{dp} x micro-batch {micro_batch} a plan shows in its place does not split it; {nearest}",
                stated=_stated(batch_tokens, seq_tokens), gpu_name=gpu_name, dp=dp, micro_batch=micro_batch,
                nearest=_nearest(batch_tokens, dp * micro_batch * seq_tokens))


_AS_GIVEN = said("as --global-batch gives it")
_THE_DEFAULT = said("the default (--global-batch not given)")


@lru_cache(maxsize=256)  # the same request's line again (a face that asks twice, a search's repeated layouts)
def batch_timed_line(timed_tokens: int, *, stated: bool, default_tokens: int, microbatches: int, dp: int,
                     micro_batch: int, seq_tokens: int, finetune_sequences: int | None = None) -> str:
    """The assumption saying which global batch a training step is timed with: the stated one as given, else the
    planner's default, raised to whole micro-batches for the layout where it is not a whole number of them.
    ``finetune_sequences``: the default is the fine-tuning one of that many sequences (LoRA, QLoRA), named so.

    >>> batch_timed_line(131_072, stated=True, default_tokens=4 * 2**20, microbatches=4, dp=8, micro_batch=1, seq_tokens=4096)
    'global batch timed: 131,072 tokens, as --global-batch gives it = 4 micro-batches x DP 8 x micro-batch 1 x 4,096 tokens'
    >>> batch_timed_line(4_202_496, stated=False, default_tokens=4 * 2**20, microbatches=342, dp=3, micro_batch=1, seq_tokens=4096)
    'global batch timed: 4,202,496 tokens, the default 4,194,304 (--global-batch not given) rounded up to whole micro-batches for this layout = 342 micro-batches x DP 3 x micro-batch 1 x 4,096 tokens'
    >>> batch_timed_line(65_536, stated=False, default_tokens=65_536, microbatches=32, dp=1, micro_batch=1, seq_tokens=2048, finetune_sequences=32)
    'global batch timed: 65,536 tokens, the default for fine-tuning, 32 sequences (--global-batch not given) = 32 micro-batches x DP 1 x micro-batch 1 x 2,048 tokens'
    """
    source: Said
    if stated:
        source = _AS_GIVEN
    elif finetune_sequences is not None:
        source = (said("the default for fine-tuning, {sequences} sequences (--global-batch not given)",
                       sequences=finetune_sequences) if timed_tokens == default_tokens else
                  said("the default for fine-tuning, {sequences} sequences (--global-batch not given) rounded up to "
                       "whole micro-batches for this layout", sequences=finetune_sequences))
    elif timed_tokens == default_tokens:
        source = _THE_DEFAULT
    else:
        source = said("the default {default_tokens:,} (--global-batch not given) rounded up to whole micro-batches for "
                      "this layout", default_tokens=default_tokens)
    # the label (BATCH_TIMED_LABEL) spelt out: a message id is a literal; {es} the English plural, which a translation
    # words its own way
    return said("global batch timed: {timed_tokens:,} tokens, {source} = {microbatches:,} micro-batch{es} x DP {dp} x "
                "micro-batch {micro_batch} x {seq_tokens:,} tokens", timed_tokens=timed_tokens, source=source,
                microbatches=microbatches, es="es" if microbatches != 1 else "", dp=dp, micro_batch=micro_batch,
                seq_tokens=seq_tokens)
