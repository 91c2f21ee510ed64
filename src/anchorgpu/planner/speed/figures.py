"""How the ``performance`` section writes a figure: the prediction with its band from the calibration residuals and
its roofline ceiling beside it, and the evidence of the GPU's own measured runs. Pure."""

from __future__ import annotations

from functools import partial
from types import MappingProxyType
from typing import Any, NamedTuple

from anchorgpu.errors import said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.speed.constants import Band, Calibration, stack_of
from anchorgpu.planner.speed.evidence import STACK_NAMES, evidence_section, phase_and_band_kind

__all__ = ["MODEL_FLOP_FIGURES", "TIME_FIGURES", "Evidence", "evidence_items", "evidence_of", "plan_band", "put_evidence", "put_rate", "put_serving_figures",
           "put_time"]


class _BandKeys(dict[str, tuple[str, str, str]]):
    """``key_low``, ``key_high``, ``key_ceiling`` by figure name: a handful of names, each spelled once (looked up
    in C; an unseen name is spelled by ``__missing__``)."""

    def __missing__(self, key: str) -> tuple[str, str, str]:
        keys = self[key] = (f"{key}_low", f"{key}_high", f"{key}_ceiling")
        return keys


_BAND_KEYS = _BandKeys()

TIME_FIGURES = frozenset({"ttft_s", "prefill_s", "tpot_s", "step_time_s", "train_time_s", "gpu_hours"})
"""The figures that are times (:func:`put_time`; ``prefill_s`` the alias of ``ttft_s``): lower is better, so their
``_ceiling`` is the roofline's shortest time, a floor no run goes under; every other ``_ceiling`` is a rate's, a
ceiling no run passes. The JSON keeps the one ``_ceiling`` suffix for both; the text and the page say which."""

MODEL_FLOP_FIGURES = frozenset({"train_tflops_per_gpu", "train_mfu"})
"""The figures counted in model FLOPs, attention over the whole sequence (the Llama 3 paper's MFU): their
``_ceiling``, the causal work a step times at the peak, passes the peak (an MFU ceiling of 103.5% for the 8B at 4,096
tokens), so the CLI's text and the page show their bands without it and the tokens/s line carries the bound; the
JSON keeps it."""


def put_rate(out: dict[str, Any], key: str, value: float, ceiling: float | None, band: Band) -> None:
    """A rate (higher is better): measured runs fell within ``[value*low, value*high]``, the top no higher than the
    roofline ``ceiling`` of the same layout (a band widened by a GPU's own runs, :meth:`Band.holding`, could pass
    it; no run of that layout does)."""
    low, high, top = _BAND_KEYS[key]
    out[key] = value
    out[low] = value * band.low
    upper = value * band.high
    if ceiling is not None and value <= ceiling < upper:
        upper = ceiling
    out[high] = upper
    if ceiling is not None:
        out[top] = ceiling


def put_time(out: dict[str, Any], key: str, value: float, ceiling: float | None, band: Band) -> None:
    """A duration (lower is better): the band of its rate, inverted; its short end no shorter than the ceiling's."""
    low, high, top = _BAND_KEYS[key]
    out[key] = value
    lower = value / band.high
    if ceiling is not None and lower < ceiling <= value:
        lower = ceiling
    out[low] = lower
    out[high] = value / band.low
    if ceiling is not None:
        out[top] = ceiling


_TTFT_KEYS, _TPOT_KEYS = _BAND_KEYS["ttft_s"], _BAND_KEYS["tpot_s"]
_RATE_KEYS, _USER_KEYS = _BAND_KEYS["output_tokens_per_s"], _BAND_KEYS["decode_tokens_per_s_per_user"]
_MAX_RATE_KEYS = _BAND_KEYS["max_output_tokens_per_s"]


