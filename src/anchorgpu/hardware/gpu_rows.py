"""One ``[[gpu]]`` table of ``gpus.toml`` read into a :class:`~anchorgpu.hardware.spec.GpuSpec`: every field typed
and checked, peaks in TFLOP/s to FLOP/s, memory and bandwidths to bytes, uncertain figures ("N?") marked, the
indicative price. Pure; stdlib only.

Every problem raises :class:`~anchorgpu.errors.DataFileError` naming the file and the row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, cast

from anchorgpu.errors import DataFileError
from anchorgpu.hardware.spec import PRECISIONS, GpuSpec, Peak
from anchorgpu.units import GB, GIB, MIB

__all__ = ["PEAK_KEYS", "SOURCES_FILE", "TERA", "Row", "gpu_from_row"]

SOURCES_FILE = "sources.toml"
TERA = 10**12
PEAK_KEYS: tuple[str, ...] = ("fp64_vector", "fp64_tensor", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
"""Keys every ``[gpu.peaks_tflops]`` table must have (``fp64`` is derived from the two FP64 keys)."""

_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "display_name": str,
    "aliases": list,
    "vendor": str,
    "architecture": str,
    "form_factor": str,
    "memory_headline": str,
    "memory_physical": (int, float),
    "memory_usable": (int, float),
    "memory_unit": str,
    "memory_type": str,
    "memory_bandwidth_tb_per_s": (int, float),
    "fp8_hardware": bool,
    "fp4_hardware": bool,
    "fp4_formats": list,
    "interconnect": str,
    "scaleup_domain_gpus": int,
    "pcie_gen": str,
    "partitioning": str,
    "sources": list,
    "notes": str,
    "peaks_tflops": dict,
}

_OPTIONAL = frozenset(
    {
        "interconnect_bandwidth_gb_per_s",
        "tdp_w",
        "pcie_bandwidth_gb_per_s",
        "compute_capability",
        "rocm_gfx_target",
        "indicative_price_usd_per_gpu_hour",
        "indicative_price_observed",
        "sm_count",
        "memory_runtime_bytes",
        "memory_runtime_sources",
        "memory_smi_mib",
        "memory_smi_sources",
        "training_stacks",
        "training_sources",
        "devices_per_package",
    }
)

_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

_UNCERTAIN_NUMBER_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*\?\s*$")


class Row:
    """Reads typed fields out of one ``[[gpu]]`` table, raising DataFileError that names file and row."""

    def __init__(self, file: str, index: int, table: Mapping[str, Any]) -> None:
        self.file = file
        self.table = table
        name = table.get("name")
        self.row = f"{index} ({name})" if isinstance(name, str) and name else str(index)
        self.uncertain: list[str] = []

    def fail(self, reason: str) -> DataFileError:
        return DataFileError(self.file, self.row, reason)

    def text(self, key: str, *, allow_uncertain: bool = False) -> str:
        value = self.table[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{key} must be a non-empty string, got {value!r}")
        value = value.strip()
        if allow_uncertain and value.endswith("?"):
            self.uncertain.append(key)
            value = value[:-1].rstrip()
        return value

    def optional_text(self, key: str) -> str | None:
        if key not in self.table:
            return None
        return self.text(key, allow_uncertain=True)

    def number(self, key: str, value: object) -> tuple[float, bool]:
        """A positive number, or a string "N?" (uncertain). Returns (value, uncertain)."""
        uncertain = False
        if isinstance(value, str):
            match = _UNCERTAIN_NUMBER_RE.match(value)
            if match is None:
                raise self.fail(f"{key} must be a number or a string like '12.5?', got {value!r}")
            value, uncertain = float(match.group(1)), True
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"{key} must be a number, got {value!r}")
        if value != value or value in (float("inf"), float("-inf")) or value <= 0:
            raise self.fail(f"{key} must be a positive number, got {value!r}")
        return float(value), uncertain

    def field_number(self, key: str) -> float:
        value, uncertain = self.number(key, self.table[key])
        if uncertain:
            self.uncertain.append(key)
        return value

    def optional_number(self, key: str) -> float | None:
        return self.field_number(key) if key in self.table else None

    def string_list(self, key: str) -> tuple[str, ...]:
        value = self.table[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(f"{key} must be a list of non-empty strings, got {value!r}")
        return tuple(v.strip() for v in value)


def _peak(row: Row, key: str, value: object) -> Peak:
    label = f"peaks_tflops.{key}"
    if value == "absent":
        return Peak(status="absent")
    if value == "unknown":
        return Peak(status="unknown")
    if isinstance(value, str) and _UNCERTAIN_NUMBER_RE.match(value) is None:
        raise row.fail(f"{label} must be a number, 'N?', 'absent' or 'unknown', got {value!r}")
    tflops, uncertain = row.number(label, value)
    return Peak(status="known", flops_per_s=tflops * TERA, uncertain=uncertain)


def _fp64(vector: Peak, tensor: Peak) -> Peak:
    """FP64 headline: the tensor/matrix figure when known, else the vector figure, else absent/unknown."""
    for candidate in (tensor, vector):
        if candidate.status == "known":
            return candidate
    if vector.status == "absent" and tensor.status == "absent":
        return Peak(status="absent")
    return Peak(status="unknown")


def _peaks(row: Row) -> dict[str, Peak]:
    table = row.table["peaks_tflops"]
    missing = [k for k in PEAK_KEYS if k not in table]
    if missing:
        raise row.fail(f"peaks_tflops is missing {', '.join(missing)} (write 'unknown' when no source gives it)")
    extra = sorted(set(table) - set(PEAK_KEYS))
    if extra:
        raise row.fail(f"peaks_tflops has unknown keys {', '.join(extra)}; allowed: {', '.join(PEAK_KEYS)}")
    detail = {key: _peak(row, key, table[key]) for key in PEAK_KEYS}
    peaks: dict[str, Peak] = {}
    for precision in PRECISIONS:
        peaks[precision] = _fp64(detail["fp64_vector"], detail["fp64_tensor"]) if precision == "fp64" else detail[precision]
    peaks["fp64_vector"] = detail["fp64_vector"]
    peaks["fp64_tensor"] = detail["fp64_tensor"]
    return peaks


def _memory_bytes(row: Row, key: str, unit: str) -> int:
    amount = row.field_number(key)
    return round(amount * (GIB if unit == "GiB" else GB))


def _sourced_count(row: Row, key: str, sources_key: str, unit: str, where: str) -> tuple[int | None, tuple[str, ...]]:
    """A positive whole number ``key`` (in ``unit``) and the places ``sources_key`` names it was reported: both or
    neither; (None, ()) when neither is given."""
    table = row.table
    if (key in table) != (sources_key in table):
        raise row.fail(f"{key} and {sources_key} go together")
    if key not in table:
        return None, ()
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise row.fail(f"{key} must be a positive whole number of {unit}, got {value!r}")
    sources = row.string_list(sources_key)
    if not sources:
        raise row.fail(f"{sources_key} must name where {where} was reported")
    return value, sources


def _runtime_memory(row: Row, usable_bytes: int) -> tuple[int | None, tuple[str, ...]]:
    """``memory_runtime_bytes``: the total the CUDA/ROCm runtime reports (a whole number of bytes, at most the usable
    figure), and ``memory_runtime_sources``, where it was reported; both or neither."""
    value, sources = _sourced_count(row, "memory_runtime_bytes", "memory_runtime_sources", "bytes", "the runtime total")
    if value is not None and value > usable_bytes:
        raise row.fail("memory_runtime_bytes is larger than memory_usable")
    return value, sources


def _smi_memory(row: Row, physical_bytes: int, runtime_bytes: int | None) -> tuple[int | None, tuple[str, ...]]:
    """``memory_smi_mib``: the total the vendor's management tool reports, in MiB (``nvidia-smi --query-gpu=memory.total``;
    on AMD rocminfo's GPU memory pool), a whole number of MiB between the runtime total (where given) and the physical
    memory, and ``memory_smi_sources``, where it was reported; both or neither."""
    value, sources = _sourced_count(row, "memory_smi_mib", "memory_smi_sources", "MiB", "the tool's total")
    if value is not None and value * MIB > physical_bytes:
        raise row.fail("memory_smi_mib is larger than memory_physical")
    if value is not None and runtime_bytes is not None and value * MIB < runtime_bytes:
        raise row.fail("memory_smi_mib is smaller than memory_runtime_bytes (the tool's total includes what the runtime "
                       "keeps back)")
    return value, sources


def _price(row: Row) -> tuple[tuple[Decimal, Decimal] | None, str]:
    key = "indicative_price_usd_per_gpu_hour"
    if key not in row.table:
        if "indicative_price_observed" in row.table:
            raise row.fail("indicative_price_observed is given without indicative_price_usd_per_gpu_hour")
        return None, ""
    value = row.table[key]
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, str) for v in value):
        raise row.fail(f"{key} must be a list of two strings [low, high] (exact decimals), got {value!r}")
    amounts: list[Decimal] = []
    for text in value:
        stripped = text.strip()
        if stripped.endswith("?"):
            stripped = stripped[:-1].rstrip()
            if key not in row.uncertain:
                row.uncertain.append(key)
        try:
            amount = Decimal(stripped)
        except InvalidOperation:
            raise row.fail(f"{key} must hold decimal USD amounts, got {text!r}") from None
        if not amount.is_finite() or amount <= 0:
            raise row.fail(f"{key} must hold positive USD amounts, got {text!r}")
        amounts.append(amount)
    if amounts[0] > amounts[1]:
        raise row.fail(f"{key} low {amounts[0]} is above high {amounts[1]}")
    observed = row.text("indicative_price_observed") if "indicative_price_observed" in row.table else ""
    return (amounts[0], amounts[1]), observed


def gpu_from_row(row: Row, known_sources: frozenset[str]) -> GpuSpec:
    table = row.table
    for key, kinds in _REQUIRED.items():
        if key not in table:
            raise row.fail(f"missing required field {key!r}")
        value = table[key]
        numeric = kinds == (int, float) or kinds is int
        if numeric and isinstance(value, bool):
            raise row.fail(f"{key} must be a number, got {value!r}")
        if not isinstance(value, kinds) and not (kinds == (int, float) and isinstance(value, str)):
            # numbers may be written "N?" (uncertain); number() checks those strings
            raise row.fail(f"{key} has the wrong type ({type(value).__name__}): {value!r}")
    extra = sorted(set(table) - set(_REQUIRED) - _OPTIONAL)
    if extra:
        raise row.fail(f"unknown field(s) {', '.join(extra)}")

    name = row.text("name")
    if _NAME_RE.match(name) is None:
        raise row.fail(f"name {name!r} must be lower-case letters and digits separated by single hyphens")
    vendor = row.text("vendor")
    if vendor not in ("NVIDIA", "AMD"):
        raise row.fail(f"vendor must be 'NVIDIA' or 'AMD', got {vendor!r}")
    unit = row.text("memory_unit")
    if unit not in ("GB", "GiB"):
        raise row.fail(f"memory_unit must be 'GB' or 'GiB', got {unit!r}")
    usable_bytes = _memory_bytes(row, "memory_usable", unit)
    physical_bytes = _memory_bytes(row, "memory_physical", unit)
    if usable_bytes > physical_bytes:
        raise row.fail("memory_usable is larger than memory_physical")
    runtime_bytes, runtime_sources = _runtime_memory(row, usable_bytes)
    smi_mib, smi_sources = _smi_memory(row, physical_bytes, runtime_bytes)

    peaks = _peaks(row)
    fp8_hardware = bool(table["fp8_hardware"])
    fp4_hardware = bool(table["fp4_hardware"])
    for precision, has in (("fp8", fp8_hardware), ("fp4", fp4_hardware)):
        absent = peaks[precision].status == "absent"
        if has and absent:
            raise row.fail(f"{precision}_hardware is true but peaks_tflops.{precision} is 'absent'")
        if not has and not absent:
            raise row.fail(f"{precision}_hardware is false, so peaks_tflops.{precision} must be 'absent'")
    fp4_formats = row.string_list("fp4_formats")
    if fp4_hardware != bool(fp4_formats):
        raise row.fail("fp4_formats must list the FP4 formats exactly when fp4_hardware is true")

    training_stacks, training_sources = _training(row, {"fp8": fp8_hardware, "fp4": fp4_hardware}, known_sources)

    compute_capability = row.optional_text("compute_capability")
    rocm_gfx_target = row.optional_text("rocm_gfx_target")
    if vendor == "NVIDIA" and (compute_capability is None or rocm_gfx_target is not None):
        raise row.fail("an NVIDIA GPU needs compute_capability and no rocm_gfx_target")
    if vendor == "AMD" and (rocm_gfx_target is None or compute_capability is not None):
        raise row.fail("an AMD GPU needs rocm_gfx_target and no compute_capability")
    if compute_capability is not None and re.fullmatch(r"\d+\.\d+", compute_capability) is None:
        raise row.fail(f"compute_capability must look like '9.0', got {compute_capability!r}")
    if rocm_gfx_target is not None and re.fullmatch(r"gfx[0-9a-f]+", rocm_gfx_target) is None:
        raise row.fail(f"rocm_gfx_target must look like 'gfx942', got {rocm_gfx_target!r}")

    sources = row.string_list("sources")
    if not sources:
        raise row.fail("sources must name at least one source")
    unknown_sources = [s for s in sources if s not in known_sources]
    if unknown_sources:
        raise row.fail(f"unknown source key(s) {', '.join(unknown_sources)} (not in {SOURCES_FILE})")

    tdp = row.optional_number("tdp_w")
    if tdp is not None and tdp != int(tdp):
        raise row.fail(f"tdp_w must be whole watts, got {tdp}")
    interconnect_bw = row.optional_number("interconnect_bandwidth_gb_per_s")
    pcie_bw = row.optional_number("pcie_bandwidth_gb_per_s")
    scaleup = cast(int, table["scaleup_domain_gpus"])
    if scaleup < 1:
        raise row.fail(f"scaleup_domain_gpus must be at least 1, got {scaleup}")
    price, observed = _price(row)
    sm_count = row.optional_number("sm_count")
    if sm_count is not None and sm_count != int(sm_count):
        raise row.fail(f"sm_count must be a whole number, got {sm_count}")
    bandwidth = row.field_number("memory_bandwidth_tb_per_s")
    devices = row.optional_number("devices_per_package")
    if devices is not None and (devices != int(devices) or devices < 1):
        raise row.fail(f"devices_per_package must be a whole number of at least 1, got {devices}")

    return GpuSpec(
        name=name,
        display_name=row.text("display_name"),
        aliases=row.string_list("aliases"),
        vendor=cast(Literal["NVIDIA", "AMD"], vendor),
        architecture=row.text("architecture"),
        form_factor=row.text("form_factor"),
        memory_bytes=usable_bytes if runtime_bytes is None else runtime_bytes,
        memory_nominal_bytes=None if runtime_bytes is None else usable_bytes,
        memory_runtime_sources=runtime_sources,
        memory_smi_mib=smi_mib,
        memory_smi_sources=smi_sources,
        memory_physical_bytes=physical_bytes,
        memory_headline=row.text("memory_headline"),
        memory_unit=cast(Literal["GB", "GiB"], unit),
        memory_type=row.text("memory_type"),
        memory_bandwidth_bytes_per_s=bandwidth * TERA,
        peaks=peaks,
        fp8_hardware=fp8_hardware,
        fp4_hardware=fp4_hardware,
        fp4_formats=fp4_formats,
        interconnect=row.text("interconnect"),
        interconnect_bandwidth_bytes_per_s=None if interconnect_bw is None else interconnect_bw * GB,
        scaleup_domain_gpus=scaleup,
        pcie_gen=row.text("pcie_gen", allow_uncertain=True),
        pcie_bandwidth_bytes_per_s=None if pcie_bw is None else pcie_bw * GB,
        tdp_w=None if tdp is None else int(tdp),
        compute_capability=compute_capability,
        rocm_gfx_target=rocm_gfx_target,
        partitioning=row.text("partitioning"),
        sources=sources,
        notes=str(table["notes"]).strip(),
        uncertain_fields=tuple(row.uncertain),
        indicative_price_usd_per_gpu_hour=price,
        indicative_price_observed=observed,
        sm_count=None if sm_count is None else int(sm_count),
        training_stacks=training_stacks,
        devices_per_package=1 if devices is None else int(devices),
        training_sources=training_sources,
    )


def _training(row: Row, units: Mapping[str, bool],
              known_sources: frozenset[str]) -> tuple[dict[str, str | None], tuple[str, ...]]:
    """``training_stacks`` (a framework's name, or false where none trains in that precision) for exactly the
    low-precision units the GPU has, and the ``training_sources`` keys behind them."""
    if "training_stacks" not in row.table and "training_sources" not in row.table:
        return {}, ()  # unrecorded: training follows the hardware flags (the shipped rows all record it)
    stacks = row.table.get("training_stacks", {})
    if not isinstance(stacks, Mapping):
        raise row.fail(f"training_stacks must be a table like {{ fp8 = 'Transformer Engine' }}, got {stacks!r}")
    has = sorted(p for p, present in units.items() if present)
    if sorted(stacks) != has:
        raise row.fail(f"training_stacks must list exactly the low-precision units the GPU has ({', '.join(has) or 'none'}), "
                       f"got {', '.join(sorted(stacks)) or 'none'}")
    out: dict[str, str | None] = {}
    for precision, stack in stacks.items():
        if stack is False:
            out[precision] = None
        elif isinstance(stack, str) and stack.strip():
            out[precision] = stack.strip()
        else:
            raise row.fail(f"training_stacks.{precision} must name a framework or be false, got {stack!r}")
    sources = row.string_list("training_sources") if "training_sources" in row.table else ()
    if bool(out) != bool(sources):
        raise row.fail("training_sources must name the sources of training_stacks exactly when it is given")
    unknown = [s for s in sources if s not in known_sources]
    if unknown:
        raise row.fail(f"unknown source key(s) {', '.join(unknown)} in training_sources (not in {SOURCES_FILE})")
    return out, sources
