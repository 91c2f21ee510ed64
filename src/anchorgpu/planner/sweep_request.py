"""The request the serving sweep (:mod:`anchorgpu.planner.sweep`) times for a model whose request carries more than
text. A model whose decoder reads another input through cross-attention: an encoder-decoder (Whisper's audio frames,
T5's prompt in its encoder) or a vision model that reads its images that way (mllama). ``plan`` times such a request
with the encoder's (or vision tower's) prefill work as prompt tokens of the same cost, which keep no decoder K/V, and a
decode step that reads the decoder's own K/V and the cross-attention K/V
(:func:`~anchorgpu.planner.speed.serving_setup.serving_setup`). A vision model that puts its image tokens in the
decoder's context (Qwen2.5-VL, LLaVA, Gemma 3): ``plan`` times a prompt of its text, its image tokens and the vision
tower's work as tokens of the same cost, and a decode step that reads that whole prompt's K/V (the image tokens are
cached like text). The sweep resolves the same request with the same functions of :mod:`anchorgpu.planner.media`
(a text request too: :func:`~anchorgpu.planner.media.text_request`), from the request as plan is given it. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.media import MediaLoad, encoder_equivalent_tokens, speed_request

if TYPE_CHECKING:  # loaded where a request carries more than text: a training sweep never loads the serving modules
    from anchorgpu.planner.sweep_serving_memory import CrossRequest

__all__ = ["context_speed_line", "cross_speed_line", "timed_request"]


def timed_request(model: ModelSpec, asked: Workload, media: MediaLoad | None, ctx: int) -> CrossRequest | None:
    """The request ``plan`` times where it is not a text request (None where it is: a text model, or a request
    without images, which :func:`~anchorgpu.planner.media.text_request` resolves), as plan resolves it
    (:func:`~anchorgpu.planner.media.speed_request`): ``asked`` the sweep's probe workload, the request as ``plan`` is
    given it (the prompt and output where given, else None), planned within a sequence of ``ctx`` tokens.

    A model that reads its images or encoder output through cross-attention: an encoder-decoder's decoder window
    holds only its own prompt and the output, so its default output is 256 tokens within the window, not half of it
    (:func:`~anchorgpu.planner.media.encdec_request`); mllama's is the text's; the speed prompt is the decoder's own
    with the encoder's or vision tower's work as ``equivalent_tokens`` of the same cost, which keep no decoder K/V.
    A model that keeps its image tokens in its context: the speed prompt is the text, the image tokens and the vision
    tower's work as tokens of the same cost, all of it read by plan's decode step (``equivalent_tokens`` 0, as
    :func:`~anchorgpu.planner.speed.serving_setup.serving_setup` counts them).

    >>> from dataclasses import replace
    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.inference import request_media
    >>> whisper, asked = load_model("whisper-large-v3"), Workload(task="inference", concurrency=16)
    >>> timed_request(whisper, asked, request_media(whisper, asked), 448)
    CrossRequest(prompt_tokens=1143, output_tokens=256, equivalent_tokens=1139)
    >>> qwen = load_model("qwen2.5-vl-7b")
    >>> timed_request(qwen, asked, request_media(qwen, asked), 2649)
    CrossRequest(prompt_tokens=2961, output_tokens=256, equivalent_tokens=0)
    >>> timed_request(qwen, replace(asked, context_tokens=400), request_media(qwen, asked), 1769)
    CrossRequest(prompt_tokens=2137, output_tokens=200, equivalent_tokens=0)
    """
    if media is None or not (media.cross_tokens or media.context_tokens):
        return None
    from anchorgpu.planner.sweep_serving_memory import CrossRequest

    request = speed_request(media, model, asked, ctx)
    assert request is not None  # the image tokens or the encoder's work are part of the prompt
    return CrossRequest(prompt_tokens=request[0], output_tokens=request[1],
                        equivalent_tokens=encoder_equivalent_tokens(media, model) if media.cross_tokens else 0)


def context_speed_line(model: ModelSpec, timed: CrossRequest, media: MediaLoad) -> str:
    """The sweep's speed assumption for a request whose image tokens sit in the context (what a decode step reads,
    what prefill reads)."""
    vision = encoder_equivalent_tokens(media, model)
    text = timed.prompt_tokens - media.context_tokens - vision
    return (f"Decode speed at {timed.prompt_tokens + timed.output_tokens // 2:,} cached tokens per sequence (prompt "
            f"{timed.prompt_tokens:,}: {text:,} text + {media.context_tokens:,} image tokens + the vision tower's work as "
            f"{vision:,} tokens of the same cost, + half of {timed.output_tokens:,} output tokens); prefill of one "
            f"{timed.prompt_tokens:,}-token prompt, as plan times it.")


def cross_speed_line(model: ModelSpec, cross: CrossRequest, media: MediaLoad) -> str:
    """The sweep's speed assumption for such a request (the decode's cached tokens and what prefill reads)."""
    own = cross.prompt_tokens - cross.equivalent_tokens
    what = "encoder positions" if model.encoder is not None else "image positions"
    return (f"Decode speed at {own + cross.output_tokens // 2:,} cached decoder tokens per sequence (prompt {own:,} + "
            f"half of {cross.output_tokens:,} output tokens) plus the cross-attention K/V over {media.cross_tokens:,} {what}, "
            f"read every step; prefill of one {own:,}-token prompt and the "
            f"{'encoder' if model.encoder is not None else 'vision tower'}'s work as {cross.equivalent_tokens:,} more "
            "tokens of the same cost, as plan times it.")
