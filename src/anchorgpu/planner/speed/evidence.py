"""How the speed model did on one GPU's own measured runs: what a plan on that GPU can say about how sure it is.
Pure; stdlib only.

The bands (:class:`~anchorgpu.planner.speed.constants.Band`) come from every held-out row of a software stack, so
a GPU whose runs all fell to one side of the prediction (RTX PRO 6000's ran faster, MI300X's slower) or a GPU with no
measured run at all gets the same band as the stack's best-measured GPU. ``calibrate --write`` therefore also keeps,
per GPU and kind of run, how its rows fell (``evidence`` in ``calibration.json``), and each plan says it beside its
band: the user sees whether the figure on *their* GPU was ever checked, and which way it missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from anchorgpu.errors import Said, said

__all__ = ["ENGINE_NAMES", "EVIDENCE_KINDS", "STACK_NAMES", "GpuEvidence", "engine_kind", "evidence_json",
           "evidence_kind", "evidence_line", "evidence_section", "phase_and_band_kind", "split_kind", "summarise"]

EVIDENCE_KINDS: dict[str, str] = {
    "train": said("training"),
    "train-moe": said("mixture-of-experts training"),
    "train-cp": said("context-parallel training"),
    "serve": said("dense-model serving"),
    "serve-moe": said("mixture-of-experts serving"),
    "serve-pp": said("pipeline-staged serving"),
}
"""The kinds of run evidence is kept for (the serving kinds are the bands'), and how a plan names them."""

STACK_NAMES = {"cuda": "CUDA", "rocm": "ROCm"}
"""How a plan names a software stack (``constants.stack_of``)."""

ENGINE_NAMES = {"vllm": "vLLM", "trtllm": "TensorRT-LLM", "sglang": "SGLang"}
"""The serving engines whose rows keep evidence of their own (``kind@engine`` in ``calibration.json``), as a plan
names them."""


def engine_kind(kind: str, engine: str) -> str:
    """The evidence key of one engine's rows of a serving ``kind``: ``serve@vllm``, ``serve-moe@trtllm``."""
    return f"{kind}@{engine}"


def split_kind(key: str) -> tuple[str, str | None]:
    """(kind, engine) of an evidence key; engine None for the rows of every engine.

    >>> split_kind("serve-moe@trtllm"), split_kind("train")
    (('serve-moe', 'trtllm'), ('train', None))
    """
    kind, _, engine = key.partition("@")
    return kind, engine or None


def evidence_kind(phase: str, band_kind: str | None) -> str:
    """The evidence key of a plan: its phase (``train``, ``serve``) with the band's kind (``moe``, ``pp``) when it has
    one."""
    return phase if band_kind is None else f"{phase}-{band_kind}"


def phase_and_band_kind(kind: str) -> tuple[str, str | None]:
    """:func:`evidence_kind` undone: (phase, band kind or None) of an evidence key without its engine.

    >>> phase_and_band_kind("serve-moe"), phase_and_band_kind("train")
    (('serve', 'moe'), ('train', None))
    """
    phase, _, band_kind = kind.partition("-")
    return phase, band_kind or None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuEvidence:
    """Measured over predicted speed (above 1: the runs were faster than predicted; a time is inverted) over one
    GPU's rows of one kind: the median, lowest and highest over its held-out rows when it has at least
    :data:`MIN_HELD_OUT`, else over all of them (``basis`` says which)."""

    rows: int
    held_out: int
    basis: str  # "held-out" or "all"
    median: float
    low: float
    high: float


WIDE_SPREAD = 2.0
"""A GPU's runs whose fastest and slowest ratios differ by this factor or more: the sentence says so beside the median."""

MIN_HELD_OUT = 3
"""Below this many held-out rows a GPU's evidence is taken over its fitted rows too (which the fit pulled toward 1)."""


def summarise(fitted: list[float], held_out: list[float]) -> GpuEvidence:
    """The evidence of one GPU and kind from the measured/predicted speed ratios of its fitted and held-out rows.

    >>> e = summarise([1.0, 1.02], [1.1, 1.2, 1.3])
    >>> (e.rows, e.held_out, e.basis, e.median, e.low, e.high)
    (5, 3, 'held-out', 1.2, 1.1, 1.3)
    >>> summarise([0.9, 1.0], [1.5]).basis
    'all'
    """
    import statistics  # ~3 ms with fractions: loaded by the calibration report, not by a plan or a recommend

    basis, ratios = ("held-out", held_out) if len(held_out) >= MIN_HELD_OUT else ("all", fitted + held_out)
    return GpuEvidence(rows=len(fitted) + len(held_out), held_out=len(held_out), basis=basis,
                       median=round(statistics.median(ratios), 3), low=round(min(ratios), 3),
                       high=round(max(ratios), 3))


@lru_cache(maxsize=256)
def evidence_line(gpu_name: str, kind: str, evidence: GpuEvidence | None, stack: str, engine: str | None = None) -> str:
    """The plan's sentence on ``evidence`` (``None``: no measured run of this kind on this GPU); ``engine``: the
    evidence is that engine's rows only.

    >>> evidence_line("mi300x", "train", GpuEvidence(rows=1, held_out=0, basis="all", median=1.0, low=1.0, high=1.0),
    ...               "ROCm")
    'on mi300x, 1 measured training run (in the fit, which pulls it toward the prediction) ran at 1.00x the predicted speed: close to the prediction'
    >>> evidence_line("a100-40gb-sxm", "serve", GpuEvidence(rows=3, held_out=1, basis="all", median=0.97, low=0.94,
    ...               high=1.05), "CUDA")[:101]
    'on a100-40gb-sxm, 3 measured dense-model serving runs (2 of them in the fit, which pulls them toward '
    >>> evidence_line("h200", "serve-moe", GpuEvidence(rows=50, held_out=36, basis="held-out", median=0.96, low=0.56,
    ...               high=2.67), "CUDA")[-70:]
    'close to the prediction at the median, but single runs ranged 4.8-fold'
    >>> evidence_line("l4", "serve", None, "CUDA")
    'no measured dense-model serving run on l4 in the calibration set: the figure and its band rest on other GPUs of the CUDA stack'
    >>> evidence_line("rtx-pro-6000", "serve-moe", GpuEvidence(rows=49, held_out=39, basis="held-out", median=1.19,
    ...               low=0.99, high=1.67), "CUDA")[:96]
    'on rtx-pro-6000, 39 held-out mixture-of-experts serving runs ran at a median 1.19x the predicted'
    >>> evidence_line("a100-80gb-sxm", "serve", GpuEvidence(rows=10, held_out=10, basis="held-out", median=0.73,
    ...               low=0.55, high=1.01), "CUDA", "vllm")[:65]
    'on a100-80gb-sxm, 10 held-out vLLM dense-model serving runs ran a'
    """
    what = (EVIDENCE_KINDS[kind] if engine is None else
            said("{engine} {what}", engine=ENGINE_NAMES[engine], what=EVIDENCE_KINDS[kind]))
    if evidence is None:
        return said("no measured {what} run on {gpu} in the calibration set: the figure and its band rest on other "
                    "GPUs of the {stack} stack", what=what, gpu=gpu_name, stack=stack)
    lean: Said = (_FASTER if evidence.median > 1.05 else _SLOWER if evidence.median < 0.95 else _CLOSE)
    if evidence.rows == 1:
        return said("on {gpu}, 1 measured {what} run ({how}) ran at {median:.2f}x the predicted speed: {lean}",
                    gpu=gpu_name, what=what, how=_HELD_OUT if evidence.held_out else _IN_THE_FIT,
                    median=evidence.median, lean=lean)
    if evidence.high >= WIDE_SPREAD * evidence.low:  # a median near 1 hides runs far to either side
        lean = said("{lean} at the median, but single runs ranged {fold:.1f}-fold", lean=lean,
                    fold=evidence.high / evidence.low)
    runs = (said("{held_out} held-out {what} runs", held_out=evidence.held_out, what=what)
            if evidence.basis == "held-out" else
            said("{rows} measured {what} runs ({fitted} of them in the fit, which pulls them toward the prediction)",
                 rows=evidence.rows, what=what, fitted=evidence.rows - evidence.held_out))
    return said("on {gpu}, {runs} ran at a median {median:.2f}x the predicted speed ({low:.2f}x-{high:.2f}x): {lean}",
                gpu=gpu_name, runs=runs, median=evidence.median, low=evidence.low, high=evidence.high, lean=lean)


_FASTER, _SLOWER, _CLOSE = (said("faster than predicted"), said("slower than predicted"),
                            said("close to the prediction"))  # how the runs lean, in evidence_line
_HELD_OUT, _IN_THE_FIT = said("held out"), said("in the fit, which pulls it toward the prediction")


def evidence_json(gpu_name: str, kind: str, evidence: GpuEvidence | None,
                  engine: str | None = None) -> dict[str, object]:
    """The ``performance.evidence`` object of a plan: the GPU, the kind of run (and ``engine`` where the rows are one
    engine's), and how its rows fell (``rows`` 0 and no ratios where it has none).

    >>> evidence_json("l4", "serve", None)
    {'gpu': 'l4', 'kind': 'serve', 'rows': 0}
    """
    head: dict[str, object] = {"gpu": gpu_name, "kind": kind, **({"engine": engine} if engine else {})}
    if evidence is None:
        return {**head, "rows": 0}
    return {**head, "rows": evidence.rows, "held_out": evidence.held_out,
            "basis": evidence.basis, "median_ratio": evidence.median, "low_ratio": evidence.low,
            "high_ratio": evidence.high}



def evidence_section(gpu_name: str, kind: str, evidence: GpuEvidence | None, stack: str,
                     engine: str | None = None) -> dict[str, object]:
    """``performance.evidence`` of a plan (and of each ``recommend`` result): :func:`evidence_json` with the
    sentence :func:`evidence_line` says it in (``summary``). ``stack``: ``cuda`` or ``rocm``.

    >>> evidence_section("l4", "serve", None, "cuda")["summary"][:44]
    'no measured dense-model serving run on l4 in'
    """
    return {**evidence_json(gpu_name, kind, evidence, engine),
            "summary": evidence_line(gpu_name, kind, evidence, STACK_NAMES[stack], engine)}
