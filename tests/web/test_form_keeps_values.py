"""The plan and recommend forms keep every value the user gave (stop 54, branch qa11): the plan form had no input for
the global batch and the virtual pipeline stages (issue 11 names both among the refusals a page must explain), nor for
the finer options a link brings (``tp_overlap``, ``network_gbit_per_gpu`` ...), and the recommend form none for the
training precision: a plan reached from the recommend page's "check the workload in the planner" link (or the
recommend page from the plan's "cheapest offerings that fit this") planned them, but the form dropped them, so a
changed and resubmitted form silently planned the defaults instead, and a refusal about the global batch left the user
no field to correct."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.schemas import PlanRequest, RecommendRequest
from anchorgpu.web.filters import duration
from anchorgpu.web.form_fields import PLAN_CARRIED, RECOMMEND_CARRIED

TEMPLATES = Path(__file__).parents[2] / "src" / "anchorgpu" / "web" / "templates"


class _Form(HTMLParser):
    """What a browser sends for the form ``form_id``: text and hidden inputs, checked boxes, selected options."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id, self.inside, self.select, self.first = form_id, False, None, None
        self.sent: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside:
            return
        if tag == "input" and a.get("name"):
            if a.get("type") != "checkbox" or "checked" in a:
                self.sent.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self.select, self.first = a.get("name"), None
        elif tag == "option" and self.select:
            if self.first is None:
                self.first = a.get("value", "")
            if "selected" in a:
                self.sent.append((self.select, a.get("value", "")))
                self.select = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select" and self.select and self.inside:
            self.sent.append((self.select, self.first or ""))  # nothing selected: the browser sends the first option
            self.select = None


def resubmitted(page: str, form_id: str) -> dict[str, str]:
    form = _Form(form_id)
    form.feed(page)
    return {name: value for name, value in form.sent if value != ""}


def _inputs(template: str) -> set[str]:
    text = (TEMPLATES / template).read_text()
    return set(re.findall(r'name="(\w+)"', text)) | set(re.findall(r'sel\("(\w+)"', text))


@pytest.mark.parametrize(("template", "model", "carried"), [("plan.html", PlanRequest, PLAN_CARRIED),
                                                            ("recommend.html", RecommendRequest, RECOMMEND_CARRIED)])
def test_every_request_field_is_an_input_of_the_form_or_carried(template: str, model: type, carried: tuple[str, ...]) -> None:
    """A field the form neither shows nor carries is lost on a resubmission: none may be added without one."""
    missing = set(model.model_fields) - {"recipe"} - _inputs(template) - set(carried)
    assert not missing, f"{template}: no input and not carried: {sorted(missing)}"
    assert not set(carried) & _inputs(template), "a field both shown and carried is sent twice"


TRAINING = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": "16", "tp": "2", "pp": "2", "dp": "4",
            "seq": "4096", "micro_batch": "1", "global_batch": "2M", "virtual_stages": "4", "tp_overlap": "on",
            "network_gbit_per_gpu": "100", "tokens": "1e10"}


def test_a_plan_resubmitted_unchanged_plans_the_same_global_batch_stages_and_network(client: TestClient) -> None:
    first = client.get("/plan", params=TRAINING)
    assert first.status_code == 200, first.text[-500:]
    sent = resubmitted(first.text, "plan-form")
    assert sent["global_batch"] == str(2 * 2**20) and sent["virtual_stages"] == "4"
    assert sent["tp_overlap"] == "on" and sent["network_gbit_per_gpu"] == "100"
    again = client.get("/plan", params={**sent, "lang": "en"})
    api = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 16, "tp": 2,
                                        "pp": 2, "dp": 4, "seq": 4096, "micro_batch": 1, "global_batch": 2 * 2**20,
                                        "virtual_stages": 4, "tp_overlap": True, "network_gbit_per_gpu": 100,
                                        "tokens": 10**10}).json()["performance"]
    hours = " ".join(duration("en")(api["train_time_s"]).split())  # in the unit the page writes it (stop 55 qa13)
    for page in (first.text, again.text):
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
        assert "(v 4)" in text and f"Training time {hours}" in text and "2,097,152 tokens, as" in text, hours


