"""The request a serving plan is sized and timed for: the context a sequence is held at (given, prompt + output, the
default request for many users, or the default context, each stated), the refusal of a request that does not fit its
sequence, and the request's images or encoder input. Pure; split from :mod:`anchorgpu.planner.inference`.
"""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.inputs import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS, Workload, default_context_tokens
from anchorgpu.planner.media import (
    T5_DECODER_PROMPT_TOKENS,
    WHISPER_DECODER_PROMPT_TOKENS,
    MediaLoad,
    request_within,
    resolve_media,
)

__all__ = ["DEFAULT_REQUEST_NOTE", "asked_context", "attention_dp_groups_line", "check_request_within_context",
           "encoder_prompt_tokens", "ladder_context_note", "request_media"]


def check_request_within_context(w: Workload, limit: int, model: ModelSpec | None = None) -> None:
    """Refuse a request whose given prompt and output tokens (at least one of each) do not fit in its
    sequence: the ``--context`` when given, else the model's limit unless a longer context is allowed. The memory
    would be planned for the shorter sequence while the speed timed the longer request. A text encoder-decoder
    (T5) reads the prompt in its encoder: each part is held to its own limit (encoder length, decoder window)."""
    if w.prompt_tokens is None and w.output_tokens is None:
        if w.context_tokens is not None and w.context_tokens < 2:  # the request timed is 1 prompt + 1 output at least
            raise InvalidWorkload(said("--context {context_tokens:,}: a request needs at least 1 prompt and 1 "
                                       "output token, 2 tokens", context_tokens=w.context_tokens))
        return
    enc = None if model is None else model.encoder
    if model is not None and enc is not None and not enc.fixed_tokens and w.context_tokens is None \
            and not w.allow_long_context:
        if w.prompt_tokens is not None and w.prompt_tokens > enc.max_tokens:
            raise InvalidWorkload(said("prompt {prompt_tokens:,} tokens exceed {model_name}'s encoder input of "
                                       "{max_tokens:,} tokens (add --allow-long-context to plan anyway)",
                                       prompt_tokens=w.prompt_tokens, model_name=model.name,
                                       max_tokens=enc.max_tokens))
        # the decoder's window holds its start token before the output (media.encdec_request times both)
        if w.output_tokens is not None and T5_DECODER_PROMPT_TOKENS + w.output_tokens > limit:
            raise InvalidWorkload(said("the {T5_DECODER_PROMPT_TOKENS}-token decoder start + output "
                                       "{output_tokens:,} tokens exceed {model_name}'s decoder window of "
                                       "{limit:,} tokens (add --allow-long-context to plan anyway)",
                                       T5_DECODER_PROMPT_TOKENS=T5_DECODER_PROMPT_TOKENS,
                                       output_tokens=w.output_tokens, model_name=model.name, limit=limit))
        return
    # a request has at least one prompt token and one output token: an output as long as the context left no room for
    # the prompt, and the speed timed 1 + output tokens in a sequence planned one shorter
    # (Whisper's decoder starts from its 4-token task prompt when none is given: media.encdec_request)
    least = WHISPER_DECODER_PROMPT_TOKENS if enc is not None and enc.fixed_tokens else 1
    prompt, output = w.prompt_tokens or least, w.output_tokens or 1
    unstated = said("the {least}-token decoder prompt", least=least) if least > 1 else said("at least 1 prompt")
    request = said("{prompt} + {output} tokens",
                   prompt=said("prompt {prompt:,}", prompt=prompt) if w.prompt_tokens else unstated,
                   output=said("output {output:,}", output=output) if w.output_tokens else said("at least 1 output"))
    if w.context_tokens is not None and prompt + output > w.context_tokens:
        raise InvalidWorkload(said("{request} exceed the context of {context_tokens:,} tokens (raise --context or "
                                   "shorten the request)", request=request, context_tokens=w.context_tokens))
    if w.context_tokens is None and prompt + output > limit and not w.allow_long_context:
        raise InvalidWorkload(said("{request} exceed the model's limit of {limit:,} tokens (add "
                                   "--allow-long-context to plan anyway)", request=request, limit=limit))


