"""Read and validate the GPU data files (``data/gpus.toml``, ``data/sources.toml``). Pure; stdlib only.

Every problem raises :class:`~anchorgpu.errors.DataFileError` naming the file and the row: rows are the
1-based index of the ``[[gpu]]`` table plus its ``name`` when it has one, e.g.
``gpus.toml, row 3 (h100-pcie): memory_bandwidth_tb_per_s must be a positive number, got -2``.

The loaders take the file's text (and a file name for messages), so tests can feed them broken data;
:func:`load_shipped_gpus` reads the files shipped inside the package through ``importlib.resources``.

Units: peaks are written in TFLOP/s and stored in FLOP/s (x 1e12); memory bandwidth TB/s -> bytes/s
(x 1e12); link bandwidths GB/s -> bytes/s (x 1e9); memory in GiB -> bytes (x 2**30) or GB (x 1e9). One row's fields
are read and checked in :mod:`~anchorgpu.hardware.gpu_rows`; this module reads the files and checks across rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from anchorgpu import _snapshot
from anchorgpu.errors import DataFileError
from anchorgpu.hardware.gpu_rows import PEAK_KEYS, SOURCES_FILE, Row, gpu_from_row
from anchorgpu.hardware.spec import GpuSpec

__all__ = [
    "GPUS_FILE",
    "PEAK_KEYS",
    "SOURCES_FILE",
    "data_version",
    "load_shipped_data_version",
    "load_shipped_gpus",
    "load_shipped_sources",
    "normalize_name",
    "parse_gpus",
    "parse_sources",
]

GPUS_FILE = "gpus.toml"
SUPPORTED_SCHEMA = 1

_VENDOR_PREFIXES = ("nvidia", "amd", "geforce", "instinct")


def normalize_name(name: str) -> str:
    """The lookup key of a GPU name: lower case, only letters and digits.

    >>> normalize_name("H100-SXM5 80GB")
    'h100sxm580gb'
    >>> normalize_name("  rtx_pro 6000 ")
    'rtxpro6000'
    """
    return "".join(ch for ch in name.lower() if ch.isalnum())


def strip_vendor(key: str) -> str:
    """A normalized key without a leading vendor/brand word ("nvidia", "amd", "geforce", "instinct").

    >>> strip_vendor("nvidiageforcertx4090")
    'rtx4090'
    """
    changed = True
    while changed:
        changed = False
        for prefix in _VENDOR_PREFIXES:
            if key.startswith(prefix) and len(key) > len(prefix):
                key = key[len(prefix) :]
                changed = True
    return key


def _parse_toml(text: str, file: str, snapshot: str | None = None) -> dict[str, Any]:
    try:
        data = _snapshot.loads(text, snapshot)
    except ValueError as exc:  # tomllib.TOMLDecodeError (imported only when the TOML is really parsed)
        raise DataFileError(file, "?", f"not valid TOML: {exc}") from None
    schema = data.get("schema_version")
    if schema != SUPPORTED_SCHEMA:
        raise DataFileError(file, "header", f"schema_version must be {SUPPORTED_SCHEMA}, got {schema!r}")
    return data


def parse_sources(text: str, *, file: str = SOURCES_FILE, snapshot: str | None = None) -> dict[str, str]:
    """Source key -> description from the text of a ``sources.toml``.

    >>> parse_sources('schema_version = 1\\n[sources]\\nS1 = "a datasheet"\\n')
    {'S1': 'a datasheet'}
    """
    table = _parse_toml(text, file, snapshot).get("sources")
    if not isinstance(table, dict) or not table:
        raise DataFileError(file, "[sources]", "a non-empty [sources] table is required")
    result: dict[str, str] = {}
    for key, value in table.items():
        if re.fullmatch(r"[SP]\d+", key) is None:
            raise DataFileError(file, key, "source keys are S<n> (specification) or P<n> (price)")
        if not isinstance(value, str) or not value.strip():
            raise DataFileError(file, key, "the description must be a non-empty string")
        result[key] = value.strip()
    return result


def parse_gpus(
    text: str, *, file: str = GPUS_FILE, sources: Mapping[str, str] | None = None, snapshot: str | None = None
) -> tuple[GpuSpec, ...]:
    """Every GPU in the text of a ``gpus.toml``, validated; ``sources`` are the known source keys.

    Also checks across rows: unique names, and no alias (after :func:`normalize_name`) naming two GPUs.
    ``snapshot`` is the parsed form shipped beside the file (see ``_snapshot``), used only if made from ``text``.
    """
    data = _parse_toml(text, file, snapshot)
    rows = data.get("gpu")
    if not isinstance(rows, list) or not rows:
        raise DataFileError(file, "header", "no [[gpu]] tables found")
    known = frozenset(sources if sources is not None else load_shipped_sources())
    gpus: list[GpuSpec] = []
    owner: dict[str, str] = {}
    for index, table in enumerate(rows, start=1):
        row = Row(file, index, table)
        gpu = gpu_from_row(row, known)
        for label in (gpu.name, gpu.display_name, *gpu.aliases):
            key = normalize_name(label)
            if not key:
                raise row.fail(f"alias {label!r} has no letters or digits")
            if owner.get(key, gpu.name) != gpu.name:
                raise row.fail(f"name or alias {label!r} already names GPU {owner[key]!r}")
            owner[key] = gpu.name
        gpus.append(gpu)
    return tuple(gpus)


_PACKAGE = "anchorgpu.hardware"


def _read_shipped(file: str) -> str:
    return resources.files(_PACKAGE).joinpath("data", file).read_text(encoding="utf-8")


def load_shipped_sources() -> dict[str, str]:
    """The source table shipped with AnchorGPU (``anchorgpu/hardware/data/sources.toml``)."""
    return parse_sources(_read_shipped(SOURCES_FILE), file=SOURCES_FILE, snapshot=_snapshot.read_snapshot(_PACKAGE, SOURCES_FILE))


def data_version(text: str, *, file: str = GPUS_FILE, snapshot: str | None = None) -> str:
    """The ``data_version`` header of a ``gpus.toml`` text (when the data was last revised).

    >>> data_version("schema_version = 1\\ndata_version = '2026-11-29'\\n")
    '2026-11-29'
    """
    value = _parse_toml(text, file, snapshot).get("data_version")
    if not isinstance(value, str) or not value.strip():
        raise DataFileError(file, "header", "data_version must be a non-empty string")
    return value.strip()


def load_shipped_data_version() -> str:
    """``data_version`` of the shipped ``gpus.toml``."""
    return data_version(_read_shipped(GPUS_FILE), snapshot=_snapshot.read_snapshot(_PACKAGE, GPUS_FILE))


def load_shipped_gpus() -> tuple[GpuSpec, ...]:
    """Every GPU shipped with AnchorGPU (``anchorgpu/hardware/data/gpus.toml``), validated."""
    return parse_gpus(_read_shipped(GPUS_FILE), file=GPUS_FILE, sources=load_shipped_sources(),
                      snapshot=_snapshot.read_snapshot(_PACKAGE, GPUS_FILE))
