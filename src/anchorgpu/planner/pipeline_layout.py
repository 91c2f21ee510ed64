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

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.validation import LIMITS

__all__ = ["PipelineLayout", "busiest_rank_layers", "parse_pipeline_layout", "uneven_pipeline_layout"]

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


def _substituted_length(pattern: re.Pattern[str], text: str, unit: int) -> int:
    """The length ``text`` has once each match of ``pattern`` (a part and its ``*N``) is written out ``N`` times,
    counted without writing it: ``unit`` 1 counts a matched part as its text, 0 as one symbol (``x*N``)."""
    return len(text) + sum((len(m.group(1)) if unit else 1) * int(m.group(2)) - len(m.group(0))
                           for m in pattern.finditer(text))


def _expand(text: str, max_symbols: int) -> str:
    """The layout with its repeats written out, refusing what Megatron's two substitutions would leave unexpanded,
    and a repeat count that would write out more than ``max_symbols`` symbols, which no layout of the model holds
    (counted before writing it: ``t*99999999999`` ran the process out of memory, a 500 on the API, stop61_qa27)."""
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth < 0:
            raise InvalidWorkload(said("--pipeline-layout {text!r}: a ')' closes no '(' (unbalanced parentheses)",
                                       text=text))
        if depth > 1:
            raise InvalidWorkload(said("--pipeline-layout {text!r}: nested parentheses; Megatron-Core expands one "
                                       "level", text=text))
    if depth:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: a '(' is never closed (unbalanced parentheses)",
                                   text=text))
    _within(text, _substituted_length(_GROUP, text, 1), 4 * max_symbols, max_symbols)
    flat = _GROUP.sub(lambda m: m.group(1) * int(m.group(2)), text)
    if "(" in flat:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: a group in parentheses needs a repeat count, "
                                   "(...)*N, and something inside it", text=text))
    _within(text, _substituted_length(_REPEAT, flat, 0), max_symbols, max_symbols)
    flat = _REPEAT.sub(lambda m: m.group(1) * int(m.group(2)), flat)
    if "*" in flat:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: '*' needs a symbol before it and a count after it",
                                   text=text))
    return flat


def _within(text: str, length: int, bound: int, max_symbols: int) -> None:
    """Refuse a layout whose repeats write out more than ``bound`` characters (``max_symbols`` in the line)."""
    if length > bound:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: its repeats write out {length} symbols, more than "
                                   "any layout of the model has ({max_symbols} at most: its layers, E, L and a '|' "
                                   "between chunks)", text=text if len(text) <= 60 else text[:57] + "...",
                                   length=f"{length:,}", max_symbols=f"{max_symbols:,}"))


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
    # the most symbols a layout can have: each layer once, E and L, and a '|' between chunks, of which there are
    # pp x virtual stages, the virtual stages at most as many as any face accepts (validation.LIMITS; a count that
    # does not match the stated virtual stages keeps its own refusal below)
    most_chunks = pp * int(LIMITS["virtual_stages"].high)
    flat = _expand(text.replace(",", ""), num_layers + 2 + most_chunks - 1)
    for char in flat:
        if char not in "EtLm|":
            raise InvalidWorkload(said("--pipeline-layout {text!r}: unknown symbol {char!r} (known: {_SYMBOLS})",
                                       text=text, char=char, _SYMBOLS=_SYMBOLS))
    if "m" in flat:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: 'm' places a multi-token-prediction layer, and "
                                   "the planner models none for {model_name} (leave it out of the layout)", text=text,
                                   model_name=model_name))
    chunks = flat.split("|")
    if virtual_stages is not None and len(chunks) != pp * virtual_stages:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: {chunks} chunks, not pp {pp} x {virtual_stages} "
                                   "virtual stages = {value}", text=text, chunks=len(chunks), pp=pp,
                                   virtual_stages=virtual_stages, value=pp * virtual_stages))
    if len(chunks) % pp:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: {chunks} chunks do not divide over the {pp} "
                                   "pipeline ranks (the chunk count must be pp x virtual stages)", text=text,
                                   chunks=len(chunks), pp=pp))
    if flat.count("E") != 1 or not flat.startswith("E"):
        raise InvalidWorkload(said("--pipeline-layout {text!r}: the embedding E must open the first chunk, once",
                                   text=text))
    if flat.count("L") != 1 or not flat.endswith("L"):
        raise InvalidWorkload(said("--pipeline-layout {text!r}: the loss L must close the last chunk, once",
                                   text=text))
    layers = flat.count("t")
    if layers != num_layers:
        raise InvalidWorkload(said("--pipeline-layout {text!r}: {layers} transformer layers (t), not the "
                                   "{num_layers} layers of {model_name}", text=text, layers=layers,
                                   num_layers=num_layers, model_name=model_name))
    return PipelineLayout(text=text, pp=pp, chunk_layers=tuple(chunk.count("t") for chunk in chunks),
                          embedding_chunk=0, loss_chunk=len(chunks) - 1)


