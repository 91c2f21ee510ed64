"""Images and encoder inputs of a serving request: the tokens they add and the cross-attention caches they fill.

A vision-language model turns each image into tokens of the language model's context (``ImageTokens`` of the
model; ``architectures.images`` does the processor arithmetic): they take KV cache like text and are read in
prefill, after the vision tower has encoded the image's patches. mllama reads its image tokens through
cross-attention layers instead (their K/V kept per sequence), and an encoder-decoder (T5, Whisper) keeps
each decoder layer's cross-attention K/V over the encoder's output. Pure; stdlib only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from anchorgpu.architectures.images import image_tokens, patches_per_image
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.inputs import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS, Workload
from anchorgpu.planner.speed.flops import lm_head_params

__all__ = ["MAX_IMAGE_SIDE", "MAX_IMAGES_PER_REQUEST", "NO_MEDIA", "EncDecRequest", "MediaLoad", "cross_image_speed_line",
           "cross_kv_bytes", "encdec_request", "request_within", "resolve_media", "text_request", "validate_media"]

WHISPER_DECODER_PROMPT_TOKENS = 4
"""A Whisper transcription's decoder prompt, ``<|startoftranscript|><|lang|><|task|><|notimestamps|>``: what vLLM's
``WhisperForConditionalGeneration.get_generation_prompt`` sends the decoder (the audio goes to the encoder, padded to
``max_source_positions`` = 1,500 frames, ``get_num_audio_tokens``; vllm-project/vllm@00a23257
vllm/model_executor/models/whisper.py)."""
T5_DECODER_PROMPT_TOKENS = 1
"""A text encoder-decoder's decoder starts from its one ``decoder_start_token_id`` (T5: the pad token); the prompt is
the encoder's input."""


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class EncDecRequest:
    """The request an encoder-decoder serves, each part within its own limit: the encoder's input (Whisper's fixed
    frames, T5's prompt up to its ``n_positions``) and the decoder's prompt and output within its window."""

    encoder_tokens: int
    decoder_prompt_tokens: int
    output_tokens: int

MAX_IMAGE_SIDE = 16_384  # pixels; processors downscale far below this, a larger value is a typo
MAX_IMAGES_PER_REQUEST = 1_024


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MediaLoad:
    """What the images (or the encoder input) of ONE request add to its sequence."""

    images: int = 0
    resolution: tuple[int, int] | None = None  # width, height in pixels
    tokens_per_image: int = 0
    context_tokens: int = 0  # image tokens in the language model's context (KV cache, prefill)
    cross_tokens: int = 0  # positions held by the cross-attention caches (mllama image tokens, encoder output)
    cross_values_per_token: int = 0  # K and V values per cross position over all layers that attend to it
    encoder_flops: float = 0.0  # forward FLOPs of the vision tower / encoder for the request


NO_MEDIA = MediaLoad()
"""A text-only request's media (frozen: one value serves them all): what :func:`resolve_media` gives a model that
takes neither images nor an encoder input, and what :func:`sequence_tokens` and :func:`speed_request` leave
as it is (the context unchanged, no speed prompt of their own)."""


def validate_media(model: ModelSpec | None, w: Workload) -> None:
    """One-line refusals: negative counts, a zero or absurd size, images for a model that takes none."""
    n, res = w.images_per_request, w.image_resolution
    if n is None and res is None:  # the usual request: no images asked for, nothing to refuse for any model
        return
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > MAX_IMAGES_PER_REQUEST):
        raise InvalidWorkload(said("--images-per-request {n!r}: must be a whole number from 0 to "
                                   "{MAX_IMAGES_PER_REQUEST:,}", n=n, MAX_IMAGES_PER_REQUEST=MAX_IMAGES_PER_REQUEST))
    if res is not None and (len(res) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in res)
                            or min(res) < 1 or max(res) > MAX_IMAGE_SIDE):
        shown = "x".join(str(v) for v in res) if isinstance(res, tuple) else repr(res)
        raise InvalidWorkload(said("--image-resolution {shown}: expected WIDTHxHEIGHT in pixels, each from 1 to "
                                   "{MAX_IMAGE_SIDE:,}", shown=shown, MAX_IMAGE_SIDE=MAX_IMAGE_SIDE))
    if n == 0 and res is not None:  # the size of no image: it would be dropped, not planned
        raise InvalidWorkload(said("--image-resolution {join} with --images-per-request 0: there is no image to "
                                   "size; drop one of them", join='x'.join(str(v) for v in res)))
    if model is None or model.image is not None:
        return
    if (n or 0) > 0 or res is not None:
        kind = "an audio encoder-decoder" if model.encoder is not None and model.encoder.modality == "audio" \
            else "a text-only model"
        raise InvalidWorkload(said("{model_name} takes no images ({kind}): drop "
                                   "--images-per-request/--image-resolution", model_name=model.name, kind=kind))


