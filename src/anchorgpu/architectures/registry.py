"""The built-in model registry: ``data/registry.toml`` maps names and aliases to shipped files.

Each ``[models.NAME]`` row points at a real Hugging Face ``config.json`` under ``data/models/``, or names another
row as its ``base`` and a shipped ModelOpt quantization file as its ``quant_config`` (a checkpoint NVIDIA re-exported
from that model: the base's architecture, the file's layout); each ``[pipelines.NAME]`` row at a diffusion pipeline
description under ``data/diffusion/``. Rows carry only facts: display name, family, the Hub id the file was published
under, aliases.
Read with ``importlib.resources``; a bad row raises :class:`DataFileError` naming file and row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from anchorgpu import _snapshot
from anchorgpu.errors import DataFileError, UnknownModel, did_you_mean

__all__ = ["REGISTRY_FILE", "ModelInfo", "asked_checkpoint", "list_models", "model_info", "model_infos", "read_data_text",
           "resolve"]

REGISTRY_FILE = "architectures/data/registry.toml"
_DATA = "anchorgpu.architectures"

Kind = Literal["llm", "diffusion"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    """One registry row."""

    name: str  # canonical, lower-case (``llama-3.1-70b``)
    kind: Kind
    display_name: str
    family: str
    file: str  # path under ``architectures/data/``
    hub_id: str  # the repository the config was published in ("" if none)
    aliases: tuple[str, ...]
    # The weight format the checkpoint ships in, only where its config.json cannot say (no quantization_config);
    # "" = read it from the config (quantization_config, else 16-bit).
    shipped_weights: str = ""
    # A quantized checkpoint of another row: that row's name (its config is ``file``) and the shipped ModelOpt
    # ``hf_quant_config.json`` under ``architectures/data/`` that says the checkpoint's layout; "" for a plain row.
    base: str = ""
    quant_config: str = ""

    @property
    def source(self) -> str:
        origin = f" (as published in {self.hub_id})" if self.hub_id else ""
        files = f"{self.file} + {self.quant_config}" if self.quant_config else self.file
        return f"registry:{self.name} [{files}]{origin}"


def read_data_text(relative: str) -> str:
    """Text of a packaged data file under ``architectures/data/``."""
    from importlib import resources  # imported here: a config.json given by path reads no packaged data

    return resources.files(_DATA).joinpath("data", *relative.split("/")).read_text(encoding="utf-8")


def _str(row: dict[str, object], key: str, name: str, *, required: bool = True) -> str:
    value = row.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value):
        raise DataFileError(REGISTRY_FILE, name, f"field {key!r} must be a non-empty string")
    return value


def _parse(doc: dict[str, object]) -> tuple[ModelInfo, ...]:
    if doc.get("schema_version") != 1:
        raise DataFileError(REGISTRY_FILE, "schema_version", "must be 1")
    infos: list[ModelInfo] = []
    for table, kind in (("models", "llm"), ("pipelines", "diffusion")):
        rows = doc.get(table, {})
        if not isinstance(rows, dict):
            raise DataFileError(REGISTRY_FILE, table, "must be a table of rows")
        for name, row in rows.items():
            if not isinstance(row, dict):
                raise DataFileError(REGISTRY_FILE, name, "must be a table")
            if name != name.lower():
                raise DataFileError(REGISTRY_FILE, name, "names are lower-case")
            aliases = row.get("aliases", [])
            if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
                raise DataFileError(REGISTRY_FILE, name, "field 'aliases' must be a list of non-empty strings")
            base, quant_config = _quantized_of(row, name, kind)
            infos.append(
                ModelInfo(
                    name=name,
                    kind="llm" if kind == "llm" else "diffusion",
                    display_name=_str(row, "display_name", name),
                    family=_str(row, "family", name),
                    file="" if base else _str(row, "file", name),  # a quantized checkpoint: its base's file, below
                    hub_id=_str(row, "hub_id", name, required=False),
                    aliases=tuple(aliases),
                    shipped_weights=_str(row, "shipped_weights", name, required=False),
                    base=base,
                    quant_config=quant_config,
                )
            )
    return tuple(_with_base_files(infos))


QUANT_CONFIG_PREFIX = "quant_configs/"


def _quantized_of(row: dict[str, object], name: str, kind: str) -> tuple[str, str]:
    """A row's ``base`` and ``quant_config`` (both, or neither)."""
    base = _str(row, "base", name, required=False)
    quant_config = _str(row, "quant_config", name, required=False)
    if not base and not quant_config:
        return "", ""
    if kind != "llm" or not base or not quant_config:
        raise DataFileError(REGISTRY_FILE, name, "fields 'base' and 'quant_config' go together, on a [models] row "
                            "(a quantized checkpoint of another registry language model)")
    if "file" in row or "shipped_weights" in row:
        raise DataFileError(REGISTRY_FILE, name, "a row with 'base' reads that row's config: give no 'file' or "
                            "'shipped_weights'")
    if not quant_config.startswith(QUANT_CONFIG_PREFIX) or not quant_config.endswith(".json") or ".." in quant_config:
        raise DataFileError(REGISTRY_FILE, name, f"field 'quant_config' must name a .json file under "
                            f"{QUANT_CONFIG_PREFIX}, got {quant_config!r}")
    return base.lower(), quant_config