def _layers_text(count: int) -> str:
    """``count`` transformer layers as the published layouts write them: ``t``, ``tt``, then ``t*N``."""
    return "t" * count if count <= 2 else f"t*{count}"


def _uneven_text(first: int, each: int, last: int, chunks: int) -> str:
    """The layout of ``chunks`` chunks: the embedding and ``first`` layers, ``each`` layers in every middle chunk,
    ``last`` layers and the loss."""
    middle = chunks - 2
    group = ("" if middle == 0 else _layers_text(each) + "|" if middle == 1
             else f"({_layers_text(each)}|)*{middle}")
    return f"E{_layers_text(first)}|{group}{_layers_text(last)}L"


def uneven_pipeline_layout(num_layers: int, pp: int, virtual_stages: int, model_name: str) -> PipelineLayout | None:
    """The standard uneven layout of ``num_layers`` layers in ``pp * virtual_stages`` chunks, for a layer count
    those chunks do not split evenly, in the two forms NVIDIA's DeepSeek-V3 (61 layers) runs state, each a first
    chunk with the embedding, equal middle chunks and a last chunk with the loss:

    * the embedding and the loss counted as a layer each, ``c = ceil((layers + 2) / chunks)`` a chunk, the last
      chunk the rest: ``Et|(tt|)*30mL`` at PP 8 x VP 4 and PP 16 x VP 2 (yanring/Megatron-MoE-ModelZoo@78930f0c
      ``best-practice/DeepSeekV3/README.md``; NVIDIA-NeMo/Megatron-Bridge@04264182
      ``scripts/performance/configs/deepseek/deepseek_workload_base_configs.py``, H100 PP 8 x VP 4), and
      ``Et*7|(t*8|)*6t*6L`` at PP 2 x VP 4 (row MB-GB300-DSV3);
    * ``c = ceil(layers / chunks)`` layers beside the embedding and in each middle chunk, the last chunk the rest:
      Megatron-Bridge's DeepSeek-V3 recipe's ``layout_map`` (``set_deepseek_v3_pipeline_model_parallel_layout``,
      ``src/megatron/bridge/recipes/deepseek/deepseek_v3.py``: PP 16, PP 8 x VP 2 and PP 4 x VP 4 as
      ``E t*4 | (t*4|)*14 | t L``).

    The first form where both fit in the chunks (its ranks carrying the embedding and the loss lighter), else the
    other; ``None`` where neither does (a last chunk short of layers) or where the busiest rank would hold more than
    ``ceil(layers / pp)`` layers, what plain 1F1B's even split holds (the planner times a stage by its busiest rank:
    :attr:`PipelineLayout.busiest_rank_layers`). The planner models no multi-token-prediction layer: no ``m``.

    >>> [uneven_pipeline_layout(61, pp, v, "m").text for pp, v in ((8, 4), (16, 2), (2, 4), (4, 4))]
    ['Et|(tt|)*30L', 'Et|(tt|)*30L', 'Et*7|(t*8|)*6t*6L', 'Et*3|(t*4|)*14ttL']
    >>> uneven_pipeline_layout(61, 4, 5, "m") is None  # 20 chunks: 4 a chunk leaves the last none to hold
    True
    """
    chunks = pp * virtual_stages
    if chunks < 2 or chunks > num_layers:
        return None
    counted = -(-(num_layers + 2) // chunks)  # the embedding and the loss a layer each
    for first, each in ((counted - 1, counted), (-(-num_layers // chunks),) * 2):
        last = num_layers - first - each * (chunks - 2)
        if last < 0:
            continue
        layout = parse_pipeline_layout(_uneven_text(first, each, last, chunks), pp=pp, virtual_stages=virtual_stages,
                                       num_layers=num_layers, model_name=model_name)
        if layout.busiest_rank_layers <= -(-num_layers // pp):
            return layout
    return None