def resolve_media(model: ModelSpec, w: Workload, assumptions: list[str], *, prompt_tokens: int) -> MediaLoad:
    """The request's images (defaults stated in ``assumptions``) or encoder input, as tokens and caches."""
    validate_media(model, w)
    if model.encoder is not None:
        enc = model.encoder
        tokens = enc.fixed_tokens or (prompt_tokens if w.allow_long_context else min(prompt_tokens, enc.max_tokens))
        what = (f"{tokens:,} encoder frames (30 s of audio)" if enc.fixed_tokens else
                f"an encoder input as long as the prompt, {tokens:,} tokens")
        assumptions.append(f"Encoder-decoder: the {enc.num_layers}-layer encoder reads {what}; every decoder layer keeps "
                           "its cross-attention K/V over that output for each sequence (in the KV cache).")
        return MediaLoad(cross_tokens=tokens, cross_values_per_token=enc.cross_kv_values_per_token,
                         encoder_flops=2.0 * enc.params * tokens)
    rule = model.image
    if rule is None:
        return NO_MEDIA
    n = 1 if w.images_per_request is None else w.images_per_request
    width, height = w.image_resolution or rule.native_resolution
    if n == 0:
        assumptions.append("No images in the requests (--images-per-request 0): text only.")
        return MediaLoad(resolution=(width, height))
    per_image = image_tokens(rule, width, height)
    flops = 2.0 * rule.encoder_params * patches_per_image(rule, width, height) * n
    stated = [] if w.images_per_request is not None else ["1 image per request (default for a vision model)"]
    if w.image_resolution is None:
        stated.append(f"images at the model's native {width}x{height}")
    where = "in the context" if rule.in_context else "held by the cross-attention layers, 1 placeholder in the text"
    assumptions.append(("Images: " + ", ".join(stated) + "; " if stated else "Images: ")
                       + f"{n} x {per_image:,} image tokens at {width}x{height} ({rule.rule} rule), {where}; the "
                       f"vision tower's {flops / 1e9:,.1f} GFLOP per request are part of prefill.")
    if rule.in_context:
        return MediaLoad(images=n, resolution=(width, height), tokens_per_image=per_image, context_tokens=n * per_image,
                         encoder_flops=flops)
    return MediaLoad(images=n, resolution=(width, height), tokens_per_image=per_image, context_tokens=n,
                     cross_tokens=n * per_image, cross_values_per_token=rule.cross_kv_values_per_token,
                     encoder_flops=flops)


