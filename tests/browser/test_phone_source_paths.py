"""The planner page's words stay inside their boxes. On a 390 px phone an assumption or check that cites a source
path wider than the column (``vllm/model_executor/models/mllama.py).``,
``(docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md,``) breaks inside the path instead of pushing
the page sideways (it scrolled 395 and 447 px wide); on a laptop a form label keeps to its column."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = (
    "/plan?model=llama-3.2-11b-vision&gpu=h100-sxm&concurrency=64&images=1",  # mllama's cross-attention line
    "/plan?model=deepseek-r1&gpu=h200&prompt=1000&output_tokens=1000&concurrency=512",  # attention data parallelism
)


@pytest.mark.parametrize("lang", ("en", "ru"))
def test_no_plan_sentence_pushes_a_phone_page_sideways(browser: Any, open_page: Any, server: str, lang: str) -> None:
    context, page = open_page(browser, 390, timeout_ms=30_000)
    try:
        for path in PAGES:
            page.goto(f"{server}{path}&lang={lang}")
            assert page.locator("#verdict").count() == 1, path
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{path}: the page is {width} px wide"
    finally:
        context.close()


@pytest.mark.parametrize("lang", ("en", "ru"))
def test_no_form_label_runs_out_of_its_column_on_a_laptop(browser: Any, open_page: Any, server: str, lang: str) -> None:
    """An engine setting's name in a label (``max_num_batched_tokens``) is one word wider than the form's 170 px
    column: it breaks inside its label rather than running into the next field."""
    context, page = open_page(browser, 1366)
    try:
        page.goto(f"{server}/plan?lang={lang}")
        page.click("details.more summary")
        over = page.evaluate("""() => [...document.querySelectorAll('.fields label')]
            .filter(l => l.getClientRects().length && l.scrollWidth > l.clientWidth + 1).map(l => l.textContent.trim())""")
        assert over == []
    finally:
        context.close()
