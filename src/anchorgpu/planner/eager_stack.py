"""What a transformers model trained eagerly (or compiled) held and how fast it ran, over the plan. Pure.

Training memory is planned for fused kernels (Megatron-Core, Transformer Engine, torch.compile), and the speed for a
Megatron-Core-class stack. ``data/eager_stack.json`` holds what one GPU measured against those plans
(``benchmarks/device/compare.py --write`` writes it from a device run): the plan states the measured spans beside
every full training plan, and warns when its headroom would not hold the extra activations an eager stack keeps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from anchorgpu.errors import said
from anchorgpu.planner.warnings import PlanWarning, make_warning
from anchorgpu.units import fmt_bytes

__all__ = ["EagerStack", "eager_headroom_warning", "eager_stack", "memory_line", "pytorch_memory_line",
           "pytorch_speed_line", "speed_line"]


@dataclass(frozen=True, slots=True)
class EagerStack:
    """Measured over planned, each a [low, high] span: activations (what the forward pass added over the planned
    activations) without and with full recompute, the peak in use over the planned total, tokens/s over the
    prediction; for the eager and the compiled stack."""

    source: str
    gpu: str
    eager_activations_no_recompute: tuple[float, float]
    eager_activations_full_recompute: tuple[float, float]
    eager_speed: tuple[float, float]
    compiled_peak: tuple[float, float]
    compiled_speed: tuple[float, float]
    eager_speed_pytorch: tuple[float, float] = (0.0, 0.0)  # tokens/s over the --train-stack pytorch prediction
    compiled_speed_pytorch: tuple[float, float] = (0.0, 0.0)
    eager_peak_pytorch: tuple[float, float] = (0.0, 0.0)  # the peak in use over the --train-stack pytorch plan's total
    compiled_peak_pytorch: tuple[float, float] = (0.0, 0.0)

    def activation_ratio(self, recompute: str) -> float:
        """The most an eager stack held over the planned activations at this recompute level (levels that keep more
        than full recompute take the no-recompute figure)."""
        span = self.eager_activations_full_recompute if recompute == "full" else self.eager_activations_no_recompute
        return span[1]


def _span(values: list[float]) -> tuple[float, float]:
    low, high = (float(v) for v in values)
    return (low, high)


@lru_cache(maxsize=1)
def eager_stack() -> EagerStack:
    """The shipped measurements (read once).

    >>> s = eager_stack()
    >>> s.activation_ratio("none") > 1.0, s.activation_ratio("none") > s.activation_ratio("full")
    (True, True)
    """
    doc = json.loads(resources.files("anchorgpu.planner").joinpath("data/eager_stack.json").read_text("utf-8"))
    eager, compiled = doc["eager"], doc["compiled"]
    return EagerStack(
        source=str(doc["run"]), gpu=str(doc["gpu"]),
        eager_activations_no_recompute=_span(eager["activations_no_recompute"]),
        eager_activations_full_recompute=_span(eager["activations_full_recompute"]),
        eager_speed=_span(eager["speed"]),
        compiled_peak=_span(compiled["peak"]),
        compiled_speed=_span(compiled["speed"]),
        eager_speed_pytorch=_span(eager.get("speed_pytorch", (0.0, 0.0))),  # absent from a run written before
        compiled_speed_pytorch=_span(compiled.get("speed_pytorch", (0.0, 0.0))),
        eager_peak_pytorch=_span(eager.get("peak_pytorch", (0.0, 0.0))),
        compiled_peak_pytorch=_span(compiled.get("peak_pytorch", (0.0, 0.0))),
    )


def eager_headroom_warning(activations_bytes: int, recompute: str, headroom_bytes: int, *, total_bytes: int = 0,
                           train_stack: str = "megatron") -> PlanWarning | None:
    """The warning a full-training plan that fits carries when its headroom would not hold the extra activations
    transformers kept when run eagerly: the plan fits a fused stack, not necessarily that one. A PyTorch-native plan
    (``train_stack="pytorch"``) already holds that stack's own activations and loss: its warning is the measured eager
    peak over such a plan's total (up to ``eager_peak_pytorch``) beyond the headroom."""
    stack = eager_stack()
    native = train_stack == "pytorch" and stack.eager_peak_pytorch[1] > 0
    if native:
        ratio = stack.eager_peak_pytorch[1]
        extra = round(total_bytes * (ratio - 1.0))
    else:
        ratio = stack.activation_ratio(recompute)
        extra = round(activations_bytes * (ratio - 1.0))
    if extra <= headroom_bytes:  # the usual case: no warning, so no sentence formed
        return None
    measured = (said("peaked at up to {ratio:.2f}x a PyTorch-native plan's total", ratio=ratio) if native
                else said("held up to {ratio:.2f}x the planned activations", ratio=ratio))
    return make_warning(
        "eager_activations_exceed_headroom",
        said("transformers run eagerly {measured} on one {gpu}: {extra} more than this plan, beyond its {headroom} "
             "headroom", measured=measured, gpu=stack.gpu.upper(), extra=fmt_bytes(extra),
             headroom=fmt_bytes(headroom_bytes)))


