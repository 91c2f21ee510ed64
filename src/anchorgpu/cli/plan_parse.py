"""The option values of ``anchorgpu plan`` (and ``recommend``, ``allocations --recipe``) read from their text: token
counts with binary suffixes, large counts with decimal ones, a global batch, whole GPUs, a WIDTHxHEIGHT resolution.
Bad input raises one line (exit 2).
"""

from __future__ import annotations

import re

from anchorgpu.errors import InvalidWorkload, PartialGpuRequested


def lower_choice(value: str | None) -> str | None:
    """A Typer callback for every option that names one of a set of values (``--task``, ``--engine``, ``--kv-cache``,
    ``--recipe``, ``--optimizer`` ...): the value in lower case, as the API spells its choices, so ``--engine VLLM``
    is ``--engine vllm`` (the API, a schema, takes the lower-case spelling only). Nothing else is changed: an unknown
    value, ``''`` included, is still refused naming it.

    >>> lower_choice("TRTLLM"), lower_choice(None), lower_choice("")
    ('trtllm', None, '')
    """
    return None if value is None else value.lower()


def parse_tokens(text: str | None, *, field: str) -> int | None:
    """``8192``, ``8k`` (= 8,192) or ``1m`` (= 1,048,576) tokens (bounds: :data:`anchorgpu.validation.LIMITS`)."""
    from anchorgpu.validation import BINARY_SUFFIXES, whole_number

    if text is None:
        return None
    return whole_number(text, field=field, suffixes={k: v for k, v in BINARY_SUFFIXES.items() if k != "g"}, example="8192 or 8k",
                        noun="a token count")


def parse_count(text: str | None, *, field: str, example: str = "1e12 or 15T") -> int | None:
    """A whole count: ``1000000``, ``1e12``, ``2.5e9``, or with a decimal suffix ``300B`` or ``14.8T`` (as
    training-token totals are written), ``1k`` users; never nan, inf or a fraction; within ``LIMITS[field]``.

    >>> parse_count("14.8T", field="tokens"), parse_count("300b", field="tokens"), parse_count("1e12", field="tokens")
    (14800000000000, 300000000000, 1000000000000)
    >>> parse_count("1k", field="concurrency"), parse_count("1e3", field="concurrency")
    (1000, 1000)
    """
    from anchorgpu.validation import DECIMAL_SUFFIXES, whole_number

    if text is None:
        return None
    return whole_number(text, field=field, suffixes=DECIMAL_SUFFIXES, example=example)


def parse_batch(text: str | None) -> int | None:
    """A global batch in tokens: ``4M`` (= 4,194,304), ``512k`` or an integer; nothing is rounded.

    >>> parse_batch("4M"), parse_batch("16m"), parse_batch("1000000")
    (4194304, 16777216, 1000000)
    """
    from anchorgpu.validation import BINARY_SUFFIXES, whole_number

    if text is None:
        return None
    return whole_number(text, field="global_batch", suffixes=BINARY_SUFFIXES, example="4M, 16M or 1048576", noun="tokens")


def parse_gpus(text: str | None) -> int | None:
    """Whole GPUs only: ``0.5`` or ``0`` are refused with the reason (no MIG, vGPU or time-slicing)."""
    from anchorgpu.units import require_whole_gpus

    if text is None:
        return None
    from anchorgpu.validation import LIMITS

    try:
        value = float(text) if text.isascii() else float("nan")  # ASCII digits only, as everywhere
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):  # 'inf' and '1e309' are no count, not a fraction
        raise InvalidWorkload(f"--gpus {text!r}: expected a whole number of GPUs")
    if value <= 0 and value.is_integer():  # -2 is named as typed, not as gpus=-2.0
        raise InvalidWorkload(f"--gpus {text.strip()}: at least one GPU is needed")
    if value > LIMITS["gpus"].high and value.is_integer():
        raise InvalidWorkload(f"--gpus {text.strip()}: at most {LIMITS['gpus'].high:,.0f} GPUs")
    if not value.is_integer():  # named as typed, as the other refusals here, not as gpus=0.5
        raise PartialGpuRequested(
            f"--gpus {text.strip()}: only whole GPUs are offered (no MIG slices, vGPU or time-slicing)")
    return require_whole_gpus(value)


def parse_resolution(text: str | None, *, flag: str = "--resolution") -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.match(r"^\s*([0-9]{1,5})\s*[xX×]\s*([0-9]{1,5})\s*$", text)
    if not match:
        raise InvalidWorkload(f"{flag} {text!r}: expected WIDTHxHEIGHT in pixels, e.g. 1024x1024")
    return int(match.group(1)), int(match.group(2))