def put_serving_figures(out: dict[str, Any], band: Band, ttft: float, ttft_ceiling: float, tpot: float,
                        tpot_ceiling: float, rate: float, rate_ceiling: float, user_rate: float,
                        user_ceiling: float, max_rate: float | None, max_ceiling: float) -> None:
    """A serving estimate's first five figures with their ceilings: :func:`put_time` of ``ttft_s`` and ``tpot_s``,
    then :func:`put_rate` of ``output_tokens_per_s``, ``decode_tokens_per_s_per_user`` and, unless ``max_rate`` is
    None (nothing saturates: ``max_output_tokens_per_s`` null), ``max_output_tokens_per_s``; the same keys in the
    same order and the same operations, in one call (every serving estimate writes these)."""
    high_of, low_of = band.high, band.low
    low, high, top = _TTFT_KEYS  # put_time's
    out["ttft_s"] = ttft
    out[low] = ttft_ceiling if (lower := ttft / high_of) < ttft_ceiling <= ttft else lower
    out[high] = ttft / low_of
    out[top] = ttft_ceiling
    low, high, top = _TPOT_KEYS
    out["tpot_s"] = tpot
    out[low] = tpot_ceiling if (lower := tpot / high_of) < tpot_ceiling <= tpot else lower
    out[high] = tpot / low_of
    out[top] = tpot_ceiling
    low, high, top = _RATE_KEYS  # put_rate's
    out["output_tokens_per_s"] = rate
    out[low] = rate * low_of
    upper = rate * high_of
    out[high] = rate_ceiling if rate <= rate_ceiling < upper else upper
    out[top] = rate_ceiling
    low, high, top = _USER_KEYS
    out["decode_tokens_per_s_per_user"] = user_rate
    out[low] = user_rate * low_of
    upper = user_rate * high_of
    out[high] = user_ceiling if user_rate <= user_ceiling < upper else upper
    out[top] = user_ceiling
    if max_rate is None:
        out["max_output_tokens_per_s"] = None
        return
    low, high, top = _MAX_RATE_KEYS
    out["max_output_tokens_per_s"] = max_rate
    out[low] = max_rate * low_of
    upper = max_rate * high_of
    out[high] = max_ceiling if max_rate <= max_ceiling < upper else upper
    out[top] = max_ceiling


class Evidence(NamedTuple):
    """A GPU's evidence section (:func:`evidence_items`) as every plan of its context writes it, formed once: each
    plan's ``performance.evidence`` is a copy of ``section`` (a dictionary's copy, rather than one built again from
    the items), and ``summary`` its assumption."""

    section: MappingProxyType[str, object]  # read-only: the context holding it is shared
    summary: str


def evidence_of(items: tuple[tuple[str, object], ...]) -> Evidence:
    """The :class:`Evidence` of :func:`evidence_items`'s items (``summary`` last)."""
    summary = items[-1][1]
    return Evidence(MappingProxyType(dict(items)), summary if isinstance(summary, str) else str(summary))  # said kept


def put_evidence(evidence: Evidence | None, out: dict[str, Any], assumptions: list[str]) -> None:
    """How the GPU's own measured runs of this kind fell around the model (:func:`evidence_of`), in the JSON and as
    an assumption; nothing where there are none (``None``: the user's efficiencies replace the calibrated ones, and
    the runs say nothing of those)."""
    if evidence is None:
        return
    out["evidence"] = evidence.section.copy()
    assumptions.append(evidence.summary)


@partial(memo_on_frozen, frozen=2)
def evidence_items(gpu: GpuSpec, cal: Calibration, kind: str, engine: str | None = None,
                   ) -> tuple[tuple[str, object], ...]:
    """The evidence section's items, ``summary`` last: one GPU, calibration, kind and engine (a serving plan's; None
    for training) give one (frozen, so shared); ``recommend`` shows each result's the same way."""
    evidence, shown = cal.serving_evidence(gpu, kind, engine) if engine else (cal.evidence_for(gpu, kind), None)
    section = evidence_section(gpu.name, kind, evidence, stack_of(gpu), shown)
    phase, band_kind = phase_and_band_kind(kind)
    stack_band = cal.band(gpu, phase, band_kind)
    shown_band = plan_band(gpu, cal, phase, band_kind, engine)
    # the GPU's own runs sat to one side: say how far the band was widened for them, where that shows at the two
    # decimals the sentence gives (a widening of a few thousandths would read "widened to 0.89x-1.20x (the stack's is
    # 0.89x-1.20x)")
    if _shown(shown_band) != _shown(stack_band):
        summary = section.pop("summary")
        section.update(band_low_ratio=shown_band.low, band_high_ratio=shown_band.high,
                       stack_band_low_ratio=stack_band.low, stack_band_high_ratio=stack_band.high,
                       summary=said("{summary}; the band shown is widened to {low:.2f}x-{high:.2f}x of the prediction "
                                    "to hold them (the {stack} stack's is {stack_low:.2f}x-{stack_high:.2f}x), never "
                                    "past the roofline ceiling", summary=summary, low=shown_band.low,
                                    high=shown_band.high, stack=STACK_NAMES[stack_of(gpu)], stack_low=stack_band.low,
                                    stack_high=stack_band.high))
    return tuple(section.items())


def _shown(band: Band) -> tuple[str, str]:
    """A band's ends as the evidence sentence prints them."""
    return f"{band.low:.2f}", f"{band.high:.2f}"


@partial(memo_on_frozen, frozen=2)
def plan_band(gpu: GpuSpec, cal: Calibration, phase: str, kind: str | None, engine: str | None) -> Band:
    """The band a plan's figures carry (:meth:`Calibration.band_for`: the stack's, widened by the GPU's own held-out
    runs), memoised on the (frozen) GPU and calibration and the plain values after them, as every plan of the same
    kind on the same GPU asks it again."""
    return cal.band_for(gpu, phase, kind, engine)