def test_a_refused_global_batch_stays_in_the_form_to_be_corrected_in_both_languages(client: TestClient) -> None:
    for lang in ("en", "ru"):
        page = client.get("/plan", params={**TRAINING, "global_batch": "100000", "lang": lang})
        said = html.unescape(re.sub(r"<[^>]+>", "", page.text))  # the form's label (stop 55 qa13)
        # the refusal in the page's language (stop 60, faces60: the Russian page's was English)
        refused = "“Global batch (tokens)” 100,000 tokens" if lang == "en" else "«Глобальный батч (токены)» 100\xa0000 токенов"
        assert page.status_code == 422 and refused in said
        assert resubmitted(page.text, "plan-form")["global_batch"] == "100000"
    ru = client.get("/plan", params={**TRAINING, "lang": "ru"}).text
    assert "Глобальный батч (токены)" in ru and "Виртуальные стадии конвейера" in ru


def test_the_recommend_form_keeps_the_plans_fp8_and_micro_batch(client: TestClient) -> None:
    """The plan page's "cheapest offerings that fit this" link carries the plan's query: the recommend page planned
    FP8 from it but its form had no training precision, so a resubmission planned BF16."""
    query = {"model": "llama-3.1-8b", "task": "train", "train_precision": "fp8", "micro_batch": "2", "seq": "4096",
             "top": "2", "lang": "en"}
    page = client.get("/recommend", params=query)
    assert page.status_code == 200, page.text[-500:]
    sent = resubmitted(page.text, "recommend-form")
    assert sent["train_precision"] == "fp8" and sent["micro_batch"] == "2" and sent["top"] == "2"
    serving = resubmitted(client.get("/recommend", params={"model": "llama-3.1-8b", "top": "1"}).text, "recommend-form")
    assert "train_precision" not in serving  # left at its blank default, which a serving request may send


def test_the_recommend_form_can_allow_a_context_beyond_the_models_limit(client: TestClient) -> None:
    """Its refusal says to allow a longer context ("add allow_long_context to plan anyway"), which only the plan form
    could: the recommend form now has the plan form's box."""
    query = {"model": "llama-3.1-8b", "prompt": "200000", "output_tokens": "100", "top": "1"}
    refused = client.get("/recommend", params=query)
    assert refused.status_code == 422 and "add “Allow context beyond the model's limit” to plan anyway" in html.unescape(refused.text)
    assert "allow_long_context" not in resubmitted(refused.text, "recommend-form")
    allowed = client.get("/recommend", params={**query, "allow_long_context": "on"})
    assert allowed.status_code == 200 and 'id="rec-1"' in allowed.text
    assert resubmitted(allowed.text, "recommend-form")["allow_long_context"] == "on"


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_a_refused_carried_value_is_shown_to_be_corrected(client: TestClient, lang: str) -> None:
    """A carried field is an input the user sees, not a hidden one: a refused value (``fragmentation=0.9``; ``mfu``
    was carried until it got an input of its own, stop 55 qa13) would otherwise be sent again with every resubmission,
    refused each time with no field to change."""
    page = client.get("/plan", params={**TRAINING, "fragmentation": "0.9", "lang": lang})
    assert page.status_code == 422 and "fragmentation: " in page.text  # no label of its own: its name, as shown
    carried = page.text[page.text.index('id="carried"'):page.text.index("</div>", page.text.index('id="carried"'))]
    assert '<input name="fragmentation" value="0.9">' in carried and 'type="hidden"' not in carried
    assert ("From the link:" if lang == "en" else "Из ссылки:") in carried


@pytest.mark.parametrize(("path", "query"), [
    ("/plan", {"model": "llama-3.1-8b", "gpu": "h100", "concurrency": "0"}),
    ("/plan", {**TRAINING, "gpu": "a100", "global_batch": "100000"}),
    ("/recommend", {"model": "llama-3.1-8b", "gpu": "a100", "top": "0"}),
])
def test_a_gpu_given_by_its_alias_stays_selected_when_the_answer_is_a_refusal(client: TestClient, path: str,
                                                                              query: dict[str, str]) -> None:
    """The GPU select's options are canonical names: an alias (``h100``) was mapped to its option only on an answer,
    so a refusal showed "no GPU" and the corrected form planned without one."""
    from anchorgpu.hardware import get_gpu

    page = client.get(path, params=query)
    assert page.status_code == 422
    form_id = "plan-form" if path == "/plan" else "recommend-form"
    assert resubmitted(page.text, form_id)["gpu"] == get_gpu(query["gpu"]).name


def test_the_compare_form_keeps_the_known_gpu_when_the_other_is_refused(client: TestClient) -> None:
    page = client.get("/gpus/compare", params={"a": "h100", "b": "no-such-gpu"})
    assert page.status_code == 404
    assert re.findall(r'<option value="([^"]+)" selected', page.text) == ["h100-sxm"]
