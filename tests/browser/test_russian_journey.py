"""Issue 14, item 6 in headless Chromium: the Russian journey at 390 px and 1280 px against a real ``anchorgpu serve``.

A browser set to Russian (its ``Accept-Language``, nothing chosen on the site) signs up, plans, opens the catalog,
quotes, books, opens the allocation and its extension price, extends, and reads the glossary. On every page: the
page is Russian, no text runs out of its box or off the screen (Russian words are longer than English ones) and no
text is drawn below 11 px. Screenshots go to $ANCHORGPU_SHOTS (or the test's tmp dir).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (390, 1280)


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("ANCHORGPU_SHOTS", str(tmp_path)))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# Every visible element that holds text of its own: is it below 11 px, does its text run past its own box, does it
# reach past the screen's right edge? Text inside a horizontally scrolling table (.table-wrap), code and pre is
# allowed past the screen: it scrolls in its own frame, which itself must fit the screen.
_LAYOUT = """() => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  const scrolls = (e) => e.closest('.table-wrap, pre, .copyable');
  for (const e of document.body.querySelectorAll('*')) {
    const style = getComputedStyle(e);
    if (style.display === 'none' || style.visibility === 'hidden' || e.closest('svg, script, style, datalist, select, option')) continue;
    const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const box = e.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    const text = e.textContent.trim().slice(0, 60);
    const size = parseFloat(style.fontSize);
    if (size < 11) problems.push(`${size}px: ${text}`);
    if (!scrolls(e) && e.scrollWidth > e.clientWidth + 1 && style.overflowX !== 'auto' && style.overflowX !== 'scroll'
        && getComputedStyle(e).display !== 'inline') problems.push(`overflows its box (${e.scrollWidth} > ${e.clientWidth}): ${text}`);
    if (!scrolls(e) && box.right > width + 1) problems.push(`past the screen (${Math.round(box.right)} > ${width}): ${text}`);
  }
  for (const frame of document.querySelectorAll('.table-wrap, pre')) {
    const box = frame.getBoundingClientRect();
    if (box.width && box.right > width + 1) problems.push(`scroll frame past the screen: ${frame.className || frame.tagName}`);
  }
  if (document.documentElement.scrollWidth > width + 1) problems.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
  return problems;
}"""


def _check(page: Any, shots: Path, name: str, width: int, *russian: str) -> None:
    assert page.get_attribute("html", "lang") == "ru", page.url
    body = page.inner_text("body")
    for text in russian:
        assert text in body, (name, text)
    problems = page.evaluate(_LAYOUT)
    page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
    height = page.evaluate("() => document.documentElement.scrollHeight")
    for part, top in enumerate(range(0, height, 1200), start=1):  # the long pages in screen-sized parts, to look at
        page.screenshot(path=str(shots / f"{name}-{width}-part{part}.png"), full_page=True,
                        clip={"x": 0, "y": top, "width": width, "height": min(1200, height - top)})
    assert problems == [], (name, width, problems)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_russian_journey_reads_well_at_phone_and_laptop_widths(browser: Any, open_page: Any, server: str, tmp_path: Path, width: int,
                                                                  planner_form: Any) -> None:
    shots = _shots(tmp_path)
    context, page = open_page(browser, width, timeout_ms=20_000, locale="ru-RU")
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{server}/")
        _check(page, shots, "home", width, "Рассчитать нагрузку", "Арендовать мощности")

        page.goto(f"{server}/catalog?gpu=h100&sort=-memory")
        page.click("#signin-link")  # from any page, the header's button
        _check(page, shots, "signin", width, "Впервые здесь?", "Создать учётную запись")
        page.fill("#name", f"тестер {width}")
        page.click("#signup-submit")
        assert page.inner_text("#api-key").strip().startswith("agpu_")
        _check(page, shots, "signup-done", width, "только один раз", "Вернуться туда, где вы были")
        page.click("#continue")
        page.wait_for_url(re.compile(r"/catalog\?gpu=h100&sort=-memory$"))  # back where the visitor was

        planner_form(page, server)
        page.wait_for_function("() => (document.querySelector('#verdict') || {}).innerText?.startsWith('Помещается')")
        page.wait_for_selector("#formats-table")
        _check(page, shots, "plan", width, "Время до первого токена", "Все форматы весов на этом GPU", "Что проверить самостоятельно")

        page.goto(f"{server}/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=1&context=8192")
        _check(page, shots, "plan-nofit", width, "Не помещается", "Что поместится", "Не прогнозируется")

        page.goto(f"{server}/recommend?model=llama-3.1-8b&context=8192&top=5")
        _check(page, shots, "recommend", width, "Цена и скорость", "Фронт Парето")
        if width >= 1280:  # as in English: the whole table, memory column included, shows without scrolling on a laptop
            client_px, scroll_px = page.eval_on_selector("#recommendations", "e => [e.parentElement.clientWidth, e.scrollWidth]")
            assert scroll_px <= client_px

        page.goto(f"{server}/catalog?gpu=h100&kind=vm")
        _check(page, shots, "catalog", width, "Только целые GPU", "$/GPU-ч")
        page.locator("#offerings a.button").first.click()
        page.wait_for_url(re.compile(r"/quote\?offering="))
        page.fill("#f-term", "2w")
        page.wait_for_function("() => (document.querySelector('#quote-preview') || {}).innerText?.includes('2 недели')")
        _check(page, shots, "quote-builder", width, "Расчёт цены", "Итого за срок", "2 недели")
        page.fill("#f-term", "1month")
        page.click("#quote-submit")
        page.wait_for_url(re.compile(r"/quotes/q_[0-9a-f]+$"))
        _check(page, shots, "quote", width, "Расчёт стоимости", "Итого — вся цена за срок", "Больше ничего не оплачивается")
        total = page.inner_text("#quote-total")
        assert re.fullmatch(r"[\d\s]+,\d\d\s\$", total), total  # 2 190,00 $

        page.click("#book-submit")
        page.wait_for_url(re.compile(r"/my/allocations/al_[0-9a-f]+$"))
        allocation_url = page.url
        assert "Забронировано" in page.inner_text(".flash")
        assert page.inner_text("#state") == "активна"
        _check(page, shots, "allocation", width, "Оплаченный срок", "История", "Продлить…")

        page.select_option("#extend-form select[name=term]", "1w")
        page.click("#extend-submit")
        page.wait_for_url(re.compile(r"/extend\?term=1w$"))
        _check(page, shots, "extend-confirm", width, "Цена продления", "Пока ничего не списано")
        assert page.inner_text("#extend-confirm").startswith("Оплатить ")
        page.click("#extend-confirm")
        page.wait_for_url(allocation_url)
        assert "Продлено" in page.inner_text(".flash")

        page.click("#stop-submit")
        page.wait_for_url(allocation_url)
        assert page.inner_text("#state") == "остановлена"
        _check(page, shots, "allocation-stopped", width, "Остановка не приостанавливает оплаченный срок")

        page.goto(f"{server}/my/allocations")
        _check(page, shots, "allocations", width, "Мои аренды")

        page.goto(f"{server}/gpus/compare?a=h200&b=h100-sxm")
        _check(page, shots, "gpu-compare", width, "Прогноз на эталонных нагрузках")

        page.goto(f"{server}/glossary")
        page.fill("#glossary-q", "кэш KV")
        page.press("#glossary-q", "Enter")
        page.wait_for_selector("#glossary-results")
        _check(page, shots, "glossary-search", width, "Результаты по запросу")
        page.click("#glossary-results li:first-child a")
        page.wait_for_url(re.compile(r"/glossary/kv-cache"))
        _check(page, shots, "glossary-entry", width, "Попробовать", "Связанные понятия")

        page.goto(f"{server}/nowhere")
        _check(page, shots, "error", width, "Не найдено", "На главную")
    finally:
        context.close()
    assert errors == []
