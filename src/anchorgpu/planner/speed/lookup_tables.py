"""The weight bytes a GPU holds that a serving step does not stream: the tables a forward pass only gathers rows from
(the token embedding where the LM head is not tied to it, learned positions). Pure; the serving step
(:mod:`anchorgpu.planner.speed.serving`) takes them off the weights it reads, the sweep's ticks
(:mod:`anchorgpu.planner.sweep_serving_ticks`) alike, and the memory a GPU holds keeps them.

An embedding lookup is an index gather: vLLM's ``VocabParallelEmbedding.forward`` runs
``F.embedding(masked_input.long(), self.weight)`` on its shard of the vocabulary (``V / tp`` rows a rank,
vllm/model_executor/layers/vocab_parallel_embedding.py; TensorRT-LLM's ``pre_comm_embedding_ops``, ``F.embedding(input_,
weight)``, tensorrt_llm/_torch/modules/embedding.py), which reads one row a token, not the table. The LM head's
product (``ParallelLMHead``, used in the sampler) reads its whole ``V / tp x h`` matrix every step; where the
embeddings are tied that matrix is the table, so a tied table is read once, by the head. The rows a step gathers,
``tokens x h x 2`` bytes, are left out: for Llama 3.1 8B that is 8 KiB a token against the ~8.7 MB of elementwise
traffic a token's 32 layers are charged (``elementwise_bytes_per_hidden / 3``, 66.7 bytes a hidden value a layer in
calibration.json), about 0.1% of that term and less of a step."""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.formats import WeightFormat, format_for_model
from anchorgpu.planner.weight_parts import model_weight_parts

__all__ = ["lookup_table_bytes", "lookup_table_bytes_per_gpu", "lookup_table_edge_bytes", "named_lookup_edges"]


def lookup_table_bytes(model: ModelSpec, fmt: WeightFormat) -> float:
    """Bytes of ``model``'s weights in ``fmt`` a forward pass only gathers rows from: its learned position table and,
    where the LM head is not tied to it, its token embedding table (the share of the weights' ``embed`` part those
    tables are; :attr:`ModelSpec.params_active_matmul` leaves the same tables out of the products).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import format_for_model
    >>> m = load_model("llama-3.1-8b")  # untied: 128,256 x 4,096 at 16 bits
    >>> lookup_table_bytes(m, format_for_model(m, "bf16"))
    1050673152.0
    >>> t = load_model("llama-3.2-1b")  # tied: the table is the LM head's matrix, read by its product
    >>> lookup_table_bytes(t, format_for_model(t, "bf16"))
    0.0
    """
    p = model.params
    tables = p.embeddings + p.position_embeddings
    lookups = p.position_embeddings + (0 if model.tie_word_embeddings else p.embeddings)
    if not lookups:
        return 0.0
    return float(model_weight_parts(model, fmt).embed * lookups / tables)


@memo_on_frozen
def lookup_table_edge_bytes(model: ModelSpec, fmt: WeightFormat) -> tuple[float, float]:
    """(with one pipeline stage, with more): the bytes of the edge :func:`~anchorgpu.planner.memory.shard_share` puts
    on the most-loaded stage that its step does not stream, before TP's split (``V / tp`` rows a rank). One stage
    holds the lookup tables and reads none of them (:func:`lookup_table_bytes`). With stages, the first holds the
    token table and the last the LM head, and the busiest holds the larger of the two; the last stage reads its whole
    head (a tied table's copy there included), the first none of its table, so the slower step is the last stage's:
    what that edge holds beyond the head's matrix goes unread (0.0 for an untied head as large as the table).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import format_for_model
    >>> m = load_model("gpt-oss-120b")  # untied: 201,088 x 2,880 at 16 bits beside its MXFP4 experts
    >>> [round(b / 1e9, 3) for b in lookup_table_edge_bytes(m, format_for_model(m, "mxfp4"))]
    [1.158, 0.0]
    """
    parts = model_weight_parts(model, fmt)
    lookup = lookup_table_bytes(model, fmt)
    if not lookup:
        return 0.0, 0.0
    held = parts.embed if parts.tied else max(parts.embed, parts.head)  # shard_share's edge with stages
    head_read = parts.embed - lookup if parts.tied else parts.head
    return lookup, held - head_read


def lookup_table_bytes_per_gpu(model: ModelSpec, fmt: WeightFormat, *, tp: int, pp: int) -> float:
    """The bytes of ``model``'s weights in ``fmt`` one GPU of the most-loaded stage holds and a serving step does not
    stream (:func:`lookup_table_edge_bytes`, split ``tp`` ways as vLLM shards the vocabulary).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import format_for_model
    >>> m = load_model("llama-3.1-8b")
    >>> [lookup_table_bytes_per_gpu(m, format_for_model(m, "bf16"), tp=t, pp=p) for t, p in ((1, 1), (2, 1), (1, 2))]
    [1050673152.0, 525336576.0, 0.0]
    """
    return lookup_table_edge_bytes(model, fmt)[1 if pp > 1 else 0] / tp


@memo_on_frozen
def named_lookup_edges(model: ModelSpec, weights: str) -> tuple[float, float]:
    """:func:`lookup_table_edge_bytes` of ``model`` in the weight format named ``weights``, memoised on the model and
    the name: every plan (``serving_setup``) and sweep of that model in that format asks the same."""
    return lookup_table_edge_bytes(model, format_for_model(model, weights))
