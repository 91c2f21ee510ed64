"""The one line ``recommend`` prints where nothing in the catalog fits: what was tried, why the offerings were turned
down (their rejections, grouped), and which options to change. Pure: it reads the answer only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from anchorgpu.recommend.records import Rejection

__all__ = ["nothing_fits_line"]

# a rejection's reason, by how it begins, as a cause and the options that change it (eligibility.miss_reason and the
# budget, price and GPU refusals of service.recommend and eligibility.able_to_run), in the order they are named
_CAUSES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("does not fit", "the closest configuration"), "short of memory",
     "{memory}"),
    (("its engines run at most",), "past their engines' sequence cap",
     "fewer users (--concurrency) or a larger --max-num-seqs"),
    (("no configuration reaches",), "below the per-user floor", "a lower --min-tokens-per-s-per-user"),
    (("no configuration gives a first token",), "slower to the first token than --max-ttft-s",
     "a higher --max-ttft-s or a shorter --prompt"),
    (("--global-batch",), "unable to split the global batch", "another --global-batch (the nearest that split are named below)"),
    (("over the budget",), "over --max-usd", "a higher --max-usd"),
    (("unpriced for this term",), "not priced for this term", "another --term"),
)
_MEMORY = {
    "inference": "fewer users (--concurrency), a shorter --context or request (--prompt/--output-tokens), "
                 "--lower-precision, or more servers (--max-servers, up to 16)",
    "diffusion": "fewer --images or a lower --resolution",
}
_TRAINING_MEMORY = ("a shorter --seq, --micro-batch 1, --recompute full, 8-bit optimizer state (--optimizer "
                    "adamw-8bit), or more servers (--max-servers, up to 16)")


def nothing_fits_line(task: str, evaluated: int, workload: Mapping[str, Any], rejected: Sequence[Rejection]) -> str:
    """Why a recommendation lists no offering, in one line: the configurations tried and for what, the causes of the
    rejections (as listed under "Cheaper options rejected"), and the options that would change them.

    >>> r = [Rejection(offering="a", servers=1, total_usd=None, reason="does not fit: the closest ..."),
    ...      Rejection(offering="b", servers=1, total_usd=None, reason="over the budget: 9 USD > 5 USD")]
    >>> print(nothing_fits_line("inference", 592, {"concurrency": 1_000_000, "context_tokens": 131072}, r))
    Nothing in the catalog fits: none of the 592 configurations tried (1,000,000 sequences of 131,072 tokens at once) was kept; offerings were short of memory or over --max-usd (each below). Try fewer users (--concurrency), a shorter --context or request (--prompt/--output-tokens), --lower-precision, or more servers (--max-servers, up to 16); or a higher --max-usd.
    """
    what = ""
    if task == "inference":
        conc, context = workload.get("concurrency"), workload.get("context_tokens")
        if isinstance(context, int):
            what = (f" ({conc:,} sequence{'' if conc == 1 else 's'} of {context:,} tokens at once)"
                    if isinstance(conc, int) else f" (sequences of {context:,} tokens)")
    elif task != "diffusion" and isinstance(seq := workload.get("seq_tokens"), int):
        what = f" (training on sequences of {seq:,} tokens)"
    causes: list[str] = []
    advice: list[str] = []
    other = False
    for r in rejected:
        for starts, cause, change in _CAUSES:
            if r.reason.startswith(starts):
                if cause not in causes:
                    causes.append(cause)
                    advice.append(change.format(memory=_MEMORY.get(task, _TRAINING_MEMORY)))
                break
        else:
            other = True  # the GPU cannot run the workload at all (an engine, a precision): its own reason below
    if other:
        causes.append("unable to run it on their GPU")
        advice.append("another GPU (--gpu), --engine or precision")
    tried = (f"the one configuration tried{what} was not kept" if evaluated == 1
             else f"none of the {evaluated:,} configurations tried{what} was kept")
    head = f"Nothing in the catalog fits: {tried}"
    if not causes:
        return f"{head}. Try more servers (--max-servers, up to 16) or a smaller workload."
    return (f"{head}; offerings were {_joined(causes, 'or')} (each below). Try {advice[0]}"
            + "".join(f"; or {a}" for a in advice[1:]) + ".")


def _joined(words: Sequence[str], last: str) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {last} {words[-1]}"
