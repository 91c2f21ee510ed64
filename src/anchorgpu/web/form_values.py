"""The planner and recommendation forms' values: what a GET form sends (shorthand token counts as on the CLI, blank
fields dropped, the selects left at their defaults for another task), turned into a request's fields, and the
one-line hints for numbers typed the way the page prints them. Split from :mod:`anchorgpu.web.planning`."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from anchorgpu.api.schemas import PlanRequest
from anchorgpu.web.form_fields import canonical_gpu, ungrouped
from anchorgpu.web.i18n import PageText

__all__ = ["for_the_task", "form_suffixes", "form_values", "not_whole_hint", "regrouped_hint", "shorthand"]

_LIST_FIELDS = ("lora_targets",)
_BOOL_FIELDS = ("fsdp", "allow_long_context", "vae_tiling", "tp_overlap", "ep_overlap")
_INT_CHOICE_FIELDS = ("zero",)  # Literal[0, 1, 2, 3]: a form sends "0"
_TOKEN_FIELDS = ("context", "seq", "prompt", "output_tokens", "max_num_batched_tokens", "global_batch")  # "8k", "4M" as on the CLI
_COUNT_FIELDS = ("tokens", "concurrency", "max_num_seqs")  # "1e12", "1k" (= 1,000) as on the CLI


def shorthand(name: str, raw: str) -> str | int:
    """The CLI's spellings of a number in a form field: ``8k`` = 8,192 and ``1m`` = 1,048,576 tokens
    (token fields), ``1e12``, ``2.5e9``, ``300B`` or ``15T`` (training tokens, decimal). Anything else is left as
    typed, so the validation names the field.

    >>> shorthand("context", "8k"), shorthand("tokens", "1e12"), shorthand("tokens", "14.8T")
    (8192, 1000000000000, 14800000000000)
    >>> shorthand("context", "8.5"), shorthand("concurrency", "1e9")
    ('8.5', 1000000000)
    """
    from anchorgpu.errors import InvalidInput
    from anchorgpu.validation import whole_number

    suffixes = form_suffixes(name)
    if suffixes is None:
        return raw
    try:  # the CLI's own parser (anchorgpu.validation): ASCII digits, finite, whole, within the API's bounds
        return whole_number(raw, field=name, suffixes=suffixes)
    except InvalidInput:
        pass
    try:  # a whole count out of bounds (1e9 users): the number, so the form's check names the bound it passes
        return whole_number(raw, field="", suffixes=suffixes)
    except InvalidInput:
        return raw


def form_suffixes(name: str) -> dict[str, int] | None:
    """The suffixes a form's count field reads as the CLI does (``8k``, ``4M`` tokens; ``300B`` training tokens);
    None for a field that takes none."""
    from anchorgpu.validation import BINARY_SUFFIXES, DECIMAL_SUFFIXES

    if name in _TOKEN_FIELDS:
        return {k: v for k, v in BINARY_SUFFIXES.items() if k in ("", "k", "m")}
    return DECIMAL_SUFFIXES if name in _COUNT_FIELDS else None


def not_whole_hint(name: str, typed: object, text: PageText) -> str | None:
    """Why a count typed well but not whole is refused, as the CLI says it, in the page's language: '4.2M is
    4,404,019.2 (M = 1,048,576), not a whole number' (ru '4.2M — это 4\xa0404\xa0019,2 …'); None otherwise."""
    from babel.numbers import format_decimal

    from anchorgpu.validation import fraction_typed

    suffixes = form_suffixes(name)
    found = fraction_typed(typed, suffixes) if suffixes is not None else None
    if found is None:
        return None
    value, unit, scale = found
    shown = str(format_decimal(value, locale=text.locale))
    if not unit and "e" not in str(typed).lower():
        return None  # 1.5: plainly not whole
    if not unit:
        return text.gettext("%(typed)s is %(value)s, not a whole number", typed=str(typed).strip(), value=shown)
    return text.gettext("%(typed)s is %(value)s (%(unit)s = %(scale)s), not a whole number", typed=str(typed).strip(),
                        value=shown, unit=unit, scale=str(format_decimal(scale, locale=text.locale)))


def regrouped_hint(name: str, typed: object, text: PageText) -> str | None:
    """Why '4,194,304' (as the page writes the number; ru '4\xa0194\xa0304', '4,5M') is refused: the spelling to type
    instead, where that spelling is a whole count the field reads ('type 4194304: ...'); None otherwise."""
    plain = ungrouped(typed) if form_suffixes(name) is not None else None
    if plain is None or not isinstance(shorthand(name, plain), int):
        return None
    return text.gettext("type %(plain)s: digits without group separators, a decimal point rather than a comma",
                        plain=plain)


def form_values(request: Request) -> dict[str, Any]:
    """The query string as PlanRequest input: blanks dropped, lists split on commas, checkboxes as bools."""
    values: dict[str, Any] = {}
    for name in PlanRequest.model_fields:
        raw = request.query_params.get(name)
        if raw is None or raw.strip() == "":
            continue
        raw = raw.strip()
        if name in _LIST_FIELDS:
            values[name] = [part.strip() for part in raw.split(",") if part.strip()]
        elif name in _BOOL_FIELDS:
            values[name] = raw.lower() in ("1", "true", "on", "yes")
        elif name in _INT_CHOICE_FIELDS and raw.isdigit():
            values[name] = int(raw)
        elif name in _TOKEN_FIELDS or name in _COUNT_FIELDS:
            values[name] = shorthand(name, raw)
        elif name == "gpu":
            values[name] = canonical_gpu(raw)
        else:
            values[name] = raw
    return values


_SELECT_DEFAULTS = {"optimizer": "adamw", "train_precision": "mixed", "optimizer_state": "fp32"}
"""What the forms' selects send when left alone (blank text fields are dropped by :func:`form_values`). The serving
engine's select is left alone at its blank "default" option, so a vLLM or TensorRT-LLM sent with it was chosen."""


def for_the_task(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the other tasks' fields that the form sent at their defaults: a form sends every select
    (``optimizer=adamw`` with an inference plan), and the shared check refuses an option the task has no use for
    (:func:`~anchorgpu.planner.validate.check_task_options`). A field the user changed is kept, and refused naming it,
    as the API and the CLI refuse it: an engine chosen for a training plan, vLLM as much as TensorRT-LLM.

    >>> for_the_task({"task": "train", "engine": "vllm", "optimizer": "sgd"})
    {'task': 'train', 'engine': 'vllm', 'optimizer': 'sgd'}
    >>> for_the_task({"engine": "vllm", "optimizer": "adamw", "train_precision": "fp8"})
    {'engine': 'vllm', 'train_precision': 'fp8'}
    """
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.planner.validate import check_task_options

    task = str(values.get("task") or "inference")
    kept = dict(values)
    for name, default in _SELECT_DEFAULTS.items():
        if str(values.get(name)) != default:
            continue
        try:
            check_task_options(task, {name: default})
        except InvalidWorkload:
            del kept[name]
    return kept
