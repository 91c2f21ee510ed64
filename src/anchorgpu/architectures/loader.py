"""``load_model(ref)``: a registry name, a path to ``config.json`` (or its folder), or a Hub id.

Order of resolution: registry names and aliases (including the Hub ids of registry models, so they
work offline) → an existing file or folder → ``org/name`` fetched from the Hugging Face Hub with
``huggingface_hub`` (imported only then) → :class:`UnknownModel` with "did you mean" suggestions.
Offline (``offline=True``, ``ANCHORGPU_OFFLINE=1`` or ``HF_HUB_OFFLINE=1``) a Hub id fails at once with
:class:`HubUnavailable`, without calling the fetch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from anchorgpu.architectures._modelopt import modelopt_quantization_config
from anchorgpu.architectures.hf import from_hf_config, parse_config_text
from anchorgpu.architectures.quantization import shipped_from_name
from anchorgpu.architectures.registry import (
    REGISTRY_FILE,
    ModelInfo,
    asked_checkpoint,
    list_models,
    read_data_text,
    resolve,
)
from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import DataFileError, HubUnavailable, InvalidConfig, InvalidInput, UnknownModel, did_you_mean

__all__ = ["HUB_ID", "MAX_CONFIG_BYTES", "QUANT_CONFIGS_DIR", "Fetch", "load_config_file", "load_model",
           "load_registry_model", "load_with_hf_quant_config", "read_config_text"]

# A Hub repository id: "org/name" with the characters the Hub allows.
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")

Fetch = Callable[[str], str]
"""Downloads ``config.json`` of a Hub repository and returns the local file path."""


def load_model(
    ref: str | os.PathLike[str],
    *,
    offline: bool = False,
    fetch: Fetch | None = None,
    environ: Mapping[str, str] | None = None,
) -> ModelSpec | DiffusionPipelineSpec:
    """Resolve ``ref`` to a model (``ModelSpec``) or a diffusion pipeline (``DiffusionPipelineSpec``).

    ``fetch`` replaces the Hub download (tests inject one); ``environ`` replaces ``os.environ`` when
    checking ``ANCHORGPU_OFFLINE`` / ``HF_HUB_OFFLINE``.

    >>> load_model("Llama-3.1-8B").params_total
    8030261248
    """
    if not isinstance(ref, str):  # a Path: always a file or folder
        return load_config_file(Path(ref)) if _exists(Path(ref)) else _missing(str(ref))
    text = _strip_hub_url(ref.strip())
    if not text:  # bad input, not a name that was looked up (the API's schema refuses "" the same way)
        raise InvalidInput(f"model {ref!r}: the name is empty; give a registry name (see `anchorgpu models`), a Hub id "
                           "or a config.json path")
    if text.endswith(".json") and _exists(Path(text).expanduser()):  # no registry key ends in .json: skip the registry
        return load_config_file(Path(text).expanduser())
    info = resolve(text)
    if info is not None:
        spec = load_registry_model(info)
        checkpoint = asked_checkpoint(text, info)
        if checkpoint is None or not isinstance(spec, ModelSpec):
            return spec
        # another checkpoint of the row's architecture, named by its Hub id or repository name: planned as the row,
        # served as asked (recipes.model_ref reads this clause)
        return replace(spec, source=f"{spec.source}; checkpoint {checkpoint} (as asked, same architecture)")
    path = Path(text).expanduser()
    if _exists(path):
        return load_config_file(path)
    if len(text) > MAX_REF_LENGTH:
        raise InvalidConfig(f"model {text[:40]!r}… is {len(text)} characters: registry names and Hub ids are at most "
                            f"{MAX_REF_LENGTH}, and no file has that path")
    if HUB_ID.match(text) and not text.endswith(".json"):
        return _load_from_hub(text, offline=offline, fetch=fetch, environ=os.environ if environ is None else environ)
    if text.endswith(".json") or os.sep in text or text.startswith("."):
        _missing(text)
    raise UnknownModel(text, did_you_mean(text, list_models()))


def _missing(path: str) -> NoReturn:
    raise InvalidConfig(f"{path}: no such file")


_HUB_PREFIXES = ("https://huggingface.co/", "http://huggingface.co/", "huggingface.co/", "hf://")


def _strip_hub_url(text: str) -> str:
    """``https://huggingface.co/org/name`` (or ``hf://org/name``) → ``org/name``; anything else unchanged.

    >>> _strip_hub_url("https://huggingface.co/Qwen/Qwen3-8B/"), _strip_hub_url("qwen3-8b")
    ('Qwen/Qwen3-8B', 'qwen3-8b')
    """
    for prefix in _HUB_PREFIXES:
        if text.lower().startswith(prefix):
            return text[len(prefix):].strip("/")
    return text


def load_registry_model(info: ModelInfo) -> ModelSpec | DiffusionPipelineSpec:
    """The shipped model or pipeline of one registry row."""
    text = read_data_text(info.file)
    if info.kind == "diffusion":
        from anchorgpu.architectures.diffusion import parse_pipeline  # TOML pipelines: only when asked for

        return parse_pipeline(text, name=info.name, family=info.family, file=f"architectures/data/{info.file}")
    cfg = parse_config_text(text, where=f"architectures/data/{info.file}")
    if info.quant_config:  # a quantized checkpoint of its base row: the base's config, the shipped file's layout
        where = f"architectures/data/{info.quant_config}"
        cfg = _with_hf_quant_config(cfg, read_data_text(info.quant_config), where=where)
    spec = from_hf_config(cfg, name=info.name, source=info.source)
    if info.shipped_weights:
        where = f"{REGISTRY_FILE} [{info.name}]"
        if spec.quantization is not None:
            raise DataFileError(REGISTRY_FILE, info.name, "field 'shipped_weights' is only for configs without a "
                                f"quantization_config; {info.file} already says {spec.quantization.name}")
        try:
            spec = replace(spec, quantization=shipped_from_name(info.shipped_weights, spec, where=where))
        except InvalidConfig as exc:
            raise DataFileError(REGISTRY_FILE, info.name, str(exc)) from None
    return replace(spec, family=info.family)


QUANT_CONFIGS_DIR = "quant_configs"
"""Published checkpoints' ModelOpt ``hf_quant_config.json`` files, kept under ``architectures/data/`` verbatim (each
file's source is in ``quant_configs/SOURCES.md``)."""


