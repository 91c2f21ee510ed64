"""Issue 14, item 7: every entry has a live example, and every numeric claim an entry declares is checked
against the planner, the catalog, the pricing and the GPU data (the claims and their commands live in
``glossary/data/*.toml``; this file only runs them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.glossary import get_entry, load_glossary
from anchorgpu.glossary.claims import Claim, evaluate
from anchorgpu.glossary.loader import load_glossary_from
from cli_runner import run

ALL_CLAIMS = [(entry.id, i, claim) for entry in load_glossary() for i, claim in enumerate(entry.claims)]


@pytest.fixture
def cli_env(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Offerings and quote commands read the catalog's stock from a database: a fresh one per test."""
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ANCHORGPU_API_KEY", raising=False)


def _answer(capsys: pytest.CaptureFixture[str], claim: Claim) -> Any:
    """The JSON a claim's command answers; a quote is priced purely (nothing stored); a refusal becomes
    ``{"exit": code, "error": line}``."""
    if claim.run[0] == "quote":
        from anchorgpu.glossary.links import live_quote
        from anchorgpu.quotes import quote_to_json

        return quote_to_json(live_quote(claim.run))
    code, out, err = run(capsys, *claim.run, "--json")
    if code != 0:
        return {"exit": code, "error": err.strip()}
    return json.loads(out)


def test_every_entry_has_a_live_example() -> None:
    """A planner preset, a catalog listing or filter, a live quote or a GPU comparison (143 entries, 70 had none)."""
    missing = [e.id for e in load_glossary() if e.try_it.empty]
    assert missing == []


def test_the_issue_s_examples_have_presets_of_the_new_kinds() -> None:
    kinds = {i: {args[0] for args in get_entry(i).try_it.planner_args} for i in ("gpu-hour", "quote", "included-egress", "nvl72", "infiniband")}
    assert kinds == {"gpu-hour": {"quote"}, "quote": {"quote"}, "included-egress": {"quote"}, "nvl72": {"offerings"},
                     "infiniband": {"offerings"}}


def test_there_are_claims_and_the_entries_named_in_the_issue_declare_them() -> None:
    with_claims = {entry_id for entry_id, _, _ in ALL_CLAIMS}
    assert {"nvl72", "fsdp", "memory-bandwidth", "mig", "qlora", "fine-tuning"} <= with_claims
    assert len(ALL_CLAIMS) >= 40


@pytest.mark.parametrize(("entry_id", "index", "claim"), ALL_CLAIMS, ids=[f"{e}-{i}" for e, i, _ in ALL_CLAIMS])
def test_each_claim_agrees_with_the_product(cli_env: None, capsys: pytest.CaptureFixture[str], entry_id: str, index: int,
                                            claim: Claim) -> None:
    broken = evaluate(claim, _answer(capsys, claim))
    assert broken == [], f"{entry_id}: {claim.says!r} ({' '.join(claim.run)}): {broken}"


def test_a_claim_that_the_product_contradicts_fails(cli_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    """The check can fail: the old FSDP sentence (a 70B full fine-tune on one 8-GPU H100 server) is refused."""
    old = Claim(says="fits one 8-GPU server", run=("plan", "llama-3.1-70b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--zero", "3"),
                expect=(("fits", True),))
    assert evaluate(old, _answer(capsys, old)) == ["fits = False, expected True"]
    old_mig = Claim(says="unknown", run=("plan", "llama-3.1-8b", "--gpu", "h100 mig 1g.10gb"), expect=(("exit", 3),))
    assert evaluate(old_mig, _answer(capsys, old_mig)) == ["exit = 2, expected 3"]


def test_every_preset_of_every_kind_runs_through_the_cli(cli_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    failed = []
    for entry in load_glossary():
        for args in entry.try_it.planner_args:
            if args[0] in ("quote", "offerings"):
                code, out, err = run(capsys, *args, "--json")
                if code != 0 or not json.loads(out):
                    failed.append((entry.id, " ".join(args), err.strip() or "empty answer"))
    assert failed == []


def test_the_qlora_presets_show_the_vocabulary_effect(capsys: pytest.CaptureFixture[str]) -> None:
    """Source: the QLoRA paper (arXiv 2305.14314) fine-tuned LLaMA 65B (32k vocabulary) on one 48 GB GPU; Llama 2 70B
    has the same vocabulary, Llama 3.1 70B four times it (fp32 logits, LitGPT-calibrated memory)."""
    answers = [json.loads(run(capsys, *a, "--json")[1]) for a in get_entry("qlora").try_it.planner_args]
    llama2, llama31, llama31_short = answers
    assert llama2["model"]["vocab_size"] == 32000 and llama31["model"]["vocab_size"] == 128256
    assert (llama2["fits"], llama31["fits"], llama31_short["fits"]) == (True, False, True)
    assert all(a["gpus"] == 1 and a["gpu"]["name"] == "l40s" for a in answers)


def _bad_file(tmp_path: Path, extra: str) -> Path:
    entry = '''[[entry]]
id = "x"
kind = "concept"
level = "foundational"
stages = ["training"]
sources = ["test"]
term.en = "X"
term.ru = "Икс"
short.en = "A thing that fits one L40S."
short.ru = "Нечто."
long.en = "Longer."
long.ru = "Длиннее."
example.en = "An example."
example.ru = "Пример."
'''
    path = tmp_path / "bad.toml"
    path.write_text(entry + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize(("extra", "reason"), [
    ('try_it.planner_args = [["book", "q_1"]]', "must be a list starting with one of"),
    ('try_it.planner_args = [["quote", "h100-sxm-1x-vm"]]', "names an offering and a --term"),
    ('try_it.planner_args = [["offerings", "--gpu", "h100", "--book", "1"]]', "not ['--book']"),
    ('[[entry.claims]]\nsays = "fits one L40S"\nrun = ["book", "q"]\nexpect = { fits = true }', "run must start with one of"),
    ('[[entry.claims]]\nsays = "fits two L40S"\nrun = ["plan", "x"]\nexpect = { fits = true }', "does not quote the entry's English text"),
    ('[[entry.claims]]\nsays = "fits one L40S"\nrun = ["plan", "x"]\nexpect = { fits = { between = 1 } }', "unknown bound(s)"),
    ('[[entry.claims]]\nsays = "fits one L40S"\nrun = ["plan", "x"]\nexpect = {}', "non-empty table"),
])
def test_the_loader_refuses_bad_presets_and_claims_naming_file_and_entry(tmp_path: Path, extra: str, reason: str) -> None:
    from anchorgpu.errors import DataFileError

    with pytest.raises(DataFileError) as caught:
        load_glossary_from([_bad_file(tmp_path, extra)])
    assert "bad.toml" in str(caught.value) and "'x'" in str(caught.value) and reason in str(caught.value)
