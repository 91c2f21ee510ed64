"""How the CLI writes a speed figure: the prediction, its band (where measured runs of the same kind fell) and its
roofline bound, a rate's ceiling or a time's floor, as the JSON's ``key_low``/``key_high``/``key_ceiling`` give them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from anchorgpu.units import figure_places

__all__ = ["BOUND_WORDS", "band", "band_note", "bound", "figure", "without_ceiling"]


def band(section: dict[str, Any], key: str, fmt: str, scale: float = 1.0) -> str | None:
    """``'1,234 tok/s (1,100-1,400; ceiling 2,000)'``: the prediction, its band and its roofline bound (a time's
    ``'floor 0.04 s'``, :func:`bound`)."""
    value = section.get(key)
    if not isinstance(value, int | float):
        return None
    return figure(fmt, value * scale) + band_note(section, key, lambda v: figure(fmt, v * scale))


def figure(fmt: str, value: float) -> str:
    """``fmt`` (``'{:,.0f} tok/s'``) applied to ``value``, with the decimals that keep two significant digits where
    its own would keep fewer: a rate of 0.039 tok/s is not written ``0 tok/s``.

    >>> figure("{:,.0f} tok/s", 1818.4), figure("{:,.0f} tok/s", 0.0393), figure("{:.1%}", 0.4)
    ('1,818 tok/s', '0.039 tok/s', '40.0%')
    """
    places = _PLACES.search(fmt)
    if places is None:
        return fmt.format(value)
    wanted = figure_places(value, int(places.group(1)))
    return fmt.replace(places.group(0), f".{wanted}f").format(value)


_PLACES = re.compile(r"\.(\d)f")


def band_note(section: dict[str, Any], key: str, show: Callable[[float], str]) -> str:
    """``' (1,100-1,400; ceiling 2,000)'``: the band of ``key`` and its roofline bound (:func:`bound`), each
    written by ``show``; the bound alone where the user's efficiencies replace the calibrated ones (no band), nothing
    where neither is given.

    >>> band_note({"r": 9.0, "r_low": 8.0, "r_high": 11.0, "r_ceiling": 15.0}, "r", "{:.1f} tok/s".format)
    ' (8.0 tok/s-11.0 tok/s; ceiling 15.0 tok/s)'
    >>> s = {"train_time_s": 9.0, "train_time_s_low": 8.0, "train_time_s_high": 11.0, "train_time_s_ceiling": 5.0}
    >>> band_note(s, "train_time_s", "{:.1f} s".format), band_note({**s, "efficiencies": "user"}, "train_time_s", str)
    (' (8.0 s-11.0 s; floor 5.0 s)', ' (floor 5.0)')
    """
    low, high, ceiling = section.get(f"{key}_low"), section.get(f"{key}_high"), section.get(f"{key}_ceiling")
    top = f"{bound(key)} {show(ceiling)}" if isinstance(ceiling, int | float) else ""
    if section.get("efficiencies") == "user" or not (isinstance(low, int | float) and isinstance(high, int | float)):
        return f" ({top})" if top else ""
    return f" ({show(low)}-{show(high)}" + (f"; {top})" if top else ")")


def bound(key: str) -> str:
    """What the roofline figure (the JSON's ``key_ceiling``) is to ``key``: a rate's ``'ceiling'`` (no run is
    faster), a time's ``'floor'`` (no run is shorter: :data:`TIME_FIGURES`).

    >>> bound("output_tokens_per_s"), bound("ttft_s"), bound("gpu_hours")
    ('ceiling', 'floor', 'floor')
    """
    from anchorgpu.planner.speed.figures import TIME_FIGURES

    return "floor" if key in TIME_FIGURES else "ceiling"


BOUND_WORDS = "roofline bound: a rate's ceiling, a time's floor"
"""The speed heading's words for the figure after each band: a rate's roofline ceiling, a time's floor."""


def without_ceiling(section: dict[str, Any], key: str) -> dict[str, Any]:
    """``section`` without ``key``'s ceiling where the text shows none (a figure in model FLOPs,
    :data:`~anchorgpu.planner.speed.figures.MODEL_FLOP_FIGURES`), else ``section`` itself.

    >>> without_ceiling({"train_mfu": 0.5, "train_mfu_ceiling": 1.04, "train_mfu_low": 0.4}, "train_mfu")
    {'train_mfu': 0.5, 'train_mfu_low': 0.4}
    >>> without_ceiling({"ttft_s": 1.0, "ttft_s_ceiling": 0.5}, "ttft_s")
    {'ttft_s': 1.0, 'ttft_s_ceiling': 0.5}
    """
    from anchorgpu.planner.speed.figures import MODEL_FLOP_FIGURES

    if key not in MODEL_FLOP_FIGURES:
        return section
    return {k: v for k, v in section.items() if k != f"{key}_ceiling"}
