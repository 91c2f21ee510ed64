"""The maximum length to start the engine with (a row's ``max_model_len_tokens``, shown under its layout, and the
note under the table) fits on a laptop and on a phone, in English and Russian: on a 1366 px screen the
recommendations keep every column without scrolling, as they did without it (tests/browser/test_journeys.py); on a
390 px phone the page never scrolls sideways (the table scrolls in its own frame) and the note wraps in its box."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# no --context: llama-3.1-8b's cheapest rows (the RTX 4090 first, README) hold no whole 131,072-token window
PATH = "/recommend?model=llama-3.1-8b&term=1month"

_CELLS = """() => [...document.querySelectorAll('#recommendations .max-model-len')].map(e => {
  const cell = e.closest('td').getBoundingClientRect(), own = e.getBoundingClientRect();
  const flag = e.querySelector('.flag').getClientRects().length;  // one box: the option never breaks at its hyphens
  return [e.textContent, own.left >= cell.left - 1 && own.right <= cell.right + 1 && flag === 1];
})"""


@pytest.mark.parametrize("lang", ("en", "ru"))
@pytest.mark.parametrize("width", (1366, 390))
def test_the_length_to_start_with_fits_a_laptop_and_a_phone(browser: Any, open_page: Any, server: str, width: int,
                                                            lang: str) -> None:
    context, page = open_page(browser, width, timeout_ms=30_000)
    try:
        page.goto(f"{server}{PATH}&lang={lang}")
        cells = page.evaluate(_CELLS)
        assert cells and all(inside for _, inside in cells), cells
        assert cells[0][0].startswith("--max-model-len")
        note = page.locator("#max-model-len-note")
        assert note.is_visible()
        assert note.evaluate("e => e.scrollWidth <= e.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        if width >= 1366:  # every column shows without scrolling on a laptop
            client_px, scroll_px = page.eval_on_selector(".table-wrap", "e => [e.clientWidth, e.scrollWidth]")
            assert scroll_px <= client_px, f"the table is {scroll_px} px wide in {client_px} px"
    finally:
        context.close()
