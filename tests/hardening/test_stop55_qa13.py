"""Stop 55's QA pass over the plan and recommend pages and the CLI, the defects stop 54's QA left
(benchmarks/hardening/stop55_qa13.md, "qa13").

1. With ``--mfu``/``--mbu`` the suggestions' training speeds ("What would fit") were timed with the calibrated model:
   Llama-3.1-70B on 8 H100 at ``--tp 1 --pp 1 --zero 0`` suggested ``--gpus 16 --zero 3 --recompute full`` at 16,806
   tok/s whatever ``--mfu`` said (0.2 or 0.6), while the plan itself was timed with the user's efficiency. Now the
   suggestions are timed with it too, with no calibrated band (as the plan's own speed).
2. The plan page wrote a training time in hours whatever its length ("0.29 h", "293.6 h"), the CLI in days, hours or
   minutes (``cli/plan_render._duration``). Both now write it by ``units.duration_in_unit`` (days from 24 h, hours from
   an hour, minutes from a minute, else seconds), the page in its language (ru "12,2 дн.", "17,5 мин")."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from cli_runner import run, run_json

NOT_FITTING_TRAIN = ("plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "1", "--pp",
                     "1", "--zero", "0")
"""A 70B trained by plain DP on 8 H100: 1.12 TiB a GPU, so "What would fit" suggests a layout on 16 GPUs with its
training speed."""


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(offline=True, rate_limit=False)), raise_server_exceptions=False) as c:
        yield c


def _suggested(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:  # type: ignore[type-arg]
    answer = run_json(capsys, *NOT_FITTING_TRAIN, *extra)
    (first,) = [s for s in answer["suggestions"] if s.get("train_tokens_per_s")][:1]
    return first  # type: ignore[no-any-return]


def test_suggestion_speeds_follow_the_users_mfu(capsys: pytest.CaptureFixture[str]) -> None:
    calibrated = _suggested(capsys)
    low_mfu, high_mfu = _suggested(capsys, "--mfu", "0.2"), _suggested(capsys, "--mfu", "0.4")
    assert calibrated["change"] == low_mfu["change"] == high_mfu["change"]
    # the user's efficiency is the matmul efficiency: twice of it is (nearly) twice the speed; before, all three equal
    assert 1.7 < high_mfu["train_tokens_per_s"] / low_mfu["train_tokens_per_s"] <= 2.0
    assert low_mfu["train_tokens_per_s"] != calibrated["train_tokens_per_s"]
    # no calibrated band around the user's efficiency: low = high = the prediction, as the plan's own figures
    assert low_mfu["train_tokens_per_s_low"] == low_mfu["train_tokens_per_s"] == low_mfu["train_tokens_per_s_high"]


def test_the_suggestion_speed_on_the_api_and_cli_table_follows_the_mfu(client: TestClient,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    body = {"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 1, "pp": 1, "zero": 0,
            "mfu": 0.2}
    api = client.post("/v1/plan", json=body).json()["suggestions"][0]
    assert api["train_tokens_per_s"] == pytest.approx(_suggested(capsys, "--mfu", "0.2")["train_tokens_per_s"])
    _, table, _ = run(capsys, *NOT_FITTING_TRAIN, "--mfu", "0.2")
    shown = f"{api['train_tokens_per_s']:,.0f}"
    assert f" {shown} " in table and f"({shown}-{shown})" not in table and "(band)" not in table


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_plan_page_shows_no_band_under_a_suggestion_timed_with_the_users_mfu(client: TestClient, lang: str) -> None:
    page = client.get("/plan", params={"model": "llama-3.1-70b", "task": "train", "gpu": "h100-sxm", "gpus": "8",
                                       "tp": "1", "pp": "1", "zero": "0", "mfu": "0.2", "lang": lang}).text
    table = re.search(r'<table id="suggestions">(.*?)</table>', page, re.S)
    assert table is not None and 'class="muted small band"' not in table.group(1)
    note = re.search(r'id="suggestion-band-note">([^<]*)<', page)
    assert note is not None
    assert ("your efficiencies" if lang == "en" else "вашими эффективностями") in html.unescape(note.group(1)).lower()


def _training_time(page: str) -> str:
    found = re.search(r"<dt>(?:Training time|Время обучения)</dt><dd>(.*?)</dd>", page, re.S)
    assert found is not None
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).replace("\xa0", " ")


@pytest.mark.parametrize(("tokens", "lang", "shown"), [
    ("1e11", "en", "12.2 days (measured runs like this fell within 10.9 days–13.7 days; roofline floor 6.8 days)"),
    ("1e11", "ru", "12,2 дн. (измеренные запуски такого рода укладывались в 10,9 дн.–13,7 дн.; нижняя граница roofline "
                   "6,8 дн.)"),
    ("1e9", "en", "2.9 h (measured runs like this fell within 2.6 h–3.3 h; roofline floor 1.6 h)"),
    ("1e8", "ru", "17,5 мин (измеренные запуски такого рода укладывались в 15,7 мин–19,7 мин; нижняя граница "
                  "roofline 9,8 мин)"),
])
def test_the_plan_page_writes_a_training_time_in_a_unit_a_person_reads(client: TestClient, capsys: pytest.CaptureFixture[str],
                                                                       tokens: str, lang: str, shown: str) -> None:
    """Llama-3.1-8B trained on 8 H100 (the layout chosen for it): figures as the CLI prints them for the same plan."""
    page = client.get("/plan", params={"model": "llama-3.1-8b", "task": "train", "gpu": "h100-sxm", "gpus": "8",
                                       "tokens": tokens, "lang": lang}).text
    assert _training_time(page) == shown
    _, out, _ = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tokens", tokens)
    cli = re.search(r"training time (\S+ \S+)", out)
    assert cli is not None and cli.group(1).replace(",", ".") == " ".join(shown.split()[:2]).replace(",", ".") \
        .replace("дн.", "days").replace("мин", "min")