def encdec_request(model: ModelSpec, w: Workload, window_tokens: int) -> EncDecRequest | None:
    """The request an encoder-decoder model is timed with (None for any other model): the given prompt and output
    where given, else the defaults within the model's limits: Whisper reads 30 s of audio (its fixed encoder frames)
    and decodes from its 4-token task prompt; T5 reads the prompt (the default 1,024 tokens, at most its encoder
    length) in its encoder and decodes from one start token; the output is the default 256 tokens, at most what the
    decoder's ``window_tokens`` (the sequence the memory plan holds) leaves after its prompt.

    >>> from anchorgpu.architectures import load_model
    >>> encdec_request(load_model("whisper-large-v3"), Workload(), 448)
    EncDecRequest(encoder_tokens=1500, decoder_prompt_tokens=4, output_tokens=256)
    >>> encdec_request(load_model("t5-base"), Workload(prompt_tokens=300, output_tokens=100), 101)
    EncDecRequest(encoder_tokens=300, decoder_prompt_tokens=1, output_tokens=100)
    >>> encdec_request(load_model("t5-base"), Workload(), 256)  # the start token and 255 output tokens fill the 256
    EncDecRequest(encoder_tokens=512, decoder_prompt_tokens=1, output_tokens=255)
    """
    enc = model.encoder
    if enc is None:
        return None
    if enc.fixed_tokens:  # audio: the given prompt is the decoder's own, in its window
        encoder, prompt = enc.fixed_tokens, w.prompt_tokens or WHISPER_DECODER_PROMPT_TOKENS
        room = window_tokens - prompt
    else:  # the prompt is the encoder's; the decoder's window holds its output
        encoder = w.prompt_tokens or DEFAULT_PROMPT_TOKENS
        encoder = encoder if w.allow_long_context and w.prompt_tokens else min(encoder, enc.max_tokens)
        prompt = T5_DECODER_PROMPT_TOKENS
        room = window_tokens - prompt  # the start token is the decoder's first position, as Whisper's prompt is
    output = w.output_tokens or max(1, min(DEFAULT_OUTPUT_TOKENS, room))
    return EncDecRequest(encoder_tokens=encoder, decoder_prompt_tokens=prompt, output_tokens=output)


def cross_kv_bytes(model: ModelSpec, media: MediaLoad, *, sequences: int, bytes_per_value: float, tp: int,
                   pp: int) -> int:
    """Cross-attention K/V per GPU for ``sequences``: heads split by TP (replicated past the KV heads), layers by PP.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> cross_kv_bytes(llama_3_1_8b(), MediaLoad(cross_tokens=1500, cross_values_per_token=64), sequences=2,
    ...                bytes_per_value=2, tp=1, pp=1)
    384000
    """
    if media.cross_tokens == 0 or media.cross_values_per_token == 0:
        return 0
    kv = max(1, model.num_kv_heads)
    per_rank = math.ceil(kv / tp) / kv if tp <= kv else 1 / kv
    stage = math.ceil(model.num_layers / pp) / model.num_layers
    return math.ceil(media.cross_tokens * media.cross_values_per_token * per_rank * stage * bytes_per_value * sequences)


def sequence_tokens(media: MediaLoad, w: Workload, ctx: int, assumptions: list[str],
                    model: ModelSpec | None = None) -> int:
    """The sequence a request occupies: a context the user sized (--context, --prompt/--output-tokens), or the
    default request of many users (1,024 prompt + 256 output text tokens), gets the image tokens on top; the default
    context of one sequence (the model's length) already has room for them. A text
    encoder-decoder (T5) sized by --prompt or --output-tokens reads the prompt in its encoder: the decoder's own
    cache holds its start token and the output tokens."""
    enc = None if model is None else model.encoder
    if enc is not None and not enc.fixed_tokens and w.context_tokens is None \
            and (w.prompt_tokens is not None or w.output_tokens is not None):
        out = w.output_tokens or 256
        prompt = (f"the {w.prompt_tokens:,}-token prompt" if w.prompt_tokens is not None
                  else f"the default {DEFAULT_PROMPT_TOKENS:,}-token prompt")
        # the decoder's start token is its first position, before the output (encdec_request times both)
        assumptions.append(f"Encoder-decoder: {prompt} goes to the encoder; the decoder "
                           f"caches its {T5_DECODER_PROMPT_TOKENS}-token start and the {out:,} output tokens, "
                           f"{T5_DECODER_PROMPT_TOKENS + out:,} tokens.")
        return T5_DECODER_PROMPT_TOKENS + out
    if media.context_tokens == 0:
        return ctx
    # the default request of many users is text and the images come on top; mllama's one placeholder an image is
    # part of its text prompt (its images are the cross-attention layers' input)
    sized = (w.context_tokens is not None or w.prompt_tokens is not None or w.output_tokens is not None
             or ((w.concurrency or 1) > 1 and not media.cross_tokens))
    what = "image placeholder" if media.cross_tokens else "image"  # mllama: one token in the text per image
    if not sized and media.context_tokens + 2 > ctx:  # the images fill the window: no text token, no output token
        if not w.allow_long_context:
            window = (said("the {ctx:,}-token context", ctx=ctx) if model is None
                      else said("{model}'s {ctx:,}-token context", model=model.name, ctx=ctx))
            if media.cross_tokens:
                raise InvalidWorkload(said("{tokens:,} image placeholder tokens a request leave no room for a text "
                                           "prompt and an output token in {window} (fewer or smaller images, or add "
                                           "--allow-long-context to plan anyway)", tokens=media.context_tokens,
                                           window=window))
            raise InvalidWorkload(said("{tokens:,} image tokens a request leave no room for a text prompt and an output "
                                       "token in {window} (fewer or smaller images, or add --allow-long-context to plan "
                                       "anyway)", tokens=media.context_tokens, window=window))
        sized = True  # planned anyway: the images on top of the window, past the model's limit
    if not sized:
        one = media.context_tokens == 1
        assumptions.append(f"The {media.context_tokens:,} {what} token{'' if one else 's'} of each request "
                           f"sit{'s' if one else ''} within the {ctx:,}-token context.")
        return ctx
    assumptions.append(f"Each sequence holds {ctx:,} text + {media.context_tokens:,} {what} tokens = "
                       f"{ctx + media.context_tokens:,} tokens of KV cache.")
    return ctx + media.context_tokens


