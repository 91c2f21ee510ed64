"""A plan's assumptions, checks and warnings in the page's language (stop 61, faces61; stop 60 left them English,
marked ``lang="en"``): the planner writes the common lines with ``said`` (``anchorgpu.errors``), the English the CLI
and the API print unchanged, and the page renders each through ``messages.po`` (``anchorgpu.web.refusals.page_line``);
a line without Russian stays English, marked on its own item."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

from anchorgpu.errors import Said

# README's first journey: Llama 3.1 70B for 32 users at 8k context on one 8 x H100 server
SERVE_70B = {"model": "llama-3.1-70b", "context": "8192", "concurrency": "32", "gpu": "h100", "gpus": "8"}
# its chat journey: 1,000-token prompts, 200-token answers, 64 users on one H100
CHAT_8B = {"model": "llama-3.1-8b", "gpu": "h100", "prompt": "1000", "output_tokens": "200", "concurrency": "64"}
# its pre-training journey: 7B on 64 H200, ZeRO-1, 1T tokens
TRAIN_7B = {"model": "llama-2-7b", "task": "train", "gpu": "h200", "gpus": "64", "zero": "1", "tokens": "1e12"}


def _items(page: str, ident: str) -> list[tuple[bool, str]]:
    """(marked English, text) of each item of the list ``ident`` on ``page``."""
    block = re.search(rf'<ul[^>]*id="{ident}"[^>]*>(.*?)</ul>', page, re.S)
    assert block, ident
    return [('lang="en"' in attrs, " ".join(html.unescape(re.sub(r"<[^>]+>", "", inner)).split()))
            for attrs, inner in re.findall(r"<li([^>]*)>(.*?)</li>", block.group(1), re.S)]


def test_the_first_journeys_assumptions_checks_and_warning_are_russian(client: TestClient) -> None:
    page = client.get("/plan", params={**SERVE_70B, "lang": "ru"}).text
    assumed = _items(page, "assumptions")
    assert all(not english for english, _ in assumed), assumed  # every line of this plan has its Russian
    texts = [t for _, t in assumed]
    assert "Веса хранятся в bf16 (по умолчанию для задачи inference)." in texts
    assert "Раскладка не задана: инференс делится по TP между GPU одного сервера (TP 8, PP 1, DP 1)." in texts
    # vLLM's defaults (vllm/engine/arg_utils.py: gpu_memory_utilization 0.9, block_size 16), the number as the page
    # writes numbers
    assert ("Движок инференса рассчитан как vLLM: max_num_batched_tokens 8192, max_num_seqs 1024, "
            "gpu_memory_utilization 0,9, блок KV — 16 токенов.") in texts
    checks = _items(page, "checks")
    assert checks and all(not english for english, _ in checks), checks
    assert any(t.startswith("Убедитесь, что ваш движок инференса или фреймворк обучения поддерживает тензорный "
                            "параллелизм") for _, t in checks), checks
    warnings = _items(page, "warnings")
    assert warnings[0] == (False, "тензорный параллелизм на 8 GPU (Тензорный параллелизм) tp_requires_engine_support")
    speed = _items(page, "speed-assumptions")
    assert speed[0][0] is False and speed[0][1].startswith(
        "инференс: 32 одновременных запроса по 1 024 токена промпта + 256 токенов вывода"), speed[0]
    # calibration.json's caveats, said with their figures as fields since stop 63 (ru63): the serving ones are Russian
    assert any(not english and t.startswith("Время до первого токена: это собственное время движка") for english, t
               in speed), speed


def test_the_chat_and_training_journeys_say_their_lengths_and_overheads_the_russian_way(client: TestClient) -> None:
    chat = [t for english, t in _items(client.get("/plan", params={**CHAT_8B, "lang": "ru"}).text, "assumptions")
            if not english]
    assert "Контекст не задан: каждая последовательность рассчитана на промпт + вывод = 1 000 + 200 = 1 200 токенов." \
        in chat, chat
    train = client.get("/plan", params={**TRAIN_7B, "lang": "ru"}).text
    lines = dict((t, english) for english, t in _items(train, "assumptions"))
    # the runtime overheads (data/overheads: CUDA context 512 MiB, cuBLAS workspace 64 MiB, NCCL 288 MiB, 5%)
    overhead = next(t for t in lines if t.startswith("Накладные расходы среды выполнения"))
    assert overhead == ("Накладные расходы среды выполнения: контекст 512,00 MiB, рабочая память библиотек 64,00 MiB, "
                        "NCCL 288,00 MiB, фрагментация аллокатора 5% от тензоров."), overhead
    assert lines[overhead] is False
    # the chosen layout's sentence, said clause by clause since stop 62 (qa28): README's DP 64 with ZeRO-1 as given
    chosen = next(t for t in lines if t.startswith("Выбрана раскладка: "))
    assert lines[chosen] is False and chosen.startswith(
        "Выбрана раскладка: TP 1, PP 1, CP 1, DP 64, ZeRO-1 (распределённый оптимизатор), пересчёт активаций none, "
        "микробатч 2 — самая быстрая из "), chosen
    assert "(оставлено как задано: zero)" in chosen, chosen  # --zero 1 as given, named as the page names its field
    warnings = _items(train, "warnings")
    assert warnings[0][0] is False and warnings[0][1].startswith("чекпоинт занимает 87,86 GiB: проверьте его "
                                                                   "восстановление"), warnings


def test_the_english_lines_are_the_clis_and_the_apis_unchanged(client: TestClient) -> None:
    """``said`` lines are the English they were: the API's JSON, the English page and their message ids agree."""
    api = client.post("/v1/plan", json={**SERVE_70B, "context": 8192, "concurrency": 32, "gpus": 8}).json()
    assert api["assumptions"][:2] == [
        "Weights stored as bf16 (default for task inference).",
        "Layout not given: inference shards by TP across the GPUs of one server (TP 8, PP 1, DP 1)."]
    assert api["warnings"][0]["message"] == "tensor parallelism over 8 GPUs"
    assert api["checks"][-1] == ("Confirm with a short run on the real engine and GPU: framework, kernel and allocator "
                                 "versions move the measured peak by several percent.")
    page = client.get("/plan", params=SERVE_70B).text
    assert [t for _, t in _items(page, "assumptions")] == api["assumptions"]
    assert [t for _, t in _items(page, "checks")] == api["checks"]
    assert 'lang="en"' not in page[page.index('id="assumptions"'):page.index("</section>", page.index('id="checks"'))]