def encoder_prompt_tokens(w: Workload) -> int:
    """The prompt a text encoder reads (before its own length caps it): the given prompt, else the given context,
    else the default request's 1,024 tokens; never the decoder's sequence, which holds the output only."""
    return w.prompt_tokens or w.context_tokens or DEFAULT_PROMPT_TOKENS


DEFAULT_REQUEST_NOTE = "Context not given: each of the"
"""How the assumption opens when many sequences and no length were given and each is sized at the default request
(a recipe then lets the engine accept longer ones, as it would by default)."""

def asked_context(model: ModelSpec, w: Workload, assumptions: list[str]) -> int:
    """The tokens a sequence is sized at before the request's images or encoder input: the context given, else
    prompt + output, else the default request for many users, else the default context (each stated)."""
    limit = model.max_context_tokens
    if w.context_tokens is None and (w.prompt_tokens is not None or w.output_tokens is not None):
        # Whisper's decoder holds its own 4-token task prompt, not a text prompt (the audio is the encoder's)
        audio = model.encoder is not None and bool(model.encoder.fixed_tokens)
        default_prompt = WHISPER_DECODER_PROMPT_TOKENS if audio else DEFAULT_PROMPT_TOKENS
        prompt = w.prompt_tokens if w.prompt_tokens is not None else default_prompt
        output = w.output_tokens if w.output_tokens is not None else 256
        ctx = min(prompt + output, limit) if not w.allow_long_context else prompt + output
        if model.encoder is not None and not model.encoder.fixed_tokens:
            return ctx  # the prompt (given or the default) goes to a text encoder: sequence_tokens states the decoder's
        shortened: str = ""
        if ctx < prompt + output and (model.encoder is None or audio):  # the default part gives way (request_within)
            timed_prompt, timed_output = request_within(w.prompt_tokens, w.output_tokens, ctx)
            if w.prompt_tokens is None:
                shortened = said("; the default {prompt:,}-token prompt shortened to {timed:,} tokens to fit",
                                 prompt=prompt, timed=timed_prompt)
            elif w.output_tokens is None:
                shortened = said("; the default {output:,}-token output shortened to {timed:,} tokens to fit",
                                 output=output, timed=timed_output)
        assumptions.append(said("Context not given: each sequence sized at prompt + output = {prompt:,} + {output:,} = "
                                "{total:,} tokens{capped}{shortened}.", prompt=prompt, output=output,
                                total=prompt + output, shortened=shortened,
                                capped=said(", capped at the model's {limit:,}", limit=limit) if ctx < prompt + output
                                else ""))
    elif w.context_tokens is None and (w.concurrency or 1) > 1:  # many users, no length: the request timed below
        enc = model.encoder
        if enc is not None:  # the decoder holds its own prompt (Whisper's task tokens, T5's start token) + output
            decoder_prompt = WHISPER_DECODER_PROMPT_TOKENS if enc.fixed_tokens else T5_DECODER_PROMPT_TOKENS
            ctx = min(decoder_prompt + DEFAULT_OUTPUT_TOKENS, limit)
            request = (f"the decoder's {decoder_prompt:,}-token prompt + {DEFAULT_OUTPUT_TOKENS:,} output = {ctx:,} "
                       f"tokens (the {'audio' if enc.fixed_tokens else 'prompt'} goes to the encoder)")
        else:
            ctx = min(DEFAULT_PROMPT_TOKENS + DEFAULT_OUTPUT_TOKENS, limit)
            request = f"{DEFAULT_PROMPT_TOKENS:,} prompt + {DEFAULT_OUTPUT_TOKENS:,} output = {ctx:,} tokens"
        assumptions.append(
            f"{DEFAULT_REQUEST_NOTE} {w.concurrency:,} sequences sized at the request the speed figures time, "
            f"{request}, not the model's whole {limit:,}-token window each (that many full windows at once is not how "
            "such models are served); set --context, or --prompt and --output-tokens, to plan your own.")
    else:
        ctx = w.context_tokens or default_context_tokens(limit)
        if w.context_tokens is None and ctx < limit:
            assumptions.append(
                f"Context not given: {ctx:,} tokens per sequence, not the model's whole {limit:,}-token window "
                "(a cache sized for that one sequence is not how such models are served); set --context to plan longer.")
        elif w.context_tokens is None:
            assumptions.append(f"Context not given: the model's context length, {ctx:,} tokens per sequence.")
    return ctx


