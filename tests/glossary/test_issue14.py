"""Issue 14, item 7 and item 6's last sentence, through the faces: the definition caveat on every entry, live
quotes and catalog links from presets, MIG-style GPU names refused with the whole-GPU reason (CLI and API),
Russian labels on the card, and a Cyrillic query answered in Russian without --lang."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from anchorgpu.glossary import DEFINITION_CAVEAT, get_entry, load_glossary
from cli_runner import run


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from anchorgpu.api.app import create_app
    from anchorgpu.config import Settings

    db = tmp_path_factory.mktemp("glossary14") / "unused.db"
    app = create_app(Settings(database_url=f"sqlite:///{db}", offline=True), session_secret="test-secret")
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


# --- the caveat -------------------------------------------------------------------------------------------

def test_the_caveat_is_written_in_both_languages_in_our_own_words() -> None:
    seed = "Definitions explain the concept; they do not guarantee that a specific workload"
    assert seed not in DEFINITION_CAVEAT.en
    assert "does not promise" in DEFINITION_CAVEAT.en and "не обещает" in DEFINITION_CAVEAT.ru


def test_every_entry_page_shows_the_caveat_in_its_language(client: TestClient) -> None:
    from html import escape

    missing = []
    for entry in load_glossary():
        for lang in ("en", "ru"):
            html = client.get(f"/glossary/{entry.id}", params={"lang": lang}).text
            if 'id="definition-caveat"' not in html or escape(DEFINITION_CAVEAT.get(lang), quote=False) not in html:
                missing.append((entry.id, lang))
    assert missing == []


def test_the_cli_card_and_the_json_carry_the_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "glossary", "mig")
    assert code == 0 and "does not promise" in " ".join(out.split())
    code, out, _ = run(capsys, "glossary", "mig", "--json")
    assert json.loads(out)[0]["disclaimer"] == {"en": DEFINITION_CAVEAT.en, "ru": DEFINITION_CAVEAT.ru}


# --- live quotes and catalog presets on the pages -----------------------------------------------------------

def test_a_quote_preset_is_priced_live_on_the_entry_page(client: TestClient) -> None:
    """Catalog anchor: one H100 SXM VM for a month is $2,190 (DESIGN.md 2), 720 h, $3.04 effective, $3.00 at 730 h."""
    html = client.get("/glossary/comparison-month-730", params={"lang": "en"}).text
    assert 'class="small live-quote"' in html
    assert "$2,190.00" in html and "$3.04" in html and "$3.00" in html and "720 h" in html
    assert 'href="/quote?offering=h100-sxm-1x-vm&amp;term=1month"' in html


def test_an_offerings_preset_links_the_catalog_page_with_its_filter(client: TestClient) -> None:
    html = client.get("/glossary/nvl72").text
    assert 'href="/catalog?gpu=gb200"' in html and "anchorgpu offerings --gpu gb200" in html
    listed = html.split('class="small listed-offerings"', 1)[1].split("</ul>", 1)[0]
    assert "gb200-4x-bm" in listed and "NVL72" in listed and "h100" not in listed
    catalog = client.get("/catalog", params={"gpu": "gb200"})
    assert catalog.status_code == 200 and "gb200-4x-bm" in catalog.text


def test_the_russian_entry_page_labels_the_presets_in_russian(client: TestClient) -> None:
    html = client.get("/glossary/gpu-hour", params={"lang": "ru"}).text
    assert "Рассчитать эту стоимость" in html and "Цена по каталогу сейчас" in html


def test_the_cli_card_lists_the_preset_pages(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "glossary", "included-egress")
    assert code == 0 and "/quote?offering=h100-sxm-8x-bm&term=3month" in out


# --- MIG-style names ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["h100 mig 1g.10gb", "A100-MIG-3g.40gb", "1g.10gb", "l40s vgpu", "h100 time-slicing"])
def test_a_mig_style_gpu_name_gets_the_whole_gpu_reason_in_one_line(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", name)
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "whole GPUs only" in err and "unknown GPU" not in err


def test_the_mig_refusal_names_the_whole_gpu_to_ask_for(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(capsys, "gpus", "h100 mig 1g.10gb")
    assert "ask for the whole GPU instead: h100-sxm" in err


def test_the_api_refuses_a_mig_profile_with_422_and_the_code_the_glossary_explains(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100 mig 1g.10gb"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["code"] == "partial_gpu_not_offered" and "whole GPUs only" in r.json()["detail"]
    from anchorgpu.glossary import entry_for_code

    entry = entry_for_code("partial_gpu_not_offered")
    assert entry is not None and entry.id == "whole-gpus-only"
    assert client.get("/v1/gpus/h100 mig 1g.10gb").status_code == 422


def test_real_gpu_names_still_resolve() -> None:
    from anchorgpu.hardware import get_gpu

    assert get_gpu("NVIDIA H100 SXM 80GB").name == "h100-sxm" and get_gpu("mi300x").name == "mi300x"


# --- Russian card and Cyrillic detection ------------------------------------------------------------------

def test_a_cyrillic_query_without_lang_answers_with_the_russian_card_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "glossary", "голое железо")
    assert code == 0
    assert "кириллицей" in out and get_entry("bare-metal").term.ru in " ".join(out.split())
    assert "Другие названия" in out and "Also called" not in out


def test_a_latin_query_stays_english_and_lang_en_overrides_detection(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "glossary", "fsdp")
    assert "Also called" in out and "кириллицей" not in out
    _, out, _ = run(capsys, "glossary", "кэш KV", "--lang", "en")
    assert "Also called" in out and "кириллицей" not in out


def test_the_json_of_a_cyrillic_query_is_unchanged_by_detection(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "glossary", "фп8", "--json")
    assert code == 0 and json.loads(out)[0]["id"] == "fp8"


def test_level_and_stages_are_russian_on_the_russian_card(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "glossary", "gpu", "--lang", "ru")
    assert "Уровень: базовый" in out and "foundational" not in out
    assert "обучение, инференс, развёртывание" in out
    assert "gpu · оборудование" in out and "hardware" not in out.split("Теги")[0]


def test_the_card_labels_exist_in_both_languages() -> None:
    from anchorgpu.cli.glossary import _LABELS

    assert set(_LABELS["en"]) == set(_LABELS["ru"])
    assert all(_LABELS["ru"][k] != _LABELS["en"][k] for k in ("level", "foundational", "training", "detected"))


def test_the_api_detects_a_cyrillic_query_and_returns_claims_and_the_disclaimer(client: TestClient) -> None:
    body = client.get("/v1/glossary", params={"q": "шардирование"}).json()
    assert body["lang"] == "ru" and body["data"][0]["id"] == "fsdp"
    assert body["data"][0]["disclaimer"]["ru"] == DEFINITION_CAVEAT.ru
    assert client.get("/v1/glossary", params={"q": "шардирование", "lang": "en"}).json()["lang"] == "en"
    assert client.get("/v1/glossary", params={"q": "fsdp"}).json()["lang"] == "en"
    entry = client.get("/v1/glossary/nvl72").json()
    assert entry["claims"][0]["run"] == ["offerings", "--gpu", "gb200"]
    assert entry["try_it"]["preset_urls"] == ["/catalog?gpu=gb200"]
