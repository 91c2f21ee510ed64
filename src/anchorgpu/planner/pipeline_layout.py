"""An explicit pipeline layout as Megatron-Core states it (``--pipeline-model-parallel-layout``): which layers each
pipeline chunk holds, so a model whose layers ``pp * v`` chunks do not divide (DeepSeek-V3's 61) can be planned with
the split its run used. Pure; stdlib only.

The syntax and rules follow Megatron-LM's parser, ``PipelineParallelLayerLayout`` (``parse_str_to_list`` and
``validate_layer_layout``) in NVIDIA/Megatron-LM ``megatron/core/transformer/pipeline_parallel_layer_layout.py``
(commit 00caa53af30912914981c86f39db123961678bbd):

* ``|`` ends a chunk; ``E`` is the embedding, ``t`` a transformer layer, ``L`` the loss (output layer) and ``m`` a
  multi-token-prediction layer; commas are cosmetic and dropped;
* ``x*N`` repeats one symbol N times and ``(...)*N`` a group (one level, no nesting), so ``Et|(tt|)*30L`` is a chunk
  with the embedding and one layer, thirty chunks of two layers and a last chunk with the loss alone;
* the chunk count must be a multiple of the pipeline ranks, ``pp * v``; chunk ``i`` runs on pipeline rank
  ``i % pp`` as its virtual stage ``i // pp``;
* the embedding comes first and the loss last, once each, and the ``t`` count is the model's layers.

The planner is a little stricter than Megatron in two places, each said in its refusal: the embedding must open the
first chunk (Megatron only asks that it be the first symbol, so a leading empty chunk would pass there), and ``m`` is
refused, since the planner models no multi-token-prediction layers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from anchorgpu.errors import InvalidWorkload

__all__ = ["PipelineLayout", "busiest_rank_layers", "parse_pipeline_layout"]

_SYMBOLS = "E embedding, t transformer layer, L loss, m multi-token-prediction layer, | chunk end, x*N and (...)*N repeats"
_GROUP = re.compile(r"\(([^()]+)\)\*(\d+)")
_REPEAT = re.compile(r"(.)\*(\d+)")


@dataclass(frozen=True, slots=True)
class PipelineLayout:
    """A parsed layout: the transformer layers of each chunk in the string's order (chunk ``i`` on pipeline rank
    ``i % pp``), the pipeline ranks, and the chunks that hold the embedding (the first) and the loss (the last).

    >>> lay = parse_pipeline_layout("Et|(tt|)*30L", pp=8, virtual_stages=None, num_layers=61, model_name="m")
    >>> lay.virtual_stages, lay.rank_layers, lay.busiest_rank_layers
    (4, (7, 8, 8, 8, 8, 8, 8, 6), 8)
    """

    text: str
    pp: int
    chunk_layers: tuple[int, ...]
    embedding_chunk: int = 0
    loss_chunk: int = 0

    @property
    def virtual_stages(self) -> int:
        """Chunks a pipeline rank holds."""
        return len(self.chunk_layers) // self.pp

    @property
    def rank_layers(self) -> tuple[int, ...]:
        """Transformer layers each pipeline rank holds: rank ``r`` runs chunks ``r, r + pp, r + 2 pp, ...``."""
        return tuple(sum(self.chunk_layers[r::self.pp]) for r in range(self.pp))

    @property
    def busiest_rank_layers(self) -> int:
        """The layers of the rank with the most: it sets the pace of a step and the memory planned."""
        return max(self.rank_layers)


def busiest_rank_layers(layout: PipelineLayout | None) -> int | None:
    """The busiest rank's layers of an explicit layout, or None without one (the split is then as even as whole
    layers allow, ``ceil(layers / pp)``)."""
    return None if layout is None else layout.busiest_rank_layers


def _expand(text: str) -> str:
    """The layout with its repeats written out, refusing what Megatron's two substitutions would leave unexpanded."""
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth < 0:
            raise InvalidWorkload(f"--pipeline-layout {text!r}: a ')' closes no '(' (unbalanced parentheses)")
        if depth > 1:
            raise InvalidWorkload(f"--pipeline-layout {text!r}: nested parentheses; Megatron-Core expands one level")
    if depth:
        raise InvalidWorkload(f"--pipeline-layout {text!r}: a '(' is never closed (unbalanced parentheses)")
    flat = _GROUP.sub(lambda m: m.group(1) * int(m.group(2)), text)
    if "(" in flat:
        raise InvalidWorkload(f"--pipeline-layout {text!r}: a group in parentheses needs a repeat count, (...)*N, "
                              "and something inside it")
    flat = _REPEAT.sub(lambda m: m.group(1) * int(m.group(2)), flat)
    if "*" in flat:
        raise InvalidWorkload(f"--pipeline-layout {text!r}: '*' needs a symbol before it and a count after it")
    return flat


def parse_pipeline_layout(text: str, *, pp: int, virtual_stages: int | None, num_layers: int,
                          model_name: str) -> PipelineLayout:
    """Parse a Megatron-Core layout string for ``pp`` pipeline ranks and a model of ``num_layers`` layers; with
    ``virtual_stages`` given the chunks must number ``pp * virtual_stages``, without it they must divide over the
    ranks. Each malformed string is an :class:`~anchorgpu.errors.InvalidWorkload` naming it and what is wrong.

    >>> parse_pipeline_layout("Et*3|t*4|t*4|t*5L", pp=2, virtual_stages=2, num_layers=16, model_name="m").rank_layers
    (7, 9)
    >>> parse_pipeline_layout("Et|ttL", pp=2, virtual_stages=None, num_layers=4, model_name="toy")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --pipeline-layout 'Et|ttL': 3 transformer layers (t), not the 4 layers of toy
    """
    flat = _expand(text.replace(",", ""))
    for char in flat:
        if char not in "EtLm|":
            raise InvalidWorkload(f"--pipeline-layout {text!r}: unknown symbol {char!r} (known: {_SYMBOLS})")
    if "m" in flat:
        raise InvalidWorkload(f"--pipeline-layout {text!r}: 'm' places a multi-token-prediction layer, and the "
                              f"planner models none for {model_name} (leave it out of the layout)")
    chunks = flat.split("|")
    if virtual_stages is not None and len(chunks) != pp * virtual_stages:
        raise InvalidWorkload(f"--pipeline-layout {text!r}: {len(chunks)} chunks, not pp {pp} x "
                              f"{virtual_stages} virtual stages = {pp * virtual_stages}")
    if len(chunks) % pp:
        raise InvalidWorkload(f"--pipeline-layout {text!r}: {len(chunks)} chunks do not divide over the {pp} "
                              "pipeline ranks (the chunk count must be pp x virtual stages)")
    if flat.count("E") != 1 or not flat.startswith("E"):
        raise InvalidWorkload(f"--pipeline-layout {text!r}: the embedding E must open the first chunk, once")
    if flat.count("L") != 1 or not flat.endswith("L"):
        raise InvalidWorkload(f"--pipeline-layout {text!r}: the loss L must close the last chunk, once")
    layers = flat.count("t")
    if layers != num_layers:
        raise InvalidWorkload(f"--pipeline-layout {text!r}: {layers} transformer layers (t), not the {num_layers} "
                              f"layers of {model_name}")
    return PipelineLayout(text=text, pp=pp, chunk_layers=tuple(chunk.count("t") for chunk in chunks),
                          embedding_chunk=0, loss_chunk=len(chunks) - 1)