def ladder_context_note(limit: int, contexts: dict[int, int]) -> str:
    """The sweep's context assumption where no length was given and its concurrencies are sized at different
    contexts (``contexts``: concurrency -> tokens a sequence, as ``plan --concurrency N`` sizes each): one sequence
    alone at the default context (the model's window), more at the request the speed figures time (with a vision
    model's image tokens). An engine started at its default maximum length needs one sequence of it to fit its KV
    cache (vLLM refuses to start otherwise: ``check_enough_kv_cache_memory``, "To serve at least one request with the
    models's max seq len ..."); plan's launch lowers it to what the cache holds (recipes.serving).

    >>> print(ladder_context_note(131_072, {1: 131_072, 2: 1_280, 4: 1_280}))
    Context not given: each sequence sized as plan --concurrency N sizes it: 1 sequence at 131,072 tokens (the model's whole window), 2 to 4 sequences at 1,280 tokens each, the request the speed figures time (not the model's whole 131,072-token window each); an engine started at its default maximum length (the window) needs one whole-window sequence in its KV cache; where a row's cache holds less, the row gives the longest sequence it holds as the maximum length to start with (max_model_len_tokens), as plan's launch (--recipe) sets it; set --context, or --prompt and --output-tokens, to plan your own.
    """
    by_tokens: dict[int, list[int]] = {}
    for conc, tokens in sorted(contexts.items()):
        by_tokens.setdefault(tokens, []).append(conc)
    parts = []
    for tokens, concs in by_tokens.items():
        lo, hi = concs[0], concs[-1]
        many = f"{lo:,} sequence{'s' if hi > 1 else ''}" if lo == hi else f"{lo:,} to {hi:,} sequences"
        whole = tokens >= default_context_tokens(limit)
        parts.append(f"{many} at {tokens:,} tokens" + (" (the model's whole window)" if whole else
                     " each, the request the speed figures time (not the model's whole "
                     f"{limit:,}-token window each)"))
    return ("Context not given: each sequence sized as plan --concurrency N sizes it: " + ", ".join(parts)
            + "; an engine started at its default maximum length (the window) needs one whole-window sequence in its "
            "KV cache; where a row's cache holds less, the row gives the longest sequence it holds as the maximum "
            "length to start with (max_model_len_tokens), as plan's launch (--recipe) sets it; set --context, or "
            "--prompt and --output-tokens, to plan your own.")


def attention_dp_groups_line(groups: int, tp: int, ranks: int, ep: int, gpus: int) -> str:
    """How the users of an attention-DP layout of ``gpus`` GPUs in ``groups`` independent EP groups are served: each
    group its own engine (``ranks`` replicas of TP ``tp``, the experts over its ``ep`` GPUs a stage), the layout one
    group's GPUs run alone, started once per group, the users split evenly between them.

    >>> print(attention_dp_groups_line(2, 4, 2, 8, 16))
    Attention data parallelism in 2 independent engines, each 2 replicas of TP 4 with the routed experts split over its own 8 GPUs (EP 8): each engine is the 8-GPU attention-DP layout alone, started 2 times, a load balancer splitting the users evenly between them; a MoE layer gathers only its own engine's tokens.
    """
    return (f"Attention data parallelism in {groups} independent engines, each {ranks} replica{'s' if ranks > 1 else ''}"
            f" of TP {tp} with the routed experts split over its own {ep} GPUs (EP {ep}): each engine is the "
            f"{gpus // groups}-GPU attention-DP layout alone, started {groups} times, a load balancer splitting the "
            "users evenly between them; a MoE layer gathers only its own engine's tokens.")


def request_media(model: ModelSpec, w: Workload) -> MediaLoad:
    """The request's images or encoder input as :func:`plan_inference` resolves them (the catalog sweep sizes the
    cross-attention K/V of an encoder-decoder or cross-attention model with it, as the plan does)."""
    return resolve_media(model, w, [], prompt_tokens=encoder_prompt_tokens(w))
