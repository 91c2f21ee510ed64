"""Checkpoint folders with a broken ModelOpt quantization (a config.json ``quantization_config`` or an
``hf_quant_config.json`` beside it): each is refused in one line naming the bad value, exit 2; none is planned
16-bit in silence.

Found by the adversarial pass: a ``kv_cache_scheme`` that is neither 8- nor 4-bit float (``7``, an 8-bit int
scheme) was dropped and the KV cache planned bf16 without a word; a ``quant_algo`` or ``quant_method`` of the wrong
type was reported as missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidConfig
from cli_runner import run

CONFIG = Path(__file__).parents[2] / "src/anchorgpu/architectures/data/models/llama-3.1-8b.json"


def _folder(tmp_path: Path, quantization_config: dict[str, Any] | None = None, sidecar: dict[str, Any] | None = None) -> Path:
    cfg = json.loads(CONFIG.read_text())
    if quantization_config is not None:
        cfg["quantization_config"] = quantization_config
    folder = tmp_path / "ckpt"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    if sidecar is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(sidecar))
    return folder


@pytest.mark.parametrize("scheme", [7, [8], {"num_bits": 16, "type": "float"}, {"num_bits": 4, "type": "int"}, True])
def test_an_unreadable_modelopt_kv_cache_scheme_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                     scheme: object) -> None:
    folder = _folder(tmp_path, {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": scheme})
    with pytest.raises(InvalidConfig, match="kv_cache_scheme' must be") as caught:
        load_model(str(folder))
    assert repr(scheme) in str(caught.value) and "\n" not in str(caught.value)
    code, _, err = run(capsys, "plan", str(folder), "--gpu", "h100", "--offline")
    assert code == 2 and err.count("\n") == 1 and "kv_cache_scheme" in err


def test_an_8_bit_int_kv_cache_scheme_is_read_as_modelopts_int8_cache(tmp_path: Path) -> None:
    """config.json's shape of ``kv_cache_quant_algo: INT8``: the same note, not a silent drop."""
    folder = _folder(tmp_path, {"quant_method": "modelopt", "quant_algo": "FP8",
                                "kv_cache_scheme": {"num_bits": 8, "type": "int"}})
    q = load_model(str(folder)).quantization
    assert q is not None and q.kv_cache is None
    assert len(q.notes) == 1 and "INT8 KV cache (kv_cache_scheme)" in q.notes[0]


def test_the_readable_kv_cache_schemes_still_load(tmp_path: Path) -> None:
    for n, (scheme, kv) in enumerate([({"num_bits": 8, "type": "float"}, "fp8"), ({"num_bits": 4, "type": "float"}, "nvfp4"),
                                      ("FP8", "fp8"), (None, None)]):
        folder = _folder(tmp_path / str(n), {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_scheme": scheme})
        q = load_model(str(folder)).quantization
        assert q is not None and q.kv_cache == kv, scheme


@pytest.mark.parametrize(("qc", "sidecar", "says"), [
    ({"quant_method": "modelopt", "quant_algo": 4}, None, "quant_algo' must be a name such as 'NVFP4' or 'FP8', got 4"),
    (None, {"quantization": {"quant_algo": ["NVFP4"]}}, "quant_algo' must be a name such as 'NVFP4' or 'FP8', got ['NVFP4']"),
    ({"quant_method": 5}, None, "quant_method' must be a name such as 'fp8' or 'modelopt', got 5"),
    ({"quant_method": "modelopt"}, None, "quant_algo' is missing"),
])
def test_a_quant_field_of_the_wrong_type_is_named_not_called_missing(tmp_path: Path, qc: dict[str, Any] | None,
                                                                     sidecar: dict[str, Any] | None, says: str) -> None:
    folder = _folder(tmp_path, qc, sidecar)
    with pytest.raises(InvalidConfig) as caught:
        load_model(str(folder))
    assert says in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(("quantization", "said"), [
    ({"quant_algo": "BOGUS"}, "quant_algo 'BOGUS' is not supported"),
    ({"quant_algo": "NVFP4", "exclude_modules": 5}, "exclude_modules' must be a list of module names, got 5"),
])
def test_a_broken_hf_quant_config_is_named_not_the_config_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   quantization: dict[str, Any], said: str) -> None:
    """The refusal sends the user to the file that is wrong: ``hf_quant_config.json``, not ``config.json``."""
    folder = _folder(tmp_path, sidecar={"producer": {"name": "modelopt", "version": "0.31.0"},
                                        "quantization": quantization})
    with pytest.raises(InvalidConfig) as caught:
        load_model(str(folder))
    message = str(caught.value)
    assert message.startswith(f"{folder / 'hf_quant_config.json'}: ") and said in message and "\n" not in message
    code, _, err = run(capsys, "plan", str(folder), "--gpu", "b200", "--offline")
    assert code == 2 and "hf_quant_config.json: " in err and "config.json: " not in err.replace("hf_quant_config.json", "")
