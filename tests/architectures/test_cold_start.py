"""``anchorgpu model CONFIG`` reads only what it needs: a config file given by path never loads the registry.

Why it matters: reading ``registry.toml`` (or its parsed snapshot) and ``importlib.resources`` cost tens of
milliseconds of a 0.3 s budget. These tests check the behaviour (what is read), not the time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anchorgpu.architectures import loader, model_infos, registry, serialize
from anchorgpu.architectures.loader import load_model

QWEN3_8B = Path(registry.__file__).parent / "data" / "models" / "qwen3-8b.json"


def test_no_registry_key_ends_in_json() -> None:
    # The loader takes a ref ending in ".json" that exists as a file before looking in the registry; that is
    # only the same order as documented (registry first) while no name, alias or Hub id ends in ".json".
    keys = [key for info in model_infos() for key in (info.name, info.hub_id, *info.aliases)]
    assert keys and not [key for key in keys if key.lower().endswith(".json")]


def test_a_json_path_is_loaded_without_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_ref: str) -> None:
        raise AssertionError("the registry was consulted for a config file")

    monkeypatch.setattr(loader, "resolve", refuse)
    monkeypatch.setattr(serialize, "resolve", refuse)
    spec = load_model(str(QWEN3_8B))
    doc = serialize.model_to_json(spec)
    assert doc["params_total"] == 8190735360  # transformers_counts.json, qwen3-8b
    assert doc["display_name"] == "qwen3-8b" and doc["source"] == str(QWEN3_8B)


def test_a_registry_name_still_resolves_first() -> None:
    doc = serialize.model_to_json(load_model("qwen3-8b"))
    assert doc["display_name"] == "Qwen3 8B" and doc["source"].startswith("registry:qwen3-8b")


def test_the_model_command_imports_neither_the_registry_data_nor_rich_for_json() -> None:
    code = (
        "import sys; from anchorgpu.cli import main; code = main(['model', sys.argv[1], '--json']); "
        "print(sorted(m for m in sys.modules if m in ('rich', 'tomllib', 'importlib.resources', 'sqlalchemy', "
        "'pydantic', 'numpy', 'fastapi')), file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(QWEN3_8B)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["params_total"] == 8190735360
    assert done.stderr.strip() == "[]"