def test_the_planner_writes_those_lines_with_their_message_ids() -> None:
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, Workload, plan

    result = plan(load_model("llama-3.1-8b"), Workload(task="inference", context_tokens=8192, concurrency=4),
                  layout=Layout(gpus=2), gpu=get_gpu("h100"))
    assert all(isinstance(line, Said) for line in result.assumptions), [
        line for line in result.assumptions if not isinstance(line, Said)]
    assert all(isinstance(line, Said) for line in result.checks)
    assert all(isinstance(w.message, Said) for w in result.warnings)


def test_a_line_with_an_english_clause_stays_english_whole(client: TestClient) -> None:
    """SGLang's admission clause in the serving line is not said: the line is English, marked, not half Russian."""
    page = client.get("/plan", params={**CHAT_8B, "engine": "sglang", "lang": "ru"}).text
    speed = _items(page, "speed-assumptions")
    serving = [item for item in speed if item[1].startswith("serving at ")]
    assert serving and serving[0][0] is True, speed


def test_the_recommend_page_says_its_assumptions_in_russian(client: TestClient) -> None:
    page = client.get("/recommend", params={"model": "llama-3.1-8b", "context": "8192", "concurrency": "16",
                                            "top": "3", "lang": "ru"}).text
    assumed = dict((t, english) for english, t in _items(page, "assumptions"))
    # the 1-GPU probe's lines (plan's) and recommend's own: the timed request (with users and a context, the request
    # the speed figures time: 1,024 prompt + 256 output tokens, README "Cheapest offerings"), the prices, the cost
    for start in ("Показан KV-кэш, нужный запрошенным последовательностям",
                  "Скорость декодирования — при 1 152 токенах в кэше на последовательность (промпт 1 024 + половина из "
                  "256 токенов вывода)", "Цены — прейскурантные, за срок 1month (720 ч)",
                  "Цена миллиона выходных токенов"):
        line = next((t for t in assumed if t.startswith(start)), None)
        assert line is not None and assumed[line] is False, (start, assumed)


# README's 70B pre-training on 512 H100 (1T tokens): the chooser's layout, the run's steps, the network it is timed on
TRAIN_70B_512 = {"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": "512", "tokens": "1e12"}


