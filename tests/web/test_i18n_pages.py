"""Issue 14, item 6: every page and partial in Russian through the message catalogue.

Two checks. (1) Babel's extractor, run as ``src/anchorgpu/web/babel.cfg`` describes over the templates and the web
modules, finds no message id without a Russian translation (and no fuzzy one). (2) Every page, signed out and signed
in (a booked allocation, its extension price, a stop, an error page, a glossary entry, a GPU comparison …), asked
for with ``?lang=ru`` and with ``Accept-Language: ru``, is Russian: its text (outside what is marked ``lang="en"``:
the planner's and the API's own English sentences) contains none of the catalogue's English phrases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po
from fastapi.testclient import TestClient

WEB = Path(str(resources.files("anchorgpu.web")))


def _extracted() -> set[tuple[str | None, str]]:
    """(context, id) of every message Babel extracts with babel.cfg's own mapping (templates and Python)."""
    with (WEB / "babel.cfg").open() as handle:
        method_map, options_map = parse_mapping_cfg(handle)
    found = extract_from_dir(str(WEB), method_map=method_map, options_map=options_map)
    return {(context, message if isinstance(message, str) else message[0]) for _, _, message, _, context in found}


def _catalogue() -> Any:
    with (WEB / "locale" / "ru" / "LC_MESSAGES" / "messages.po").open("rb") as handle:
        return read_po(handle, locale="ru")


def test_every_message_of_the_templates_and_the_web_code_has_a_russian_translation() -> None:
    extracted = _extracted()
    # the extraction reaches the Python side too (flash messages, error titles, form errors), not only templates
    assert {(None, "This booking was already made; nothing was bought twice."), (None, "Not found"),
            ("allocation state", "stopped"), (None, "%(num)d week")} <= extracted
    catalogue = {(m.context, m.id if isinstance(m.id, str) else m.id[0]): m for m in _catalogue() if m.id}
    missing = sorted(message for context, message in extracted if (context, message) not in catalogue)
    assert missing == []
    untranslated = sorted(str(key) for key in extracted
                          if not all(catalogue[key].string if isinstance(catalogue[key].string, tuple) else (catalogue[key].string,)))
    assert untranslated == []
    assert sorted(str(key) for key in extracted if catalogue[key].fuzzy) == []
    plural = catalogue[(None, "%(num)d week")].string
    assert isinstance(plural, tuple) and len(plural) == 3 and len(set(plural)) == 3  # неделя / недели / недель


# -- the pages -------------------------------------------------------------------------------------