def speed_request(media: MediaLoad, model: ModelSpec, w: Workload, ctx: int,
                  assumptions: list[str] | None = None) -> tuple[int, int] | None:
    """The prompt the speed model reads in prefill and the output it decodes: text + image tokens + the vision
    tower's (or encoder's) FLOPs as the language-model tokens that cost as much (:func:`encoder_equivalent_tokens`),
    and the text's own output (the given one, else the default 256 within the text context; the image and
    encoder tokens added to the prompt take none of it); None when the request carries nothing but text (the speed
    model's own default stays).

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> m = llama_3_1_8b()
    >>> body = m.params_active_matmul - m.vocab_size * m.hidden_size  # a prompt token's products (no LM head)
    >>> speed_request(MediaLoad(context_tokens=576, encoder_flops=2.0 * body * 100), m,
    ...               Workload(prompt_tokens=1000, output_tokens=200), 1776)
    (1676, 200)
    >>> speed_request(MediaLoad(context_tokens=256, encoder_flops=2.0 * body * 64), m,
    ...               Workload(concurrency=32), 1536)
    (1344, 256)
    """
    extra = media.context_tokens if media.cross_tokens == 0 else 0
    if extra == 0 and media.encoder_flops == 0:
        return None
    if (req := encdec_request(model, w, ctx)) is not None:
        return req.decoder_prompt_tokens + encoder_equivalent_tokens(media, model), req.output_tokens
    prompt, output = text_request(w, max(1, ctx - extra))
    encoder_tokens = encoder_equivalent_tokens(media, model)
    if assumptions is not None and media.cross_tokens:  # mllama: the images are read through cross-attention
        assumptions.append(cross_image_speed_line(prompt, encoder_tokens, media))
    elif assumptions is not None and encoder_tokens:
        assumptions.append(f"Speed: prefill reads {prompt:,} text + {extra:,} image tokens, and the encoder's work as "
                           f"{encoder_tokens:,} more tokens of the same cost (their KV is not in the memory plan; the "
                           "speed model's per-sequence KV reads count them, a small overstatement).")
    return prompt + extra + encoder_tokens, output


def text_request(w: Workload, text_tokens: int) -> tuple[int, int]:
    """(prompt, output) text tokens of the request timed within a sequence of ``text_tokens`` text tokens, as the
    speed model picks a request within a text context: the ones given; else 256 output tokens, at most what a given
    prompt leaves (half the sequence without one), and a prompt of at most 1,024 in the rest.

    >>> text_request(Workload(), 1280), text_request(Workload(output_tokens=100), 300)
    ((1024, 256), (200, 100))
    >>> text_request(Workload(prompt_tokens=1100), 1280)
    (1100, 180)
    """
    return request_within(w.prompt_tokens, w.output_tokens, text_tokens)