def test_the_training_speed_lines_are_russian_and_the_api_keeps_the_english(client: TestClient) -> None:
    """Stop 62 (qa28): training's layout sentence, the global batch and the run timed, the network and the checkpoint
    write were English on the Russian page (stop61_faces61's "Left English"); each is said now, clause by clause."""
    page = client.get("/plan", params={**TRAIN_70B_512, "lang": "ru"}).text
    lines = dict((t, english) for english, t in [*_items(page, "assumptions"), *_items(page, "speed-assumptions")])
    for start in ("Выбрана раскладка: TP 1, PP 16 (v 5), CP 1, DP 32, ZeRO-1 (распределённый оптимизатор)",
                  "глобальный батч, по которому считается время: 4 194 304 токена, значение по умолчанию",
                  "время прогона: 238 419 целых шагов оптимизатора",  # ceil(1e12 / 4,194,304), run_steps
                  "сеть между серверами: 400 Гбит/с на GPU в каждую сторону",  # calibration.json's default
                  "чекпоинт записывается со скоростью"):
        line = next((t for t in lines if t.startswith(start)), None)
        assert line is not None and lines[line] is False, (start, lines)
    # the evidence line (speed.evidence): the GPU's held-out training rows of calibration.json, however many a refit keeps
    evidence = next((t for t in lines if t.startswith("на h100-sxm ")), None)
    assert evidence is not None and lines[evidence] is False, lines
    assert re.fullmatch(r"на h100-sxm [\d\xa0 ]+ отложенн\w+ запуск\w* вида «обучение» шли в среднем \(медиана\) со "
                        r"скоростью \d,\d\dx от прогноза \(\d,\d\dx–\d,\d\dx\): .*", evidence), evidence
    chosen = next(t for t in lines if t.startswith("Выбрана раскладка"))
    from anchorgpu.planner.speed.calibration import calibration

    margin = f"{calibration().training_layout_margin:.1%}".replace(".", ",")  # calibration.json, the Russian comma
    assert "Layout" not in chosen and margin in chosen, chosen
    api = client.post("/v1/plan", json={**TRAIN_70B_512, "gpus": 512, "tokens": 1e12}).json()
    english = [*api["assumptions"], *api["performance"]["assumptions"]]
    assert any(line.startswith("Layout chosen: TP 1, PP 16 (v 5), CP 1, DP 32, ZeRO-1 (distributed optimizer), "
                               "recompute none, micro-batch 1 - the fastest of ") for line in english), english
    assert "run timed: 238,419 whole optimizer steps of 4,194,304 tokens = 1,000,001,765,376 tokens trained (tokens " \
           "1,000,000,000,000 rounded up to whole global batches: 1,765,376 tokens more)" in english  # the API's field


def test_recommends_precision_swept_and_engine_lines_are_russian(client: TestClient) -> None:
    """README's recommend journey (70B, 32 users at 8k, a month): the precision, "Swept" and per-GPU vLLM lines."""
    page = client.get("/recommend", params={"model": "llama-3.1-70b", "context": "8192", "concurrency": "32",
                                            "term": "1month", "lang": "ru"}).text
    assumed = dict((t, english) for english, t in _items(page, "assumptions"))
    for start in ("Точность плана: веса bf16, как в чекпоинте, KV-кэш bf16; без пониженной точности",
                  "Перебраны: ", "Движок инференса рассчитан как vLLM на каждом GPU"):
        line = next((t for t in assumed if t.startswith(start)), None)
        assert line is not None and assumed[line] is False, (start, assumed)
    engine = next(t for t in assumed if t.startswith("Движок инференса рассчитан как vLLM на каждом GPU"))
    # vLLM's defaults by the GPU (arg_utils _set_default_args): 8,192 and 1,024 on large GPUs, 2,048 and 256 elsewhere
    assert "8 192 и 1 024 на h100-sxm" in engine and "2 048 и 256 на " in engine, engine


def test_the_loss_line_and_each_loss_implementations_sentence_are_russian(client: TestClient) -> None:
    """The loss line (planner.memory.loss) carries its implementation's sentence from data/loss_memory.json, which no
    extraction finds: each must have its Russian in messages.po, or a refresh of the catalogue that drops it fails
    here (the line would then show whole in English)."""
    from anchorgpu.planner.memory.loss import _table, loss_memory_line
    from anchorgpu.web.i18n import PageText
    from anchorgpu.web.refusals import said_words

    for name in _table():
        for stated in (True, False):
            line = loss_memory_line(name, stated=stated)
            assert said_words(line, PageText("ru")) is not None, (name, line)
    page = client.get("/plan", params={**TRAIN_7B, "lang": "ru"}).text
    lines = dict((t, english) for english, t in _items(page, "assumptions"))
    # Megatron-Core's default loss keeps 2 + 4 bytes a logit (data/loss_memory.json "unfused")
    loss = next(t for t in lines if t.startswith("Функция потерь (кросс-энтропия unfused, по умолчанию для стека "
                                                  "megatron"))
    assert lines[loss] is False and "6 байт на токен и элемент словаря" in loss, loss


def test_recommends_training_lines_are_russian(client: TestClient) -> None:
    """README's training recommend (8B on 1e11 tokens): the sequence, per-layout choice and billing lines."""
    page = client.get("/recommend", params={"model": "llama-3.1-8b", "task": "train", "tokens": "1e11",
                                            "lang": "ru"}).text
    assumed = dict((t, english) for english, t in _items(page, "assumptions"))
    for start in ("Длина последовательности не задана: 2 048 токенов.",  # default_seq_tokens: 2,048 for training
                  "Каждая раскладка работает в самой быстрой конфигурации",
                  "Прогон обучения стоит столько целых часов", "Функция потерь (кросс-энтропия unfused"):
        line = next((t for t in assumed if t.startswith(start)), None)
        assert line is not None and assumed[line] is False, (start, assumed)
