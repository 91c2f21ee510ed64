"""``load_model``: registry names and aliases, files and folders, Hub ids (download injected: no network here)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from anchorgpu.architectures import DiffusionPipelineSpec, ModelSpec, list_models, load_model, model_infos
from anchorgpu.architectures import loader as loader_module
from anchorgpu.cli import main
from anchorgpu.errors import HubUnavailable, InvalidConfig, InvalidInput, UnknownModel

MODELS_DIR = Path(__file__).resolve().parents[2] / "src" / "anchorgpu" / "architectures" / "data" / "models"
ONLINE: dict[str, str] = {}  # environ without HF_HUB_OFFLINE


@pytest.mark.parametrize(
    "ref", ["llama-3.1-70b", "LLAMA-3.1-70B", " llama3.1-70b ", "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/meta-llama-3.1-70b"]
)
def test_names_aliases_and_hub_ids_of_registry_models_resolve_offline(ref: str) -> None:
    spec = load_model(ref, offline=True)
    assert isinstance(spec, ModelSpec)
    assert spec.name == "llama-3.1-70b" and spec.family == "Llama 3.1"
    assert spec.source.startswith("registry:llama-3.1-70b")


def test_every_registry_row_loads() -> None:
    for info in model_infos():
        spec = load_model(info.name)
        assert isinstance(spec, DiffusionPipelineSpec if info.kind == "diffusion" else ModelSpec)
        assert spec.name == info.name


def test_the_registry_has_at_least_thirty_language_models_and_the_five_pipelines() -> None:
    kinds = [i.kind for i in model_infos()]
    assert kinds.count("llm") >= 30
    assert {"sdxl-base-1.0", "sd-3.5-large", "sd-3.5-medium", "flux.1-dev", "flux.1-schnell"} <= set(list_models())


def test_a_config_file_and_its_folder_load_the_same_model(tmp_path: Path) -> None:
    folder = tmp_path / "my-qwen"
    folder.mkdir()
    shutil.copy(MODELS_DIR / "qwen2.5-7b.json", folder / "config.json")
    by_folder, by_file = load_model(str(folder)), load_model(str(folder / "config.json"))
    assert isinstance(by_folder, ModelSpec) and isinstance(by_file, ModelSpec)
    assert by_folder.params_total == by_file.params_total == 7615616512  # expected_params.json, qwen2.5-7b
    assert by_folder.name == "my-qwen" and by_folder.source == str(folder / "config.json")


def _fake_hub(tmp_path: Path, config_name: str, calls: list[str]) -> loader_module.Fetch:
    def fetch(repo_id: str) -> str:
        calls.append(repo_id)
        target = tmp_path / "hub" / repo_id / "config.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(MODELS_DIR / config_name, target)
        return str(target)

    return fetch


def test_a_hub_id_outside_the_registry_is_fetched_once_and_parsed(tmp_path: Path) -> None:
    calls: list[str] = []
    spec = load_model("someone/tiny-mistral", fetch=_fake_hub(tmp_path, "mistral-7b-v0.1.json", calls), environ=ONLINE)
    assert calls == ["someone/tiny-mistral"]
    assert isinstance(spec, ModelSpec)
    assert spec.params_total == 7241732096 and spec.source == "hub:someone/tiny-mistral"


def test_the_default_download_is_huggingface_hub_and_can_be_monkeypatched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(loader_module, "_hub_download", _fake_hub(tmp_path, "gpt2.json", calls))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    spec = load_model("someone/gpt2-copy")
    assert calls == ["someone/gpt2-copy"] and spec.params_total == 124439808


@pytest.mark.parametrize("environ", [{"HF_HUB_OFFLINE": "1"}, {"HF_HUB_OFFLINE": "true"}])
def test_offline_a_hub_id_fails_at_once_without_calling_the_hub(environ: dict[str, str]) -> None:
    calls: list[str] = []

    def fetch(repo_id: str) -> str:
        calls.append(repo_id)
        raise AssertionError("must not be called offline")

    with pytest.raises(HubUnavailable, match=r"^someone/model: cannot fetch config.json from the Hugging Face Hub while offline"):
        load_model("someone/model", fetch=fetch, environ=environ)
    with pytest.raises(HubUnavailable):
        load_model("someone/model", offline=True, fetch=fetch, environ=ONLINE)
    assert calls == []


def test_any_download_failure_becomes_one_line_hub_unavailable() -> None:
    def fetch(repo_id: str) -> str:
        raise OSError("We couldn't connect to 'https://huggingface.co'.\nCheck your connection.")

    with pytest.raises(HubUnavailable) as info:
        load_model("someone/model", fetch=fetch, environ=ONLINE)
    assert str(info.value) == (
        "someone/model: could not fetch config.json from the Hugging Face Hub "
        "(OSError: We couldn't connect to 'https://huggingface.co'.)"
    )


def test_a_downloaded_config_that_is_bad_names_the_repository(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 0}))
    with pytest.raises(InvalidConfig, match=r"^hub:someone/model: field 'hidden_size' must be a positive integer"):
        load_model("someone/model", fetch=lambda _: str(bad), environ=ONLINE)


def test_the_cli_hub_path_offline_exits_2_in_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = main(["model", "someone/llama-4-fake"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: someone/llama-4-fake: cannot fetch config.json from the Hugging Face Hub while offline")


def test_an_unknown_plain_name_is_not_sent_to_the_hub() -> None:
    with pytest.raises(UnknownModel) as info:
        load_model("mixtral-8x9b", fetch=lambda _: pytest.fail("no Hub call for a plain name"), environ=ONLINE)
    assert "mixtral-8x7b-v0.1" in info.value.suggestions


def test_an_empty_name_is_bad_input_not_unknown() -> None:
    # exit 2 / HTTP 422 as the API's schema refuses "", not "not found" (no name was looked up)
    with pytest.raises(InvalidInput, match="the name is empty") as info:
        load_model("   ")
    assert not isinstance(info.value, UnknownModel)


def test_a_path_object_loads_the_file_it_names(tmp_path: Path) -> None:
    target = tmp_path / "cfg.json"
    shutil.copy(MODELS_DIR / "gpt2.json", target)
    spec = load_model(target)
    assert isinstance(spec, ModelSpec) and spec.params_total == 124439808
    with pytest.raises(InvalidConfig, match="no such file"):
        load_model(tmp_path / "missing.json")


@pytest.mark.parametrize("ref", ["https://huggingface.co/Qwen/Qwen3-8B", "hf://Qwen/Qwen3-8B", "huggingface.co/qwen/qwen3-8b/"])
def test_hub_urls_of_registry_models_resolve_offline(ref: str) -> None:
    spec = load_model(ref, offline=True)
    assert isinstance(spec, ModelSpec) and spec.name == "qwen3-8b"


def test_a_failing_hub_fetch_is_one_error_line_without_the_librarys_retry_warnings(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
) -> None:
    # QA-CLI: without network `anchorgpu model someorg/some-model` printed huggingface_hub's
    # "'[Errno -2] ...' thrown while requesting HEAD ... Retrying in 1s [Retry 1/5]." five times before the error.
    import logging

    import huggingface_hub

    http_logger = logging.getLogger("huggingface_hub.utils._http")
    seen: list[bool] = []

    def unreachable(repo_id: str, filename: str) -> str:
        seen.append(http_logger.isEnabledFor(logging.WARNING))
        http_logger.warning("Retrying in 1s [Retry 1/5].")
        raise OSError("Name or service not known")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    with pytest.raises(HubUnavailable, match="could not fetch config.json"):
        load_model("someorg/some-model", environ={})
    assert seen == [False] and "Retrying" not in capfd.readouterr().err
    assert http_logger.isEnabledFor(logging.WARNING)  # the level is put back afterwards
