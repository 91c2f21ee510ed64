"""The speed model's constants, read from ``data/calibration.json``. Pure; stdlib only.

Every efficiency, fixed cost and latency that changes an answer lives in that file beside the measurement
it came from: the *fitted* constants are written by ``python -m anchorgpu.planner.speed.calibrate``
(least squares on the logarithm of predicted / measured over the calibration rows of
``data/measured_runs.json``), the *stated* ones carry their source in the file. The values they are read into are
:mod:`~anchorgpu.planner.speed.constants` (:class:`~anchorgpu.planner.speed.constants.Calibration`).
"""

from __future__ import annotations

import json
from dataclasses import fields
from functools import lru_cache
from importlib import resources
from typing import Any

from anchorgpu.errors import DataFileError
from anchorgpu.planner.speed.constants import Band, Calibration, StackConstants
from anchorgpu.planner.speed.evidence import ENGINE_NAMES, EVIDENCE_KINDS, GpuEvidence, split_kind
from anchorgpu.planner.speed.launches import LayerLaunches
from anchorgpu.units import gbit_per_s_to_bytes_per_s

__all__ = [
    "CALIBRATION_FILE",
    "calibration",
    "parse_calibration",
    "read_calibration_doc",
]

CALIBRATION_FILE = "calibration.json"


def _number(doc: dict[str, Any], key: str, where: str) -> float:
    value = doc.get(key)
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise DataFileError(f"speed/data/{CALIBRATION_FILE}", where, f"{key} must be a non-negative number")
    return float(value)


MOE_UNFUSED_BYTES = ("fc2_bias_per_hidden", "fc2_bias_forward_per_hidden", "glu_clamp_per_intermediate",
                     "glu_clamp_forward_per_intermediate")
"""The counts of ``stated.moe_unfused_expert_bytes``: biased experts' fc2 bias and a clamped GLU, in all and forward."""

MOE_PERMUTATION_BYTES = ("routed_per_hidden", "routed_forward_per_hidden", "token_per_hidden", "token_forward_per_hidden",
                         "chunk_sort_per_hidden", "chunk_sort_forward_per_hidden")
"""The counts of ``stated.moe_permutation_bytes``: a routed copy's, the token's own row's and the local-expert chunk
sort's bytes a hidden value, in all and forward."""


