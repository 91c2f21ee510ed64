"""A local ``config.json`` and the ``hf_quant_config.json`` beside it are read up to a cap (16 MiB, far above any
published config): a larger one is refused in one line naming it (exit 2), before it is read into memory.

Before: both files were read whole whatever their size (a 200 MB quantization file took 430 MB of memory and was
planned as if nothing were wrong).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anchorgpu.architectures import load_model, loader
from anchorgpu.architectures.registry import read_data_text, resolve
from anchorgpu.errors import InvalidConfig
from cli_runner import run
from planner.test_nvfp4_kv_cache import LLAMA_NVFP4_KV

LIMIT = "larger than 16 MiB, too large for a model's config file"


def _llama_config() -> str:
    info = resolve("llama-3.1-8b")
    assert info is not None
    return read_data_text(info.file)


def _padded(text: str, size: int) -> str:
    """The JSON object ``text`` with whitespace before its closing brace up to ``size`` bytes: still valid JSON."""
    body = text.rstrip()
    assert body.endswith("}")
    return body[:-1] + " " * (size - len(body.encode())) + "}"


def _oversized(path: Path) -> None:
    """A file one byte over the cap (sparse: nothing is written but its last byte)."""
    with path.open("wb") as handle:
        handle.truncate(loader.MAX_CONFIG_BYTES + 1)


@pytest.mark.parametrize("name", ["config.json", "hf_quant_config.json"])
def test_a_file_over_the_cap_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    (tmp_path / "config.json").write_text(_llama_config())
    _oversized(tmp_path / name)
    code, out, err = run(capsys, "plan", str(tmp_path), "--gpu", "h100", "--offline")
    assert code == 2 and out == ""
    assert err == f"error: {tmp_path / name}: {LIMIT}\n"


def test_a_file_at_the_cap_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "MAX_CONFIG_BYTES", 64 * 1024)
    config, quant = tmp_path / "config.json", tmp_path / "hf_quant_config.json"
    config.write_text(_padded(_llama_config(), 64 * 1024))
    quant.write_text(_padded(json.dumps(LLAMA_NVFP4_KV), 64 * 1024))
    assert config.stat().st_size == quant.stat().st_size == 64 * 1024
    model = load_model(str(tmp_path))
    assert model.quantization is not None and model.quantization.kv_cache == "nvfp4"
    quant.write_text(_padded(json.dumps(LLAMA_NVFP4_KV), 64 * 1024 + 1))
    with pytest.raises(InvalidConfig, match=f"^{quant}: larger than "):
        load_model(str(tmp_path))


def test_a_config_fetched_from_the_hub_has_the_same_cap(tmp_path: Path) -> None:
    fetched = tmp_path / "config.json"
    _oversized(fetched)
    with pytest.raises(InvalidConfig) as info:
        load_model("some-org/some-model", fetch=lambda repo: str(fetched), environ={})
    assert str(info.value) == f"some-org/some-model/config.json: {LIMIT}"
