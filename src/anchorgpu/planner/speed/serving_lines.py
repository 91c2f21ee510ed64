"""Two assumptions of a serving estimate that read its figures (:mod:`.serving_plan` adds them): the host's cap on a
TensorRT-LLM replica with pipeline stages, and the admission wait of the users beyond what the engine runs. Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.planner.speed.assumption_lines import pp_host_passes_line
from anchorgpu.planner.speed.caveats import REQUEST_QUEUE_CAVEAT_LABEL
from anchorgpu.planner.speed.links import host_kind
from anchorgpu.planner.speed.request_cycle import admission_wait_s
from anchorgpu.units import fmt_duration

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan
    from anchorgpu.planner.speed.batching import ServingEstimate
    from anchorgpu.planner.speed.constants import Calibration
    from anchorgpu.planner.speed.step_constants import ServingSetup

__all__ = ["admission_line", "pp_host_line"]


def pp_host_line(plan: Plan, setup: ServingSetup, est: ServingEstimate, cal: Calibration) -> str:
    """:func:`pp_host_passes_line` of a TensorRT-LLM plan with stages: the host's cap on each of the plan's
    ``dp`` replicas (1 / (pp x the stated host time per sequence) tokens/s) and whether it sets the pace."""
    assert plan.gpu is not None
    per_sequence_s = cal.host_s_per_sequence_step[host_kind(plan.gpu)]
    cap = plan.layout.dp / (setup.pp * per_sequence_s)
    at_saturation = est.max_output_tokens_per_s >= cap * (1.0 - 1e-6)
    return pp_host_passes_line(setup.pp, per_sequence_s, est.bound == "host", at_saturation)


def _seconds(value: float) -> str:
    """A time of the queue line: three figures of seconds under a minute (``7.56 s``), past it in the unit the CLI
    writes a run in with the seconds beside it (``5.9 h (21,100 s)``), where ``{:,.3g}`` wrote ``2.11e+04 s``.

    >>> _seconds(7.5612), _seconds(21_100.4), _seconds(59.99)
    ('7.56 s', '5.9 h (21,100 s)', '60 s')
    """
    return f"{value:,.3g} s" if value < 60 else f"{fmt_duration(value)} ({value:,.0f} s)"


def admission_line(conc: int, sat: int, output: int, est: ServingEstimate) -> str:
    """The wait of the users beyond the engine's saturation for their admission (:func:`admission_wait_s`)."""
    wait = admission_wait_s(conc, output, est.output_tokens_per_s, est.ttft_s, est.tpot_s)
    return (f"{REQUEST_QUEUE_CAVEAT_LABEL}: the engine runs {sat:,} of the {conc:,} requests at once, so each waits "
            f"about {_seconds(wait)} in its queue before admission (Little's law: {conc:,} users x {output:,} tokens "
            f"at {est.output_tokens_per_s:,.0f} tok/s take {_seconds(conc * output / est.output_tokens_per_s)} a "
            f"request, {_seconds(est.ttft_s + (output - 1) * est.tpot_s)} of it running); a user's first token comes "
            f"about {_seconds(wait + est.ttft_s)} after the request, where the time to first token above counts from "
            "admission")
