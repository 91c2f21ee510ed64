"""The request the serving sweep (:mod:`anchorgpu.planner.sweep`) times for a model whose decoder reads another
input through cross-attention: an encoder-decoder (Whisper's audio frames, T5's prompt in its encoder) or a vision
model that reads its images that way (mllama). ``plan`` times such a request with the encoder's (or vision tower's)
prefill work as prompt tokens of the same cost, which keep no decoder K/V, and a decode step that reads the
decoder's own K/V and the cross-attention K/V (:func:`~anchorgpu.planner.speed.serving_plan.serving_setup`); the
sweep resolves the same request with the same functions of :mod:`anchorgpu.planner.media`. Pure."""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.inputs import DEFAULT_OUTPUT_TOKENS, Workload
from anchorgpu.planner.media import MediaLoad, encdec_request, encoder_equivalent_tokens, speed_request
from anchorgpu.planner.sweep_serving_memory import CrossRequest

__all__ = ["cross_request", "cross_speed_line", "reads_across"]


def reads_across(model: ModelSpec) -> bool:
    """Whether ``model``'s decoder reads another input through cross-attention: an encoder's output or the images of
    a vision model that keeps them out of its context (mllama)."""
    return model.encoder is not None or (model.image is not None and not model.image.in_context)


def cross_request(model: ModelSpec, asked: Workload, media: MediaLoad, ctx: int, output: int, given_output: int,
                  by_request: bool) -> CrossRequest:
    """The request ``plan`` times for ``model`` (with an encoder, or images held by cross-attention layers) planned at
    ``asked`` (the sweep's probe workload) within a sequence of ``ctx`` tokens: the output ``output`` the sweep
    resolved (``given_output`` the sweep's ``output_tokens``; a request given by its prompt keeps it), except that an
    encoder-decoder's decoder window holds only its own prompt and the output, so its default output is plan's
    (:func:`~anchorgpu.planner.media.encdec_request`: 256 tokens within the window, not half of it); the speed prompt
    as plan resolves it for that output (:func:`~anchorgpu.planner.media.speed_request`).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.inference import request_media
    >>> whisper, asked = load_model("whisper-large-v3"), Workload(task="inference", concurrency=16)
    >>> cross_request(whisper, asked, request_media(whisper, asked), 448, 224, 256, False)
    CrossRequest(prompt_tokens=1059, output_tokens=256, equivalent_tokens=1055)
    """
    if model.encoder is not None and not by_request:
        window = encdec_request(model, replace(asked, output_tokens=None), ctx)
        assert window is not None  # the model has an encoder
        output = window.output_tokens if given_output == DEFAULT_OUTPUT_TOKENS else max(1, min(given_output, ctx))
    timed = replace(asked, output_tokens=output)
    request = speed_request(media, model, timed, ctx)
    equivalent = encoder_equivalent_tokens(media, model)
    assert request is not None  # cross-attention positions: the encoder's or vision tower's work is prefill's
    prompt = request[0]
    return CrossRequest(prompt_tokens=prompt, output_tokens=output, equivalent_tokens=equivalent)


def cross_speed_line(model: ModelSpec, cross: CrossRequest, media: MediaLoad) -> str:
    """The sweep's speed assumption for such a request (the decode's cached tokens and what prefill reads)."""
    own = cross.prompt_tokens - cross.equivalent_tokens
    what = "encoder positions" if model.encoder is not None else "image positions"
    return (f"Decode speed at {own + cross.output_tokens // 2} cached decoder tokens per sequence (prompt {own} + half "
            f"of {cross.output_tokens} output tokens) plus the cross-attention K/V over {media.cross_tokens:,} {what}, "
            f"read every step; prefill of one {own}-token prompt and the "
            f"{'encoder' if model.encoder is not None else 'vision tower'}'s work as {cross.equivalent_tokens:,} more "
            "tokens of the same cost, as plan times it.")
