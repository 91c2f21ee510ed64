"""The ``anchorgpu recommend --json`` contract: a :class:`~anchorgpu.recommend.service.Recommendation` as plain
JSON values (money as exact decimal strings), with the calibrated band of each prediction."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from anchorgpu.planner.inputs import RECOMPUTES
from anchorgpu.planner.speed.overrides import Overrides
from anchorgpu.recommend.limits import limits_json
from anchorgpu.recommend.precision import LOWER_PRECISION_NOTE
from anchorgpu.units import round_figure

if TYPE_CHECKING:
    from collections.abc import Callable

    from anchorgpu.recommend.records import Recommendation, RecommendedOption

    StepFigures = Callable[[RecommendedOption], Mapping[str, Any]]

__all__ = ["evidence_lines", "headline_band", "recommendation_to_json"]


def _money(usd: Decimal | None) -> str | None:
    """Money as its exact decimal string."""
    return None if usd is None else str(usd)


def _option_json(o: RecommendedOption, moe: bool = False, efficiencies: Overrides | None = None,
                 engine: str = "vllm", contexts: dict[tuple[Any, ...], tuple[Any, Any]] | None = None,
                 step: StepFigures | None = None) -> dict[str, Any]:
    """One option as plain JSON values (what :func:`_jsonable` would make of it: money already as strings);
    ``contexts`` and ``step`` as :func:`_bands` takes them."""
    c = o.config

    def num(name: str, digits: int = 3) -> float | None:
        value = c.get(name)
        return None if value is None else round_figure(float(value), digits)

    return {
        "offering": o.offering, "gpu": o.gpu, "kind": o.kind, "region": o.region, "gpus": o.gpus,
        "servers": o.servers,
        "layout": {"tp": c["tp"], "pp": c["pp"], "dp": c["dp"], "zero": c["zero"], "ep": c.get("ep", 1),
                   "cp": c.get("cp", 1), "virtual_stages": int(c.get("virtual_stages") or 1),
                   # interleaved chunks of layers no pp x v chunks split: the stated layout the sweep ran
                   **({"pipeline_layout": c["pipeline_layout"]} if c.get("pipeline_layout") else {}),
                   # training where no layout without offload fits: the optimizer state in host memory, as plan's
                   # layout states it (recommend.offload)
                   **({"offload": c["offload"]} if c.get("offload") else {})},
        "recompute": RECOMPUTES[int(c["recompute"])] if c.get("recompute") is not None else None,
        "weights": c["weights"], "kv_cache": c["kv_cache"] if c.get("decode_tokens_per_s_total") else None,
        "concurrency": c["concurrency"],
        "per_gpu_total_bytes": int(c["per_gpu_total_bytes"]), "budget_bytes": int(c["budget_bytes"]),
        "headroom_bytes": int(c["budget_bytes"] - c["per_gpu_total_bytes"]), "fits": bool(c["fits"]),
        "per_gpu": {"weights_bytes": int(c["weights_bytes"]), "kv_cache_bytes": int(c["kv_cache_bytes"]),
                    "activations_bytes": int(c["activations_bytes"]), "other_bytes": int(c["other_bytes"])},
        "prefill_s": num("prefill_s", 4),
        "decode_tokens_per_s_per_user": num("decode_tokens_per_s_per_user", 2),
        "decode_tokens_per_s_total": num("decode_tokens_per_s_total", 1),
        "max_output_tokens_per_s": num("max_output_tokens_per_s", 1),
        "train_tokens_per_s": num("train_tokens_per_s", 1), "train_time_s": num("train_time_s", 1),
        "total_usd": str(o.total_usd), "per_gpu_hour_usd": _money(o.per_gpu_hour_usd),
        "effective_per_gpu_hour_usd": str(o.effective_per_gpu_hour_usd),
        "usd_per_million_output_tokens": _money(o.usd_per_million_output_tokens),
        "run_hours": o.run_hours, "run_usd": _money(o.run_usd), "run_term": o.run_term,
        "run_refused": o.run_refused, "network_gbit_per_s_per_gpu": o.network_gbit_per_s_per_gpu,
        "warnings": list(o.codes),
        # an offloaded row: a GPU's share of the optimizer state in host memory, and what a server keeps of it
        **({"offloaded_optimizer_bytes": int(c["offloaded_optimizer_bytes"]),
            "offloaded_gradients_bytes": int(c.get("offloaded_gradients_bytes", 0)),
            "host_bytes_per_server": int(c["host_bytes_per_server"])} if c.get("offload") else {}),
        "lower_precision": o.lower_precision, "precision_note": LOWER_PRECISION_NOTE if o.lower_precision else None,
        # sized at the default request, its KV cache short of one whole-window sequence: the launch's maximum length
        **({"max_model_len_tokens": int(c["max_model_len_tokens"])} if c.get("max_model_len_tokens") else {}),
        **_bands(o, c, moe, efficiencies, engine, contexts, step),
    }


def _bands(o: RecommendedOption, c: Mapping[str, Any], moe: bool = False,
           efficiencies: Overrides | None = None, engine: str = "vllm",
           contexts: dict[tuple[Any, ...], tuple[Any, Any]] | None = None,
           step: StepFigures | None = None) -> dict[str, Any]:
    """The calibrated band of each prediction (``*_low``/``*_high``) and its roofline ceiling (``*_ceiling``, where
    :mod:`~anchorgpu.recommend.ceilings` put it in the row), as ``plan`` writes them (:func:`put_rate`,
    :func:`put_time`: a band's fast end never past the ceiling), each rounded as its figure; and the names of plan's
    contract (``ttft_s``, ``output_tokens_per_s``) beside the sweep's own, the same figures. The evidence of a serving
    result is its ``engine``'s where it has enough, as a plan's is. ``contexts`` (one per recommendation: the same
    ``efficiencies`` and ``engine``) keeps each GPU and kind's band and evidence for the next option of the same.
    ``step`` (a training recommendation's :attr:`~anchorgpu.recommend.records.Recommendation.step_figures`): the
    row's step figures plan gives (:func:`_step`)."""
    from anchorgpu.planner.speed.figures import put_rate, put_time

    training = c.get("train_tokens_per_s") is not None and c.get("decode_tokens_per_s_total") is None
    pp, cp = int(c.get("pp") or 1), int(c.get("cp") or 1)
    key = (o.gpu, training, moe, pp, cp)
    context = None if contexts is None else contexts.get(key)
    if context is None:
        context = _band_context(o.gpu, training, moe, pp, cp, efficiencies, engine)
        if contexts is not None:
            contexts[key] = context
    band, evidence = context
    out: dict[str, Any] = {} if evidence is None else {"evidence": dict(evidence)}
    scratch: dict[str, Any] = {}
    for name, digits, rate in _TRAINING_FIGURES if training else _SERVING_FIGURES:
        value = c.get(name)
        if value is None:
            continue
        low, high, top = _BAND_KEYS[name]
        ceiling = c.get(top)
        (put_rate if rate else put_time)(scratch, name, float(value), ceiling, band)
        out[low] = round_figure(scratch[low], digits)
        out[high] = round_figure(scratch[high], digits)
        if ceiling is not None:
            out[top] = round_figure(scratch[top], digits)
    _derived(out, scratch, c, o.gpus, band, training)
    if training and step is not None:
        _step(out, scratch, step(o), band)
    if not training:  # the names of plan's contract, each the same figure as the sweep's own, banded the same way
        for contract, own, digits in _CONTRACT_NAMES:
            value = c.get(own)
            out[contract] = None if value is None else round_figure(float(value), digits)
            for own_key, contract_key in zip(_BAND_KEYS[own], _BAND_KEYS[contract], strict=True):
                if own_key in out:
                    out[contract_key] = out[own_key]
    return out


def _derived(out: dict[str, Any], scratch: dict[str, Any], c: Mapping[str, Any], gpus: int, band: Any,
             training: bool) -> None:
    """The figures of plan's contract a row derives from its own, banded as plan bands them: a serving row's
    ``tpot_s`` (1 / ``decode_tokens_per_s_per_user``, its floor 1 / that rate's ceiling), a training row's
    ``gpu_hours`` (GPUs x ``train_time_s`` / 3,600, with the tokens to train on)."""
    from anchorgpu.planner.speed.figures import put_time

    user, time_s = c.get("decode_tokens_per_s_per_user"), c.get("train_time_s")
    if not training and user:
        top = scratch.get("decode_tokens_per_s_per_user_ceiling")
        put_time(scratch, "tpot_s", 1.0 / float(user), None if not top else 1.0 / float(top), band)
        keys = ("tpot_s", *_BAND_KEYS["tpot_s"])
    elif training and time_s is not None:
        top = scratch.get("train_time_s_ceiling")
        put_time(scratch, "gpu_hours", float(time_s) * gpus / 3600, None if top is None else float(top) * gpus / 3600,
                 band)
        keys = ("gpu_hours", *_BAND_KEYS["gpu_hours"])
    else:
        if training:
            out["gpu_hours"] = None  # as plan's, without the tokens to train on
        return
    for key in keys:
        if key in scratch:
            out[key] = round_figure(scratch[key], 5 if training is False else 1)


def _step(out: dict[str, Any], scratch: dict[str, Any], figures: Mapping[str, Any], band: Any) -> None:
    """A training row's ``train_tflops_per_gpu`` and ``train_mfu`` with their band and roofline ceiling, banded as
    its throughput (plan bands them so: ``speed.estimate._training``), and ``step_time_breakdown_s`` (the step's
    parts in seconds, no band, as plan's), from ``figures`` (:func:`~anchorgpu.recommend.step_figures.
    training_step_figures`); each null where the row could not be planned again (none a recommendation shows)."""
    from anchorgpu.planner.speed.figures import put_rate

    for name, digits in _STEP_FIGURES:
        value = figures.get(name)
        if value is None:
            out[name] = None
            continue
        put_rate(scratch, name, float(value), float(figures[f"{name}_ceiling"]), band)
        for key in (name, *_BAND_KEYS[name]):
            out[key] = round_figure(scratch[key], digits)
    parts = figures.get("step_time_breakdown_s")
    out["step_time_breakdown_s"] = (None if parts is None else
                                    {part: round_figure(float(s), 4) for part, s in parts.items()})


def _band_context(gpu_name: str, training: bool, moe: bool, pp: int, cp: int, efficiencies: Overrides | None,
                  engine: str) -> tuple[Any, tuple[tuple[str, object], ...] | None]:
    """The band of an option's figures (:func:`plan_band`) and its evidence items (None where the user's
    efficiencies replace the calibrated ones), by its GPU and kind."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.constants import band_kind_of
    from anchorgpu.planner.speed.estimate import evidence_items
    from anchorgpu.planner.speed.evidence import evidence_kind
    from anchorgpu.planner.speed.figures import plan_band
    from anchorgpu.planner.speed.overrides import calibrated

    kind = band_kind_of(moe=moe, phase="train" if training else "serve", pp=pp, cp=cp)
    cal, gpu = calibrated(efficiencies), get_gpu(gpu_name)
    band = plan_band(gpu, cal, "train" if training else "serve", kind, None if training else engine)
    if cal.origin == "user":  # how this GPU's own measured runs of the kind fell around the model, as in a plan
        return band, None
    ekind = evidence_kind("train" if training else "serve", kind)
    return band, evidence_items(gpu, cal, ekind, None if training else engine)


_SERVING_FIGURES = (("prefill_s", 4, False), ("decode_tokens_per_s_per_user", 2, True),
                    ("decode_tokens_per_s_total", 1, True), ("max_output_tokens_per_s", 1, True))
"""A serving result's figures: (name, decimals it is written with, whether it is a rate: higher is better)."""
_TRAINING_FIGURES = (("train_tokens_per_s", 1, True), ("train_time_s", 1, False))
_STEP_FIGURES = (("train_tflops_per_gpu", 1), ("train_mfu", 4))
"""A training row's figures of its step that plan gives (:func:`_step`): (name, decimals it is written with)."""
_CONTRACT_NAMES = tuple((contract, own, next(d for name, d, _ in _SERVING_FIGURES if name == own))
                        for contract, own in (("ttft_s", "prefill_s"), ("output_tokens_per_s", "decode_tokens_per_s_total")))
"""plan's contract's names of a serving result's figures: (plan's name, the sweep's, decimals)."""


class _BandKeys(dict[str, tuple[str, str, str]]):
    """``name_low``, ``name_high``, ``name_ceiling`` by figure name, each spelled once."""

    def __missing__(self, key: str) -> tuple[str, str, str]:
        keys = self[key] = (f"{key}_low", f"{key}_high", f"{key}_ceiling")
        return keys


_BAND_KEYS = _BandKeys()


def _engine(rec: Recommendation) -> str:
    """The serving engine the recommendation was sized for (vLLM for training and diffusion, which have none)."""
    return str(rec.workload.get("engine") or "vllm")


def evidence_lines(rec: Recommendation) -> list[str]:
    """Each shown GPU's evidence (how its own measured runs of the kind fell around the model, or that it has none),
    once per GPU and kind, in the order of the results."""
    out: list[str] = []
    for o in rec.results:
        section = _bands(o, o.config, rec.moe, rec.efficiencies, _engine(rec)).get("evidence")
        if section is not None and section["summary"] not in out:
            out.append(section["summary"])
    return out


def headline_band(rec: Recommendation, o: RecommendedOption) -> tuple[float | None, float | None, float | None]:
    """The band (low, high) and roofline ceiling of an option's headline speed (training tokens/s, else total output
    tokens/s), as its JSON gives them; ``None`` where it has none. With ``--mfu``/``--mbu`` the JSON's band is the
    prediction itself (low = high: no band), which the CLI does not print as one."""
    training = rec.task not in ("inference", "diffusion")
    name = "train_tokens_per_s" if training else "decode_tokens_per_s_total"
    keys = _bands(o, o.config, rec.moe, rec.efficiencies, _engine(rec))
    low, high, top = (keys.get(name + end) for end in ("_low", "_high", "_ceiling"))
    return low, high, top


_LEAVES = frozenset((str, int, float, bool, type(None)))  # exactly these types: kept as they are


def _jsonable(value: Any) -> Any:
    """Decimal -> exact string; containers recursively."""
    if type(value) in _LEAVES:  # most values: decided before the isinstance checks
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _copy(option: dict[str, Any]) -> dict[str, Any]:
    """An option's JSON and each dictionary and list in it, one level down (its layout, memory, evidence and
    warnings), copied: a caller that adds to a row (a recipe) or a section of it changes only that one."""
    return {key: value.copy() if type(value) in (dict, list) else value for key, value in option.items()}


def recommendation_to_json(rec: Recommendation) -> dict[str, Any]:
    """The ``anchorgpu recommend --json`` contract (money as exact decimal strings). An option both among the
    results and on the Pareto front is rendered once; the front gets its own copy (:func:`_copy`)."""
    moe, efficiencies, engine, step = rec.moe, rec.efficiencies, _engine(rec), rec.step_figures
    contexts: dict[tuple[Any, ...], tuple[Any, Any]] = {}
    rendered: dict[int, dict[str, Any]] = {}

    def option(o: RecommendedOption) -> dict[str, Any]:
        done = rendered.get(id(o))
        if done is not None:
            return _copy(done)
        done = rendered[id(o)] = _option_json(o, moe, efficiencies, engine, contexts, step)
        return done

    return {
        "model": rec.model, "workload": _jsonable(rec.workload), "term": str(rec.term), "term_hours": rec.term.hours,
        "evaluated": rec.evaluated,
        "results": [option(o) for o in rec.results],
        "pareto": [option(o) for o in rec.pareto],
        "rejected": [{"offering": r.offering, "servers": r.servers, "total_usd": _money(r.total_usd), "reason": r.reason}
                     for r in rec.rejected],
        "assumptions": list(rec.assumptions),
        "warnings": [{"code": code, "message": message} for code, message in rec.warnings],
        # serving: the per-user limits applied (null where not given) and the offerings each turned away; null for
        # training (the API's RecommendOut writes the key on every answer: the CLI's JSON is the same document)
        "limits": limits_json(rec.limits) if rec.task == "inference" else None,
    }