def _with_base_files(infos: list[ModelInfo]) -> list[ModelInfo]:
    """Rows with a ``base`` given that base's config file; the base must be a plain language-model row."""
    plain = {i.name: i for i in infos if not i.base}
    out: list[ModelInfo] = []
    for info in infos:
        if info.base:
            base = plain.get(info.base)
            if base is None or base.kind != "llm":
                raise DataFileError(REGISTRY_FILE, info.name, f"field 'base' must name a [models] row with its own "
                                    f"'file', got {info.base!r}")
            info = replace(info, file=base.file)
        out.append(info)
    return out


@cache
def model_infos() -> tuple[ModelInfo, ...]:
    """Every registry row, in file order (read once, on first use)."""
    try:  # the shipped parsed snapshot when it matches the file, else the TOML parser (see ``_snapshot``)
        doc = _snapshot.loads(read_data_text("registry.toml"), _snapshot.read_snapshot("anchorgpu.architectures", "registry.toml"))
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise DataFileError(REGISTRY_FILE, "?", f"not valid TOML: {exc}") from None
    infos = _parse(doc)
    _index(infos)  # validates that no two rows claim the same name or alias
    return infos


def _index(infos: tuple[ModelInfo, ...]) -> dict[str, ModelInfo]:
    index: dict[str, ModelInfo] = {}
    for info in infos:
        keys = {info.name, *(a.lower() for a in info.aliases)}
        if info.hub_id:
            keys.add(info.hub_id.lower())
        for key in keys:
            other = index.get(key)
            if other is not None and other is not info:
                raise DataFileError(REGISTRY_FILE, info.name, f"name or alias {key!r} is also used by {other.name!r}")
            index[key] = info
    return index


@cache
def _lookup() -> dict[str, ModelInfo]:
    return _index(model_infos())


def resolve(ref: str) -> ModelInfo | None:
    """The registry row for a name, alias or Hub id (case-insensitive), or ``None``."""
    return _lookup().get(ref.strip().lower())


def asked_checkpoint(ref: str, info: ModelInfo) -> str | None:
    """The Hub id of another checkpoint of ``info``'s architecture that ``ref`` names, as the row's aliases spell it:
    a Hub-id alias asked for (``meta-llama/Llama-3.1-8B-Instruct`` of the ``llama-3.1-8b`` row, published from
    ``meta-llama/Llama-3.1-8B``), or a short alias that is such an alias's repository name (``llama-3.1-8b-instruct``);
    ``None`` where ``ref`` is the row itself (its name, its Hub id, an alias naming no other repository). A launch
    recipe serves this checkpoint: the same shapes, other weights (an instruct model, not its base).

    >>> info = resolve("llama-3.1-8b")
    >>> asked_checkpoint("llama-3.1-8b-instruct", info), asked_checkpoint("META-LLAMA/llama-3.1-8b-instruct", info)
    ('meta-llama/Llama-3.1-8B-Instruct', 'meta-llama/Llama-3.1-8B-Instruct')
    >>> asked_checkpoint("llama-3.1-8b", info), asked_checkpoint("meta-llama/Llama-3.1-8B", info), asked_checkpoint("llama3.1-8b", info)
    (None, None, None)
    """
    key = ref.strip().lower()
    for alias in info.aliases:
        if "/" in alias and alias.lower() != info.hub_id.lower() and key in (alias.lower(), alias.split("/")[1].lower()):
            return alias
    return None


def model_info(ref: str) -> ModelInfo:
    """Like :func:`resolve` but raises :class:`UnknownModel` with "did you mean" suggestions."""
    info = resolve(ref)
    if info is None:
        raise UnknownModel(ref, did_you_mean(ref, list_models()))
    return info


def list_models() -> tuple[str, ...]:
    """Canonical names of every registry entry (language models and diffusion pipelines), sorted."""
    return tuple(sorted(info.name for info in model_infos()))