def _x(span: tuple[float, float]) -> str:
    """A measured ratio, or its range, as the lines write it ('0.95x', '1.27-1.36x'), said: a page writes its numbers.

    >>> _x((0.95, 0.95)), _x((1.27, 1.36)).template
    ('0.95x', '{low:.2f}-{high:.2f}x')
    """
    return said("{low:.2f}x", low=span[0]) if span[0] == span[1] else said("{low:.2f}-{high:.2f}x", low=span[0],
                                                                         high=span[1])


@lru_cache(maxsize=1)
def memory_line() -> str:
    """The assumption every full training plan carries about the kernels its activations are planned for."""
    s = eager_stack()
    return said("Activations as fused kernels keep them (Megatron-Core, Transformer Engine, torch.compile): on one "
                "{gpu} a compiled transformers model peaked at {compiled} this plan's total, while run eagerly it held "
                "{eager} the planned activations ({full} with full recompute) ({source}).", gpu=s.gpu.upper(),
                compiled=_x(s.compiled_peak), eager=_x(s.eager_activations_no_recompute),
                full=_x(s.eager_activations_full_recompute), source=s.source)


@lru_cache(maxsize=1)
def pytorch_memory_line() -> str:
    """The assumption a ``--train-stack pytorch`` training plan carries about its activations, in place of
    :func:`memory_line` (which is about fused kernels)."""
    s = eager_stack()
    return said("Activations as a PyTorch-native stack keeps them (its own selective recompute and fp32 loss, below): "
                "on one {gpu} transformers run eagerly peaked at {eager} such a plan's total, compiled (loss fused in) "
                "at {compiled} ({source}).", gpu=s.gpu.upper(), eager=_x(s.eager_peak_pytorch),
                compiled=_x(s.compiled_peak_pytorch), source=s.source)


@lru_cache(maxsize=1)
def speed_line() -> str:
    """The assumption every full training plan's speed carries about the stack it predicts."""
    s = eager_stack()
    return said("Speed of a Megatron-Core-class stack (fused kernels, overlapped communication): on one {gpu} "
                "transformers trained at {eager} of the prediction eagerly and {compiled} compiled ({source}).",
                gpu=s.gpu.upper(), eager=_x(s.eager_speed), compiled=_x(s.compiled_speed), source=s.source)


@lru_cache(maxsize=1)
def pytorch_speed_line() -> str:
    """How the measured transformers runs fell around a ``--train-stack pytorch`` prediction, beside Megatron-Core's."""
    s = eager_stack()
    return said("On one {gpu}, transformers models trained at {eager} of this prediction eagerly and {compiled} "
                "compiled, against {eager_megatron} and {compiled_megatron} of Megatron-Core's ({source}, not fitted).",
                gpu=s.gpu.upper(), eager=_x(s.eager_speed_pytorch), compiled=_x(s.compiled_speed_pytorch),
                eager_megatron=_x(s.eager_speed), compiled_megatron=_x(s.compiled_speed), source=s.source)