def parse_calibration(doc: dict[str, Any]) -> Calibration:
    """Frozen constants from the parsed JSON (each stated constant may be ``{"value": x, "source": ...}``)."""
    names = [f.name for f in fields(StackConstants)]
    stacks = {name: StackConstants(**{k: _number(body, k, f"stacks.{name}") for k in names})
              for name, body in doc["stacks"].items()}
    stated = doc["stated"]
    bands = {phase: Band(low=_number(b, "low", f"bands.{phase}"), high=_number(b, "high", f"bands.{phase}"))
             for phase, b in doc["bands"].items()}
    return Calibration(
        version=int(doc["version"]), stacks=stacks,
        link_efficiency=_number(stated, "link_efficiency", "stated"),
        latency_s={k: _number(stated["latency_s"], k, "stated.latency_s") for k in ("scale-up", "pcie", "network")},
        overlap_exposed_fraction=_number(stated, "overlap_exposed_fraction", "stated"),
        ring_step_latency_s={k: _number(stated["ring_step_latency_s"]["value"], k, "stated.ring_step_latency_s")
                             for k in ("base", "scale-up", "pcie", "network")},
        optimizer_bytes_per_param=_number(stated, "optimizer_bytes_per_param", "stated"),
        host_memory_bytes_per_s={k: _number(stated["host_memory_gb_per_s_per_gpu"]["value"], k,
                                            "stated.host_memory_gb_per_s_per_gpu") * 1e9 for k in ("x86", "superchip")},
        host_s_per_sequence_step={k: _number(stated["host_s_per_sequence_step"]["value"], k,
                                             "stated.host_s_per_sequence_step") for k in ("x86", "superchip")},
        network_bytes_per_s=gbit_per_s_to_bytes_per_s(_number(stated, "network_gbit_per_s_per_gpu", "stated")),
        bands=bands, caveats={k: str(v) for k, v in doc.get("caveats", {}).items()},
        launches=_launches(stated), moe_tile_rows=_number(stated, "moe_tile_rows", "stated"),
        fa2_hopper_attention_efficiency=_number(stated, "fa2_hopper_attention_efficiency", "stated"),
        fused_attention_backward_ratio=_number(stated, "fused_attention_backward_ratio", "stated"),
        collective_ctas=_number(stated, "collective_ctas", "stated"),
        attention_head_dim_rate={cc: {int(d): _number(by_dim, d, f"stated.attention_head_dim_rate.{cc}") for d in by_dim}
                                 for cc, by_dim in stated["attention_head_dim_rate"]["value"].items()},
        train_attention_hopper_ratio={
            gpu: {int(d): _number(by_dim, d, f"stated.train_attention_hopper_ratio.{gpu}") for d in by_dim}
            for gpu, by_dim in stated["train_attention_hopper_ratio"]["value"].items()},
        train_attention_reference=str(stated["train_attention_hopper_ratio"]["reference"]),
        window_attention_extra_tokens=_number(stated, "window_attention_extra_tokens", "stated"),
        alltoall_link_efficiency=_keyed(stated, "alltoall_link_efficiency"),
        trtllm_moe_s_per_routed_row=_keyed(stated, "trtllm_moe_s_per_routed_row"),
        kernel_floor_ratio=_keyed(stated, "kernel_floor_ratio"),
        trtllm_gen_moe_expert_half_tokens=_keyed(stated, "trtllm_gen_moe_expert_half_tokens"),
        vllm_marlin_moe_peak_share=_keyed(stated, "vllm_marlin_moe_peak_share"),
        vllm_marlin_moe_expert_half_tokens=_keyed(stated, "vllm_marlin_moe_expert_half_tokens"),
        trtllm_decode_attention_kv_fraction=_keyed(stated, "trtllm_decode_attention_kv_fraction"),
        fp4_gemm_peak_share=_keyed(stated, "fp4_gemm_peak_share"),
        serve_gemm_peak_share={precision: {gpu: _number(by_gpu, gpu, f"stated.serve_gemm_peak_share.{precision}")
                                           for gpu in by_gpu}
                               for precision, by_gpu in stated["serve_gemm_peak_share"]["value"].items()},
        serve_gemm_reference=tuple(str(name) for name in stated["serve_gemm_peak_share"]["reference"]),
        trtllm_allreduce_latency_s=_keyed(stated, "trtllm_allreduce_latency_s"),
        trtllm_context_attention_peak_share=_keyed(stated, "trtllm_context_attention_peak_share"),
        trtllm_context_attention_extra_pairs=_keyed(stated, "trtllm_context_attention_extra_pairs"),
        ep_exchange_latency_s={gpu: {int(n): _number(by_size, n, f"stated.ep_exchange_latency_s.{gpu}") for n in by_size}
                               for gpu, by_size in stated["ep_exchange_latency_s"]["value"].items()},
        moe_unfused_expert_bytes={k: _number(stated["moe_unfused_expert_bytes"]["value"], k,
                                             "stated.moe_unfused_expert_bytes") for k in MOE_UNFUSED_BYTES},
        moe_permutation_bytes={k: _number(stated["moe_permutation_bytes"]["value"], k, "stated.moe_permutation_bytes")
                               for k in MOE_PERMUTATION_BYTES},
        provenance={k: v for k, v in doc.items()
                    if k not in ("stacks", "stated", "bands", "caveats", "evidence", "layout_margin",
                                 "training_layout_margin")},
        evidence=_evidence(doc.get("evidence", {})), layout_margin=_number(doc, "layout_margin", "layout_margin"),
        layout_margins=_layout_margins(doc.get("layout_margin")),
        training_layout_margin=_number(doc, "training_layout_margin", "training_layout_margin"),
    )


