"""Issue 13, item 2: a Hub id can no longer hold the server, and ANCHORGPU_OFFLINE is honoured by every face.

Every test injects a fetch that fails the test if it is called where no fetch may happen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from anchorgpu.api import models_ref
from anchorgpu.architectures import loader
from cli_runner import run
from hardening.conftest import Served, problem_of


def _no_fetch(repo_id: str) -> str:
    raise AssertionError(f"the Hub was contacted for {repo_id}")


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "_hub_download", _no_fetch)
    for name in ("ANCHORGPU_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def online_served(sqlite_url: str, fixed_clock: Any) -> Iterator[Served]:
    """The app with Settings(offline=False): only hub_fetch (off by default) keeps it from the Hub."""
    from fastapi.testclient import TestClient

    from anchorgpu.api.app import create_app
    from anchorgpu.config import Settings

    app = create_app(Settings(database_url=sqlite_url, offline=False), clock=fixed_clock, session_secret="hub")
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Served(app, client)


def test_the_api_does_not_fetch_hub_ids_by_default_and_answers_at_once(no_hub: None, online_served: Served) -> None:
    client = online_served.client
    started = time.perf_counter()
    answers = [client.post("/v1/plan", json={"model": "someorg/some-model", "gpu": "h100"}),
               client.get("/v1/models/someorg/some-model"),
               client.post("/v1/recommend", json={"model": "someorg/some-model"}),
               client.get("/plan", params={"model": "someorg/some-model"})]
    elapsed = time.perf_counter() - started
    for response in answers[:3]:
        assert response.status_code == 422
        body = problem_of(response)
        assert body["code"] == "hub_unavailable" and "does not fetch" in body["detail"]
    assert answers[3].status_code == 422 and "does not fetch" in answers[3].text
    assert elapsed < 2.0
    # registry models (and the Hub ids of registry models) still work
    assert client.post("/v1/plan", json={"model": "meta-llama/Llama-3.1-8B", "gpu": "h100"}).status_code == 200


@pytest.mark.parametrize("variable", ["ANCHORGPU_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_variables_stop_the_cli_before_any_fetch(no_hub: None, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str], variable: str) -> None:
    monkeypatch.setenv(variable, "1")
    for argv in (("model", "someorg/some-model"), ("plan", "someorg/some-model", "--gpu", "h100"),
                 ("recommend", "someorg/some-model")):
        started = time.perf_counter()
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
        assert "offline" in err
        assert time.perf_counter() - started < 5.0


def test_offline_variable_wins_over_hub_fetch_on_the_server(no_hub: None, monkeypatch: pytest.MonkeyPatch, sqlite_url: str,
                                                            fixed_clock: Any) -> None:
    monkeypatch.setenv("ANCHORGPU_OFFLINE", "1")
    from anchorgpu.config import Settings

    settings = Settings(database_url=sqlite_url, hub_fetch=True)
    assert settings.offline and models_ref.server_offline(settings)


class SlowHub:
    """A download that blocks until released, counting calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()

    def __call__(self, repo_id: str) -> str:
        self.calls += 1
        self.release.wait(10)
        raise OSError("network unreachable")


@pytest.fixture
def bounded(monkeypatch: pytest.MonkeyPatch) -> Any:
    hub = models_ref._BoundedHub(slots=2, timeout_s=0.3, cache_size=4)
    monkeypatch.setattr(models_ref, "_HUB", hub)
    for name in ("ANCHORGPU_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    return hub


def test_with_hub_fetch_on_a_stalled_hub_holds_a_request_only_for_the_timeout_and_two_at_most(bounded: Any) -> None:
    from anchorgpu.errors import HubUnavailable

    slow = SlowHub()
    try:
        started = time.perf_counter()
        for _ in range(2):  # each one waits its timeout, then answers; its download keeps a slot until it ends
            with pytest.raises(HubUnavailable, match="within 0.3 s"):
                models_ref.load_public_model("someorg/some-model", offline=False, download=slow)
        waited = time.perf_counter() - started
        assert 0.5 < waited < 2.0
        started = time.perf_counter()
        for _ in range(20):  # both slots busy: refused at once, no new download
            with pytest.raises(HubUnavailable, match="already fetching"):
                models_ref.load_public_model("otherorg/other-model", offline=False, download=slow)
        assert time.perf_counter() - started < 0.5
        assert slow.calls == 2
    finally:
        slow.release.set()


def test_with_hub_fetch_on_a_fetched_model_is_answered_from_the_cache(bounded: Any, tmp_path: Any) -> None:
    from anchorgpu.architectures import load_model

    config = tmp_path / "config.json"
    config.write_text(loader.read_data_text(loader.resolve("llama-3.2-1b").file), encoding="utf-8")  # type: ignore[union-attr]
    calls: list[str] = []

    def download(repo_id: str) -> str:
        calls.append(repo_id)
        return str(config)

    first = models_ref.load_public_model("someorg/tiny-llama", offline=False, download=download)
    second = models_ref.load_public_model("someorg/tiny-llama", offline=False, download=_no_fetch)
    assert first is second and calls == ["someorg/tiny-llama"]
    assert first.params_total == load_model("llama-3.2-1b").params_total