def _with_hf_quant_config(cfg: dict[str, object], doc_text: str, *, where: str) -> dict[str, object]:
    """``cfg`` with the ModelOpt ``hf_quant_config.json`` ``doc_text`` as its ``quantization_config``; a file that is
    itself a ``quantization_config`` (it names a ``quant_method``: a Quark checkpoint's, restated from its card) is
    used as it is."""
    doc = parse_config_text(doc_text, where=where)
    if isinstance(doc, dict) and "quant_method" in doc:
        return {**cfg, "quantization_config": doc}
    return {**cfg, "quantization_config": modelopt_quantization_config(doc, where=where)}


def load_with_hf_quant_config(model: str, quant_config: str) -> ModelSpec:
    """A registry model's architecture quantized as the shipped ModelOpt file ``quant_configs/<quant_config>``
    says: a checkpoint NVIDIA re-exported from that model with an ``hf_quant_config.json`` beside its config (the
    file replaces the config's own ``quantization_config``, as TensorRT-LLM reads ``hf_quant_config.json`` first).
    Read through the same path as a checkpoint folder's sidecar (:func:`load_config_file`). A registry row with
    ``base`` and ``quant_config`` (``deepseek-r1-0528-fp4``) is this, under its own name and Hub id.

    >>> m = load_with_hf_quant_config("deepseek-r1", "nvidia-deepseek-r1-0528-fp4.hf_quant_config.json")
    >>> q = m.quantization; q.method, q.name, q.fraction("o"), q.fraction("expert_up"), q.kv_cache
    ('modelopt', 'nvfp4', 0.0, 1.0, 'fp8')
    """
    info = resolve(model)
    if info is None or info.kind != "llm":
        raise UnknownModel(model, did_you_mean(model, list_models()))
    relative = f"{QUANT_CONFIGS_DIR}/{quant_config}"
    cfg = parse_config_text(read_data_text(info.file), where=f"architectures/data/{info.file}")
    cfg = _with_hf_quant_config(cfg, read_data_text(relative), where=f"architectures/data/{relative}")
    spec = from_hf_config(cfg, name=info.name, source=f"{info.source} + architectures/data/{relative}")
    return replace(spec, family=info.family)


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""The most a model's ``config.json`` or its ``hf_quant_config.json`` may hold, 16 MiB: a published config is a few
KiB, and a ModelOpt file listing every quantized module of a large mixture of experts a few MiB; a larger file is not
a config, and is refused before it is read into memory."""


def read_config_text(file: Path, *, where: str | None = None) -> str:
    """The text of a local JSON config file, at most :data:`MAX_CONFIG_BYTES` of it; a larger file, or one that
    cannot be read or decoded, is one line naming it (``where``, else the path)."""
    name = where or str(file)
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise InvalidConfig(f"{name}: cannot be read ({type(exc).__name__}: {exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise InvalidConfig(f"{name}: larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB, too large for a model's "
                            "config file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidConfig(f"{name}: cannot be read ({type(exc).__name__}: {exc})") from None


def load_config_file(path: Path) -> ModelSpec:
    """A ``config.json`` file, or a folder that holds one."""
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise InvalidConfig(f"{path}: folder has no config.json")
    text = read_config_text(file)
    cfg, quant_source = _with_sidecar(parse_config_text(text, where=str(file)), file)
    name = file.parent.name if file.name == "config.json" else file.stem
    return from_hf_config(cfg, name=name or file.stem, source=str(file), quantization_source=quant_source)


SIDECAR = "hf_quant_config.json"
"""ModelOpt's quantization file beside ``config.json``: checkpoints exported before config.json carried a
``quantization_config`` (nvidia/DeepSeek-R1-0528-FP4, ModelOpt 0.31) state their precision only there."""


def _with_sidecar(cfg: dict[str, object], file: Path) -> tuple[dict[str, object], str | None]:
    """``cfg`` (read from ``file``) with the ``hf_quant_config.json`` beside it as its ``quantization_config``,
    where the config states none and the file is there, and that file's path (None where it was not read), which
    the quantization's refusals then name."""
    sidecar = file.parent / SIDECAR
    if "quantization_config" in cfg or not sidecar.is_file():
        return cfg, None
    doc_text = read_config_text(sidecar)
    return _with_hf_quant_config(cfg, doc_text, where=str(sidecar)), str(sidecar)


