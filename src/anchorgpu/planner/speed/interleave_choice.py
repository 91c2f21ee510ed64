"""The interleaving a training search tries beside plain 1F1B over a pipeline's stages: the deepest number of
virtual stages (chunks a GPU holds) whose chunks split the model's layers evenly, or with the embedding and the loss
counted as a layer each, and where none does, the deepest standard uneven layout that loads the busiest rank no more
than plain 1F1B. Both ``plan``'s chooser (:func:`~anchorgpu.planner.speed.layouts.choose_training_layout`) and the
sweep behind ``recommend`` (:mod:`~anchorgpu.planner.sweep_training`) take it. Pure.
"""

from __future__ import annotations

from functools import lru_cache

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.pipeline_layout import PipelineLayout, uneven_pipeline_layout
from anchorgpu.planner.speed.pipeline import counts_embedding_and_loss

__all__ = ["deepest_interleave", "interleave_of", "uneven_interleave"]

_INTERLEAVES = (2, 4, 5, 8, 10)  # the virtual stages a search tries beside plain 1F1B (the deepest that applies)


def deepest_interleave(model: ModelSpec, pp: int) -> int:
    """The most interleaved chunks a GPU of ``pp`` stages holds (virtual stages; 1: plain 1F1B), as the chooser
    tries them beside 1: more chunks only shrink the bubble (their transfers overlap), so the most whose ``pp * v``
    chunks ``plan()`` takes: chunks that split the layers evenly, or the layers with the embedding and the loss
    counted as one each (:func:`~.pipeline.counts_embedding_and_loss`, Megatron-Core's
    ``--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split``), and no more chunks than
    layers. Llama 3.1 405B's 126 layers interleave that way: 128 / (8 x 8) = 2 a chunk, NVIDIA's DGX Cloud
    benchmark of it on 512 H100 runs PP 8 x VP 8 (NVIDIA/dgxc-benchmarking ``llama3.1/README.md``). The sweep behind
    ``recommend`` times a pipelined layout at this depth too.

    >>> from anchorgpu.planner._examples import llama_3_1_70b
    >>> [deepest_interleave(llama_3_1_70b(), pp) for pp in (1, 2, 4, 8, 16)]  # 80 layers
    [1, 10, 10, 10, 5]
    """
    return _even_interleave(model.num_layers, pp)


def _even_interleave(layers: int, pp: int) -> int:
    """:func:`deepest_interleave` of ``layers`` layers (1 where no ``pp x v`` chunks split them)."""
    return max((v for v in _INTERLEAVES if pp > 1 and pp * v <= layers
                and (layers % (pp * v) == 0 or counts_embedding_and_loss(layers, pp, v))), default=1)


def interleave_of(model: ModelSpec, pp: int) -> tuple[int, PipelineLayout | None]:
    """The interleaving a search tries beside plain 1F1B over ``pp`` stages: (virtual stages, the stated layout its
    chunks need or ``None``): :func:`deepest_interleave` where ``pp x v`` chunks split the layers, else the standard
    uneven layout of :func:`uneven_interleave`, else (1, ``None``). The chooser and the sweep behind ``recommend``
    both take it.

    >>> from anchorgpu.architectures import load_model
    >>> v, stated = interleave_of(load_model("deepseek-v3"), 8)
    >>> v, stated.text
    (4, 'Et|(tt|)*30L')
    """
    uneven = uneven_interleave(model, pp)
    return (uneven.virtual_stages, uneven) if uneven is not None else (deepest_interleave(model, pp), None)


def uneven_interleave(model: ModelSpec, pp: int) -> PipelineLayout | None:
    """Where :func:`deepest_interleave` finds no interleave (no ``pp * v`` chunks split the layers, even with the
    embedding and the loss counted as a layer each: DeepSeek-V3's 61 layers, 63 counted, over powers of two), the
    deepest whose standard uneven layout (:func:`~anchorgpu.planner.pipeline_layout.uneven_pipeline_layout`, Megatron-
    Core's ``--pipeline-model-parallel-layout`` as NVIDIA's DeepSeek-V3 runs write it) puts no more layers on the
    busiest rank than plain 1F1B's split; ``None`` where none does. The chooser and the sweep behind ``recommend``
    try it beside plain 1F1B, as they try :func:`deepest_interleave`.

    >>> from anchorgpu.planner._examples import llama_3_1_70b
    >>> [uneven_interleave(llama_3_1_70b(), pp) for pp in (2, 8)]  # 80 layers interleave evenly: none needed
    [None, None]
    """
    return _uneven_interleave(model.num_layers, pp, model.name)


@lru_cache(maxsize=256)
def _uneven_interleave(layers: int, pp: int, name: str) -> PipelineLayout | None:
    if pp <= 1 or _even_interleave(layers, pp) > 1:
        return None
    return next((found for v in sorted(_INTERLEAVES, reverse=True) if pp * v <= layers
                 and (found := uneven_pipeline_layout(layers, pp, v, name)) is not None), None)