class _Text(HTMLParser):
    """The text a reader meets (text nodes, title/placeholder/aria-label/data-confirm attributes), leaving out
    code, scripts and whatever is marked ``lang="en"`` (English on purpose: the planner's and the API's words)."""

    SKIP = {"script", "style", "code", "pre"}
    VOID = {"input", "br", "img", "meta", "link", "hr", "source", "col", "area", "base", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # per open element: is its text left out
        self.parts: list[str] = []

    def _skipping(self) -> bool:
        return any(self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        skip = tag in self.SKIP or (values.get("lang") == "en" and tag != "html") or "hreflang" in values
        if not self._skipping() and not skip:
            self.parts.extend(str(values[name]) for name in ("title", "placeholder", "aria-label", "data-confirm", "label")
                              if values.get(name))
        if tag not in self.VOID:
            self.stack.append(skip)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not self._skipping():
            self.parts.append(data)


def reader_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ".join(" ".join(parser.parts).split())


def _english_phrases() -> list[str]:
    """The catalogue's English phrases of three words or more whose Russian differs: none may show on a Russian page."""
    phrases = set()
    for message in _catalogue():
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        for text in ids:
            if not text:
                continue
            for piece in re.split(r"%\(\w+\)[sd]", text):
                piece = piece.strip(" .,:;()—–")
                if len(piece.split()) >= 3:
                    phrases.add(piece)
    return sorted(phrases)


ENGLISH = _english_phrases()


def _english_words() -> set[str]:
    """Every whole English message id whose Russian differs ("Catalog", "Stop", "GPU memory")."""
    words = set()
    for message in _catalogue():
        if message.id and not isinstance(message.id, tuple) and "%(" not in message.id and message.string != message.id:
            words.add(message.id)
    return words


WORDS = _english_words()
_LABELS = re.compile(r"<(h1|h2|h3|th|dt|button|summary|label|a|option)\b[^>]*>(.*?)</\1>", re.S)


def english_labels(html: str) -> list[str]:
    """Headings, buttons, labels, links and options whose whole text is one of the catalogue's English ids."""
    found = []
    for match in _LABELS.finditer(html):
        if match.group(0).startswith('<a href="/glossary/'):
            continue  # an entry's own name (the glossary's "TDP" entry is called TDP in both languages)
        text = " ".join(re.sub(r"<[^>]+>", " ", match.group(2)).split())
        if text in WORDS:
            found.append(text)
    return found


def assert_russian(html: str, *expected: str) -> None:
    assert '<html lang="ru">' in html
    text = reader_text(html)
    assert len(re.findall("[а-яё]", text, re.I)) > 40, text[:300]
    for phrase in expected:
        assert " ".join(phrase.split()) in text, (phrase, text[:2000])
    leaked = [phrase for phrase in ENGLISH if phrase in text]
    assert leaked == [], (leaked, text[:3000])
    assert english_labels(html) == []


def test_the_reader_text_leaves_out_what_is_marked_english() -> None:
    html = '<p>Один <span lang="en">Stopping does not pause</span> <input placeholder="Два"><code>three words here</code></p>'
    assert reader_text(html) == "Один Два"
    assert "Stopping an allocation does not pause the paid term" in ENGLISH  # a phrase from the web code, not a template


def test_the_english_pages_are_what_the_check_would_catch(client: TestClient) -> None:
    """The check can fail: the same pages in English show many of the catalogue's phrases."""
    for url in ("/plan?model=llama-3.1-70b&gpu=h100&gpus=1", "/catalog", "/glossary/kv-cache"):
        html = client.get(url + ("&" if "?" in url else "?") + "lang=en").text
        assert len([phrase for phrase in ENGLISH if phrase in reader_text(html)]) >= 3, url
        assert {"Catalog", "Planner", "Glossary"} <= set(english_labels(html))


Ask = Callable[..., Any]


@pytest.fixture(params=["query", "header"])
def ask(request: pytest.FixtureRequest, client: TestClient) -> Iterator[Ask]:
    """GET/POST in Russian: with ``?lang=ru`` on the first page (the switch, then remembered in the cookie), or with
    ``Accept-Language: ru`` on every request and no choice made."""
    if request.param == "query":
        assert client.get("/?lang=ru").status_code == 200

        def call(method: str, url: str, **kw: Any) -> Any:
            return client.request(method, url, **kw)
    else:
        def call(method: str, url: str, **kw: Any) -> Any:
            return client.request(method, url, headers={"Accept-Language": "ru-RU,ru;q=0.9,en;q=0.5"}, **kw)
    yield call
    if request.param == "header":
        assert "anchorgpu_lang" not in client.cookies  # a browser's preference is not a choice: nothing stored


def _token(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)  # type: ignore[union-attr]


def _key(html: str, action: str) -> str:
    return re.search(rf'/{action}".*?name="idempotency_key" value="([^"]+)"', html, re.S).group(1)  # type: ignore[union-attr]


SIGNED_OUT = [
    ("/", "Рассчитать нагрузку"),
    ("/signin", "Создать учётную запись"),
    ("/plan", "Поместится ли?"),
    ("/plan?model=llama-3.1-8b&gpu=h100&context=8192&concurrency=16", "Время до первого токена"),
    ("/plan?model=llama-3.1-70b&gpu=h100&gpus=1", "Что поместится"),
    ("/plan?model=llama-2-7b&task=train&gpu=h200&gpus=8&tokens=1e10", "Один шаг"),
    ("/plan?model=llama-3.1-8b&context=4096", "На каких GPU это помещается"),
    ("/plan?model=llama-3.1-8b&recipe=vllm", "Копировать"),
    ("/plan?model=llama-3.1-8b&gpus=abc", "Планировщик"),
    ("/recommend?model=llama-3.1-8b&context=8192&top=3", "Цена и скорость"),
    ("/recommend?model=llama-3.1-8b&task=train&gpu=h100-sxm&gpus=8&tokens=1e9&term=1w&top=3", "Токенов обучения/с"),
    ("/catalog", "Только целые GPU"),
    ("/catalog?min_gpus=0", "Минимальное число GPU"),
    ("/gpus", "Пропускная способность"),
    ("/gpus/compare?a=h200&b=h100-sxm", "Прогноз на эталонных нагрузках"),
    ("/gpus/compare?a=b300&b=b200", "Отношение"),
    ("/glossary", "По видам"),
    ("/glossary?q=кэш+KV", "Результаты по запросу"),
    ("/glossary?q=zzzzqqq", "Ничего не нашлось"),
    ("/glossary/kv-cache", "Попробовать"),
    ("/glossary/hbm3e", "Сравнение GPU"),
    ("/glossary/comparison-month-730", "Цена по каталогу сейчас"),
    ("/glossary/errors", "Коды ошибок и предупреждений"),
]


@pytest.mark.parametrize(("url", "expected"), SIGNED_OUT)
def test_every_page_signed_out_is_russian(ask: Ask, url: str, expected: str) -> None:
    page = ask("GET", url)
    assert page.status_code in (200, 422), page.text[:500]
    assert_russian(page.text, expected)


@pytest.mark.parametrize(("url", "status", "expected"), [
    ("/nowhere", 404, "Страницы /nowhere нет."),
    ("/glossary/no-such-entry", 404, "Не найдено"),
    ("/gpus/compare?a=h2000&b=h100", 404, "Сравнение GPU"),
])
def test_error_pages_are_russian(ask: Ask, url: str, status: int, expected: str) -> None:
    page = ask("GET", url)
    assert page.status_code == status
    assert_russian(page.text, expected)


def test_a_form_sent_without_its_token_is_refused_in_russian(ask: Ask) -> None:
    page = ask("POST", "/signup", data={"name": "x"})
    assert page.status_code == 403
    assert_russian(page.text, "Доступ запрещён", "Защитный токен формы не совпал")


def test_the_signed_in_journey_is_russian(ask: Ask) -> None:
    """Sign up, quote, book, the allocation, its extension price, extend, stop, the list: every page in Russian."""
    signin = ask("GET", "/signin?next=/quote%3Foffering%3Dh100-sxm-1x-vm")
    done = ask("POST", "/signup", data={"csrf_token": _token(signin.text), "name": "русский тестер",
                                        "next": "/quote?offering=h100-sxm-1x-vm"})
    assert done.status_code == 201
    assert_russian(done.text, "Учётная запись «русский тестер» создана", "Вернуться туда, где вы были")
    builder = ask("GET", "/quote?offering=h100-sxm-1x-vm&term=2w")
    assert_russian(builder.text, "Итого за срок", "2 недели", "проброшен весь GPU")
    preview = ask("GET", "/quote/preview?offering=h100-sxm-1x-vm&quantity=1&term=5w")
    assert "5 недель" in reader_text(preview.text) and "Итого за срок" in reader_text(preview.text)
    bad_preview = ask("GET", "/quote/preview?offering=h100-sxm-1x-vm&quantity=1.5&term=1w")
    assert "Цена пока не рассчитана" in reader_text(bad_preview.text)
    token = _token(builder.text)
    made = ask("POST", "/quote", data={"csrf_token": token, "offering": "h100-sxm-1x-vm", "quantity": "1", "term": "1month"},
               follow_redirects=False)
    assert made.status_code == 303
    quote = ask("GET", made.headers["location"])
    assert_russian(quote.text, "Расчёт стоимости", "1 месяц", "Забронировать за 2\xa0190,00\xa0$", "Больше ничего не оплачивается")
    booked = ask("POST", made.headers["location"] + "/book", data={"csrf_token": token, "idempotency_key": _key(quote.text, "book")},
                 follow_redirects=False)
    allocation_url = booked.headers["location"]
    allocation = ask("GET", allocation_url)
    assert_russian(allocation.text, "Забронировано: аренда", "активна", "Оплаченный срок", "История", "создана")
    assert re.search(r'id="ends-at">\d{1,2}\s[а-я]+\.?\s\d{4}\sг\.,\s\d\d:\d\d\sUTC<', allocation.text), "a Russian date"
    assert_russian(ask("GET", allocation_url + "?kind=vllm&model=llama-3.1-8b").text, "Запуск")
    confirm = ask("GET", allocation_url + "/extend?term=1w")
    assert_russian(confirm.text, "Цена продления", "Пока ничего не списано", "1 неделя", "свободен на добавляемый период")
    from babel.numbers import format_currency

    from anchorgpu.catalog import load_catalog

    week_usd = load_catalog().offering("h100-sxm-1x-vm").prices_usd.week
    assert f"Оплатить {format_currency(week_usd, 'USD', locale='ru')} и продлить" in confirm.text  # 547,00 $
    bad_term = ask("GET", allocation_url + "/extend?term=9d")
    assert bad_term.status_code == 422 and '<html lang="ru">' in bad_term.text
    extended = ask("POST", allocation_url + "/extend", data={"csrf_token": token, "idempotency_key": _key(confirm.text, "extend"),
                                                            "term": "1w", "expected_total_usd": str(week_usd)}, follow_redirects=False)
    assert extended.status_code == 303
    assert_russian(ask("GET", allocation_url).text, "Продлено: теперь аренда заканчивается")
    page = ask("GET", allocation_url)
    ask("POST", allocation_url + "/stop", data={"csrf_token": token, "idempotency_key": _key(page.text, "stop")})
    stopped = ask("GET", allocation_url)
    assert_russian(stopped.text, "Остановлено. Остановка не приостанавливает оплаченный срок", "остановлена", "Запустить")
    listing = ask("GET", "/my/allocations")
    assert_russian(listing.text, "Мои аренды", "остановлена")


def test_a_failed_sign_in_is_explained_in_russian(ask: Ask) -> None:
    page = ask("GET", "/signin")
    refused = ask("POST", "/signin", data={"csrf_token": _token(page.text), "api_key": "agpu_nothing"})
    assert refused.status_code == 401
    assert_russian(refused.text, "Этот API-ключ не подходит ни к одной учётной записи.")


def test_numbers_dates_and_terms_follow_the_locale(client: TestClient) -> None:
    english = client.get("/gpus?lang=en").text
    russian = client.get("/gpus?lang=ru").text
    assert "3,350 GB/s" in english and "3\xa0350 GB/s" in russian  # H100 SXM bandwidth, grouped per locale
    plan = client.get("/plan?model=llama-3.1-8b&gpu=h100&context=8192&concurrency=16&lang=ru").text
    assert re.search(r"<strong>0,\d{3}</strong> с", plan)  # time to first token with a decimal comma
    from anchorgpu.web.wording import Wording

    ru = Wording("ru")
    assert [ru.term(f"{n}month") for n in (1, 2, 5, 21)] == ["1 месяц", "2 месяца", "5 месяцев", "21 месяц"]
    assert Wording("en").term({"unit": "hour", "count": 1}) == "1 hour" and ru.term("soon") == "soon"


def test_the_api_stays_english_whatever_the_browser_prefers(client: TestClient) -> None:
    russian = {"Accept-Language": "ru", "Cookie": "anchorgpu_lang=ru"}
    problem = client.get("/v1/allocations/al_nothing", headers=russian)
    assert problem.status_code in (401, 404) and re.fullmatch(r"[ -~]+", problem.json()["detail"])
    quote = client.post("/v1/quotes", headers=russian, json={"offering": "h100-sxm-1x-vm", "quantity": 1, "term": "1w"})
    assert quote.status_code in (201, 401)
    assert client.get("/openapi.json", headers=russian).json()["info"]["title"].isascii()


def test_a_domain_refusal_and_a_form_error_are_both_russian(client: TestClient) -> None:
    """The planner's refusals are the CLI's and the API's lines, rendered on a Russian page from their message ids in
    Russian (stop 60, faces60: they were English marked lang="en"; tests/web/test_refusals_in_russian.py)."""
    mig = client.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100 mig 1g.10gb", "lang": "ru"})
    assert mig.status_code == 422
    assert re.search(r'id="plan-error">[^<]*AnchorGPU сдаёт только целые GPU[^<]*; вместо этого укажите целый GPU: '
                     r'h100-sxm', mig.text)
    form = client.get("/plan", params={"model": "llama-3.1-8b", "gpus": "0", "lang": "ru"})
    message = re.search(r'id="plan-error"( lang="en")?>([^<]*)<', form.text)
    assert message and message.group(1) is None and "не меньше 1" in message.group(2)
    english = client.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100 mig 1g.10gb", "lang": "en"})
    assert 'id="plan-error">' in english.text  # an English page needs no mark


def test_the_language_switch_of_a_page_that_answers_a_form_leads_somewhere_that_exists(client: TestClient) -> None:
    signin = client.get("/signin?lang=ru").text
    done = client.post("/signup", data={"csrf_token": _token(signin), "name": "switcher"})
    assert done.status_code == 201
    switch = re.search(r'id="language-switch">(.*?)</nav>', done.text, re.S).group(1)  # type: ignore[union-attr]
    english = re.search(r'href="([^"]+)" hreflang="en"', switch).group(1)  # type: ignore[union-attr]
    assert english == "/?lang=en" and client.get(english).status_code == 200  # not GET /signup: 405
    refused = client.post("/signin", data={"csrf_token": _token(client.get("/signin").text), "api_key": "agpu_nothing"})
    assert 'href="/signin?lang=en" hreflang="en"' in refused.text  # the sign-in form is there to GET again


def test_the_plan_page_says_how_the_model_did_on_this_gpu_in_both_languages(client: TestClient) -> None:
    """The evidence row (performance.evidence): RTX PRO 6000's held-out runs (TensorRT-LLM perf-overview, commit
    00f3768) with their median, and a GPU without any measured run saying so."""
    query = "/plan?model=llama-3.1-8b&gpu={gpu}&prompt=1000&output_tokens=200&concurrency=16&lang={lang}"
    en = client.get(query.format(gpu="rtx-pro-6000", lang="en")).text
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.calibration import calibration

    evidence, _ = calibration().serving_evidence(get_gpu("rtx-pro-6000"), "serve", "vllm")
    assert evidence is not None
    median = evidence.median  # 1.10 since stop 52's FP4 product rate of the card (1.31 at stop 47's refit)
    assert median > 1.05  # the table's runs are faster than predicted on this card
    assert "Measured on this GPU" in en and f"held-out runs: median {median:.2f}× the predicted speed" in en
    ru = client.get(query.format(gpu="rtx-pro-6000", lang="ru")).text
    assert "Измерено на этом GPU" in ru and f"прогонов вне подгонки: медиана {median:.2f}×".replace(".", ",") in ru
    none = client.get(query.format(gpu="l4", lang="en")).text
    assert "no run in the calibration set: the band rests on other GPUs" in none
    # the band those runs widened (Band.holding: CUDA's band around their median too), said in both

    cal, rtx = calibration(), get_gpu("rtx-pro-6000")
    wide, stack = cal.band_for(rtx, "serve", None, "vllm"), cal.band(rtx, "serve")
    assert wide.high > 1.2 > stack.high
    assert (f"band widened to {wide.low:.2f}×–{wide.high:.2f}× of the prediction to hold them (the stack's: "
            f"{stack.low:.2f}×–{stack.high:.2f}×)") in en
    assert f"полоса расширена до {wide.low:.2f}×–{wide.high:.2f}× от прогноза".replace(".", ",") in ru
    assert "band widened" not in none


def test_the_recommend_page_lists_the_measured_runs_behind_its_rows(client: TestClient) -> None:
    """Each shown GPU's evidence once (L40S its six held-out rows from TensorRT-LLM's 2023 page, MI300X its 17),
    headed in both languages."""
    query = "/recommend?model=llama-3.1-70b&task=inference&term=1month&context=8192&concurrency=32&top=3&lang={lang}"
    en = client.get(query.format(lang="en")).text
    assert "Measured runs behind these speeds" in en
    assert en.count("on mi300x, 17 held-out vLLM dense-model serving runs") == 1
    assert en.count("on l40s, 6 held-out dense-model serving runs") == 1
    assert "Измеренные прогоны за этими скоростями" in client.get(query.format(lang="ru")).text