OFFLINE_VARIABLES = ("ANCHORGPU_OFFLINE", "HF_HUB_OFFLINE")
"""Either one set to 1/true/yes/on keeps every face away from the Hub (a Hub id fails at once)."""
MAX_REF_LENGTH = 200
"""Longest model reference that is not an existing path (a Hub id is at most 96 characters per part)."""


def _exists(path: Path) -> bool:
    """``path.exists()``, but a name the file system cannot hold (too long, NUL) is simply not a file."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _offline(offline: bool, environ: Mapping[str, str]) -> bool:
    return offline or any(environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"} for name in OFFLINE_VARIABLES)


def _hub_download(repo_id: str) -> str:
    """Fetch ``config.json`` of a Hub repository. The library's own retry warnings ("Retrying in 8s
    [Retry 4/5]", one per attempt) are silenced: a failure reaches the user as one error line."""
    import logging

    from huggingface_hub import hf_hub_download

    hub_logger = logging.getLogger("huggingface_hub")
    level = hub_logger.level
    hub_logger.setLevel(logging.ERROR)
    try:
        local = Path(hf_hub_download(repo_id, "config.json"))
        _download_sidecar(repo_id, local, hf_hub_download)
        return str(local)
    finally:
        hub_logger.setLevel(level)


def _download_sidecar(repo_id: str, config: Path, download: Callable[..., str]) -> None:
    """Fetch the repository's ``hf_quant_config.json`` into ``config``'s snapshot folder where ``config`` states no
    ``quantization_config`` (a ModelOpt checkpoint says its precision there, else it would be planned 16-bit); a
    repository without one is a plain checkpoint (the Hub answers 404); any other failure fails the fetch, so that
    a quantized checkpoint is never planned 16-bit for want of its file."""
    from huggingface_hub.errors import RemoteEntryNotFoundError

    try:
        if "quantization_config" in json.loads(read_config_text(config)):
            return
    except (InvalidConfig, ValueError):
        return  # the caller reads and refuses it in one line
    try:
        revision = config.parent.name if re.fullmatch(r"[0-9a-f]{40}", config.parent.name) else None
        download(repo_id, SIDECAR, revision=revision)  # config.json's snapshot folder: the same commit
    except RemoteEntryNotFoundError:
        return
    except Exception as exc:  # the checkpoint's precision is in this file: its failure is said as its own
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        detail = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        raise HubUnavailable(f"{repo_id}: could not fetch {SIDECAR} from the Hugging Face Hub ({detail}); without it "
                             "this ModelOpt checkpoint would be planned 16-bit") from None


def _load_from_hub(
    repo_id: str, *, offline: bool, fetch: Fetch | None, environ: Mapping[str, str]
) -> ModelSpec:
    if _offline(offline, environ):
        known = did_you_mean(repo_id.split("/", 1)[1], list_models())
        hint = f"; registry models work offline (did you mean {', '.join(repr(k) for k in known)}?)" if known else ""
        raise HubUnavailable(f"{repo_id}: cannot fetch config.json from the Hugging Face Hub while offline{hint}")
    download = fetch or _hub_download
    try:
        local = download(repo_id)
    except HubUnavailable:  # already one line, naming the file that failed
        raise
    except Exception as exc:  # any failure of the download is one line for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        detail = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        raise HubUnavailable(f"{repo_id}: could not fetch config.json from the Hugging Face Hub ({detail})") from None
    file = Path(local)
    text = read_config_text(file, where=f"{repo_id}/config.json")  # the cap of a local file: the Hub serves anything
    cfg, quant_source = _with_sidecar(parse_config_text(text, where=f"{repo_id}/config.json"), file)
    return from_hf_config(cfg, name=repo_id, source=f"hub:{repo_id}",
                          quantization_source=quant_source and f"{repo_id}/{SIDECAR}")