def _keyed(stated: dict[str, Any], name: str) -> dict[str, float]:
    """A stated constant given per key (a GPU's name, a backend): ``stated[name]["value"]``, each a number."""
    by_key = stated[name]["value"]
    return {k: _number(by_key, k, f"stated.{name}") for k in by_key}


def _layout_margins(entry: Any) -> dict[str, float]:
    """``layout_margin.by_link``: the margin in force per class of link (written by calibrate, a class with too few
    pairs already at the pooled value); empty where the entry has none."""
    by_link = entry.get("by_link", {}) if isinstance(entry, dict) else {}
    return {k: _number(v, "value", f"layout_margin.by_link.{k}") for k, v in by_link.items()}


def _evidence(doc: dict[str, Any]) -> dict[str, dict[str, GpuEvidence]]:
    """The ``evidence`` section: per GPU name, per kind of run, how its measured rows fell (written by calibrate)."""
    out: dict[str, dict[str, GpuEvidence]] = {}
    for gpu, kinds in doc.items():
        for kind, e in kinds.items():
            where = f"evidence.{gpu}.{kind}"
            base, engine = split_kind(kind)
            if base not in EVIDENCE_KINDS or (engine is not None and engine not in ENGINE_NAMES) \
                    or e.get("basis") not in ("held-out", "all"):
                raise DataFileError(f"speed/data/{CALIBRATION_FILE}", where,
                                    f"kind must be one of {', '.join(EVIDENCE_KINDS)} (with @ and one of "
                                    f"{', '.join(ENGINE_NAMES)} for one engine's rows) and basis held-out or all")
            rows, held = _number(e, "rows", where), _number(e, "held_out", where)
            ratios = [_number(e, k, where) for k in ("low", "median", "high")]
            if rows < 1 or held > rows or rows != int(rows) or held != int(held) or not 0 < ratios[0] <= ratios[1] <= ratios[2]:
                raise DataFileError(f"speed/data/{CALIBRATION_FILE}", where,
                                    "needs whole rows >= held_out and 0 < low <= median <= high")
            out.setdefault(gpu, {})[kind] = GpuEvidence(rows=int(rows), held_out=int(held), basis=e["basis"],
                                                        median=ratios[1], low=ratios[0], high=ratios[2])
    return out


def _launches(stated: dict[str, Any]) -> LayerLaunches:
    counts = stated["kernel_launches_per_layer"]["value"]
    names = [f.name for f in fields(LayerLaunches)]
    if set(counts) != set(names):
        raise DataFileError(f"speed/data/{CALIBRATION_FILE}", "stated.kernel_launches_per_layer",
                            f"needs exactly {', '.join(names)}")
    values = {name: _number(counts, name, "stated.kernel_launches_per_layer") for name in names}
    if any(v < 1 or v != int(v) for v in values.values()):
        raise DataFileError(f"speed/data/{CALIBRATION_FILE}", "stated.kernel_launches_per_layer",
                            "each count must be a whole number of at least 1")
    return LayerLaunches(**{name: int(v) for name, v in values.items()})


def read_calibration_doc() -> dict[str, Any]:
    text = resources.files("anchorgpu.planner.speed").joinpath("data", CALIBRATION_FILE).read_text("utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


@lru_cache(maxsize=1)
def calibration() -> Calibration:
    """The shipped calibration (read once per process)."""
    try:
        return parse_calibration(read_calibration_doc())
    except (KeyError, TypeError, ValueError) as exc:
        raise DataFileError(f"speed/data/{CALIBRATION_FILE}", "-", f"malformed ({type(exc).__name__}: {exc})") from None