def request_within(prompt_tokens: int | None, output_tokens: int | None, text_tokens: int) -> tuple[int, int]:
    """(prompt, output) text tokens of a request of ``prompt_tokens`` and ``output_tokens`` (None or 0: not given)
    timed within a sequence of ``text_tokens`` text tokens: the rule :func:`text_request` and
    :func:`~anchorgpu.planner.speed.estimate.request_tokens` (and so the catalog sweep) time a text request by.

    >>> request_within(None, None, 400), request_within(None, 300, 400), request_within(300, None, 400)
    ((200, 200), (100, 300), (300, 100))
    """
    room = text_tokens - prompt_tokens if prompt_tokens else text_tokens // 2
    # clamp(room, 1, DEFAULT_OUTPUT_TOKENS) and clamp(text_tokens - output, 1, DEFAULT_PROMPT_TOKENS), inline (every
    # serving estimate asks)
    output = output_tokens or (1 if room < 1 else DEFAULT_OUTPUT_TOKENS if room > DEFAULT_OUTPUT_TOKENS else room)
    if prompt_tokens:
        return prompt_tokens, output
    left = text_tokens - output
    return (1 if left < 1 else DEFAULT_PROMPT_TOKENS if left > DEFAULT_PROMPT_TOKENS else left), output


def cross_image_speed_line(prompt: int, encoder_tokens: int, media: MediaLoad) -> str:
    """The speed assumption of a model that reads its images through cross-attention layers (mllama)."""
    return (f"Speed: prefill reads {prompt:,} text tokens ({media.images} image placeholder"
            f"{'' if media.images == 1 else 's'} among them) and the vision tower's work as {encoder_tokens:,} more "
            "tokens of the same cost, which keep no K/V; every decode step reads the text tokens' self-attention K/V "
            f"and the cross-attention layers' K/V over the {media.cross_tokens:,} image positions, held for the "
            "request's life (vLLM serves mllama as an encoder-decoder whose encoder input is the image tiles' tokens: "
            "vllm-project/vllm@6f0b37b8 vllm/model_executor/models/mllama.py).")


def encoder_equivalent_tokens(media: MediaLoad, model: ModelSpec) -> int:
    """The encoder's (or vision tower's) FLOPs as the language-model tokens that cost as much in prefill: 2 · the
    active matmul parameters but the LM head's ``V x h`` per token, since a served prompt token never reaches the head
    (the engine computes logits at the prompt's last token only: ``speed.flops.unsampled_prompt_share``)."""
    body = model.params_active_matmul - lm_head_params(model)
    return math.ceil(media.encoder_flops / (2.0 * max(1, body)))


def encdec_speed_line(model: ModelSpec, req: EncDecRequest, encoder_equivalent: int, window_tokens: int) -> str:
    """The assumption naming the encoder-decoder request the speed figures time."""
    enc = model.encoder
    assert enc is not None
    source = (f"{req.encoder_tokens:,} encoder frames (30 s of audio)" if enc.fixed_tokens
              else f"a {req.encoder_tokens:,}-token prompt in the encoder (its length {enc.max_tokens:,}"
              + (", passed with --allow-long-context)" if req.encoder_tokens > enc.max_tokens else ")"))
    # the sequence each user holds: the decoder's whole window, or less where many users hold the request alone
    held = (f"the decoder's {window_tokens:,}-token window" if window_tokens >= model.max_context_tokens else
            f"a {window_tokens:,}-token decoder sequence (its window {model.max_context_tokens:,})")
    return (f"Speed: each request is {source}, then {req.decoder_prompt_tokens:,} decoder prompt + "
            f"{req.output_tokens:,} output tokens within {held}; prefill counts "
            f"the encoder's work as {encoder_equivalent:,} more prompt tokens of the same cost, and every decode step "
            f"reads the decoder's own K/V and the cross-attention K/V over the {req.encoder_tokens:,} encoder "
            "positions.")
