"""The request a serving plan is sized and timed for: the context a sequence is held at (given, prompt + output, the
default request for many users, or the default context, each stated), the refusal of a request that does not fit its
sequence, and the request's images or encoder input. Pure; split from :mod:`anchorgpu.planner.inference`.
"""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.inputs import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS, Workload, default_context_tokens
from anchorgpu.planner.media import WHISPER_DECODER_PROMPT_TOKENS, MediaLoad, resolve_media

__all__ = ["DEFAULT_REQUEST_NOTE", "asked_context", "check_request_within_context", "request_media"]


def check_request_within_context(w: Workload, limit: int, model: ModelSpec | None = None) -> None:
    """Refuse a request whose given prompt and output tokens (at least one of each) do not fit in its
    sequence: the ``--context`` when given, else the model's limit unless a longer context is allowed. The memory
    would be planned for the shorter sequence while the speed timed the longer request. A text encoder-decoder
    (T5) reads the prompt in its encoder: each part is held to its own limit (encoder length, decoder window)."""
    if w.prompt_tokens is None and w.output_tokens is None:
        if w.context_tokens is not None and w.context_tokens < 2:  # the request timed is 1 prompt + 1 output at least
            raise InvalidWorkload(f"--context {w.context_tokens:,}: a request needs at least 1 prompt and 1 output "
                                  "token, 2 tokens")
        return
    enc = None if model is None else model.encoder
    if model is not None and enc is not None and not enc.fixed_tokens and w.context_tokens is None \
            and not w.allow_long_context:
        for what, value, cap, where in (("prompt", w.prompt_tokens, enc.max_tokens, "encoder input"),
                                        ("output", w.output_tokens, limit, "decoder window")):
            if value is not None and value > cap:
                raise InvalidWorkload(f"{what} {value:,} tokens exceed {model.name}'s {where} of {cap:,} tokens "
                                      "(add --allow-long-context to plan anyway)")
        return
    # a request has at least one prompt token and one output token: an output as long as the context left no room for
    # the prompt, and the speed timed 1 + output tokens in a sequence planned one shorter
    # (Whisper's decoder starts from its 4-token task prompt when none is given: media.encdec_request)
    least = WHISPER_DECODER_PROMPT_TOKENS if enc is not None and enc.fixed_tokens else 1
    prompt, output = w.prompt_tokens or least, w.output_tokens or 1
    unstated = f"the {least}-token decoder prompt" if least > 1 else "at least 1 prompt"
    request = (f"{f'prompt {prompt:,}' if w.prompt_tokens else unstated} + "
               f"{f'output {output:,}' if w.output_tokens else 'at least 1 output'} tokens")
    if w.context_tokens is not None and prompt + output > w.context_tokens:
        raise InvalidWorkload(f"{request} exceed the context of {w.context_tokens:,} tokens (raise --context or "
                              "shorten the request)")
    if w.context_tokens is None and prompt + output > limit and not w.allow_long_context:
        raise InvalidWorkload(f"{request} exceed the model's limit of {limit:,} tokens (add --allow-long-context to "
                              "plan anyway)")


DEFAULT_REQUEST_NOTE = "Context not given: each of the"
"""How the assumption opens when many sequences and no length were given and each is sized at the default request
(a recipe then lets the engine accept longer ones, as it would by default)."""

def asked_context(model: ModelSpec, w: Workload, assumptions: list[str]) -> int:
    """The tokens a sequence is sized at before the request's images or encoder input: the context given, else
    prompt + output, else the default request for many users, else the default context (each stated)."""
    limit = model.max_context_tokens
    if w.context_tokens is None and (w.prompt_tokens is not None or w.output_tokens is not None):
        prompt = w.prompt_tokens if w.prompt_tokens is not None else 1024
        output = w.output_tokens if w.output_tokens is not None else 256
        ctx = min(prompt + output, limit) if not w.allow_long_context else prompt + output
        if model.encoder is not None and not model.encoder.fixed_tokens and w.prompt_tokens is not None:
            return ctx  # the prompt goes to a text encoder: sequence_tokens states what the decoder holds
        assumptions.append(f"Context not given: each sequence sized at prompt + output = {prompt:,} + {output:,} = "
                           f"{prompt + output:,} tokens" + (f", capped at the model's {limit:,}" if ctx < prompt + output
                                                            else "") + ".")
    elif w.context_tokens is None and (w.concurrency or 1) > 1:  # many users, no length: the request timed below
        ctx = min(DEFAULT_PROMPT_TOKENS + DEFAULT_OUTPUT_TOKENS, limit)
        assumptions.append(
            f"{DEFAULT_REQUEST_NOTE} {w.concurrency:,} sequences sized at the request the speed figures time, "
            f"{DEFAULT_PROMPT_TOKENS:,} prompt + {DEFAULT_OUTPUT_TOKENS:,} output = {ctx:,} tokens, not the model's "
            f"whole {limit:,}-token window each (that many full windows at once is not how such models are served); "
            "set --context, or --prompt and --output-tokens, to plan your own.")
    else:
        ctx = w.context_tokens or default_context_tokens(limit)
        if w.context_tokens is None and ctx < limit:
            assumptions.append(
                f"Context not given: {ctx:,} tokens per sequence, not the model's whole {limit:,}-token window "
                "(a cache sized for that one sequence is not how such models are served); set --context to plan longer.")
        elif w.context_tokens is None:
            assumptions.append(f"Context not given: the model's context length, {ctx} tokens per sequence.")
    return ctx


def request_media(model: ModelSpec, w: Workload) -> MediaLoad:
    """The request's images or encoder input as :func:`plan_inference` resolves them (the catalog sweep sizes the
    cross-attention K/V of an encoder-decoder or cross-attention model with it, as the plan does)."""
    return resolve_media(model, w, [], prompt_tokens=w.prompt_tokens or asked_context(model, w, []))
