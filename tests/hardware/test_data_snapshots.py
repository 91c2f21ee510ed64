"""The parsed snapshots shipped beside the TOML data files (GPU specs, sources, model registry).

They exist only so that ``anchorgpu plan`` starts without the TOML parser; the TOML stays the source of
truth. A snapshot must be exactly what ``tomllib`` makes of the shipped file, and a stale one is ignored.
"""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from anchorgpu import _snapshot
from anchorgpu.errors import DataFileError
from anchorgpu.hardware import parse_gpus, parse_sources

SHIPPED = [(pkg, name) for pkg, names in _snapshot.SNAPSHOT_FILES.items() for name in names]


def _text(package: str, name: str) -> str:
    return resources.files(package).joinpath("data", name).read_text(encoding="utf-8")


@pytest.mark.parametrize(("package", "name"), SHIPPED)
def test_each_shipped_snapshot_is_fresh_and_equals_what_tomllib_reads(package: str, name: str) -> None:
    text = _text(package, name)
    shipped = _snapshot.read_snapshot(package, name)
    assert shipped == _snapshot.render(text), (
        f"{package}/data/{_snapshot.snapshot_name(name)} is stale: run .venv/bin/python -m anchorgpu._snapshot")
    assert _snapshot.loads(text, shipped) == tomllib.loads(text)


def test_a_stale_snapshot_is_ignored_and_the_toml_is_parsed() -> None:

    old = "schema_version = 1\n[sources]\nS1 = \"old\"\n"
    new = "schema_version = 1\n[sources]\nS1 = \"new\"\n"
    assert _snapshot.loads(new, _snapshot.render(old)) == {"schema_version": 1, "sources": {"S1": "new"}}
    assert parse_sources(new, snapshot=_snapshot.render(old)) == {"S1": "new"}
    assert _snapshot.loads(new, "not json") == tomllib.loads(new)


def test_invalid_toml_still_names_the_file_with_or_without_a_snapshot() -> None:

    good = _text("anchorgpu.hardware", "gpus.toml")
    with pytest.raises(DataFileError, match="gpus.toml.*not valid TOML"):
        parse_gpus("[[gpu]\n", snapshot=_snapshot.render(good))


def test_the_shipped_loaders_read_the_snapshot_not_the_toml_parser() -> None:
    import subprocess
    import sys

    code = ("from anchorgpu.hardware import get_gpu; from anchorgpu.architectures import load_model\n"
            "get_gpu('h100'); load_model('llama-3.1-8b')\nimport sys; print('tomllib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "False"
