"""The shipped glossary data: both languages everywhere, links that resolve, product facts that agree with
the catalog and the units module, presets that name real GPUs and models, and our own wording."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from anchorgpu.glossary import LANGS, get_entry, linking_here, list_entries, load_glossary
from anchorgpu.glossary.model import KINDS, LEVELS, STAGES

ENTRIES = list(load_glossary())
CYRILLIC = re.compile(r"[А-Яа-яЁё]")


def test_the_glossary_has_the_breadth_the_seeds_ask_for() -> None:
    # issue 7: roughly 100-130 entries; every kind is represented
    assert len(ENTRIES) >= 100
    assert {e.kind for e in ENTRIES} == set(KINDS)
    assert sum(1 for e in ENTRIES if e.kind == "technology") >= 25


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_entry_has_every_text_in_english_and_in_russian(entry) -> None:
    texts = [entry.short, entry.long] + [t for t in (entry.example, entry.caveat) if t is not None]
    for text in texts:
        assert text.en.strip() and text.ru.strip()
        assert CYRILLIC.search(text.ru), f"{entry.id}: Russian text without Cyrillic: {text.ru!r}"
        assert not CYRILLIC.search(text.en), f"{entry.id}: English text with Cyrillic: {text.en!r}"
    assert entry.term.en.strip() and entry.term.ru.strip()
    assert entry.level in LEVELS and entry.stages and set(entry.stages) <= set(STAGES)
    assert entry.sources
    if entry.kind != "technology":
        assert entry.example is not None


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_related_and_technology_link_resolves(entry) -> None:
    for target in entry.related:
        assert get_entry(target).id == target != entry.id
    for target in entry.technologies:
        assert get_entry(target).kind == "technology"


def test_concepts_linking_here_are_exactly_the_reverse_of_related_and_technology_links() -> None:
    for entry in ENTRIES:
        expected = {e.id for e in ENTRIES if entry.id in e.related or entry.id in e.technologies}
        assert {e.id for e in linking_here(entry.id)} == expected


def test_every_entry_answers_to_aliases_in_both_scripts_where_a_russian_name_exists() -> None:
    missing = [e.id for e in ENTRIES if not e.aliases_ru or not (e.aliases_en or e.term.en != e.term.ru)]
    assert missing == []
    # the example of the issue: KV cache answers to English, transliterated and Russian names
    names = set(get_entry("kv-cache").names())
    assert {"KV cache", "KV-кэш", "кэш ключей и значений"} <= names


def test_the_list_is_sorted_by_term_in_each_language() -> None:
    from anchorgpu.glossary.text import fold

    for lang in LANGS:
        terms = [fold(e.term.get(lang)) for e in list_entries(lang)]
        assert terms == sorted(terms)


# --- product facts agree with the catalog and the units module -------------------------------------------

def test_the_rental_term_facts_are_the_units_modules_constants() -> None:
    from anchorgpu.units import HOURS_PER_COMPARISON_MONTH, HOURS_PER_RENTAL_MONTH, HOURS_PER_WEEK, parse_term

    facts = get_entry("fixed-rental-term").facts
    assert facts["hours_per_week"] == HOURS_PER_WEEK == parse_term("1w").hours
    assert facts["hours_per_rental_month"] == HOURS_PER_RENTAL_MONTH == parse_term("1month").hours
    assert get_entry("comparison-month-730").facts["hours_per_comparison_month"] == HOURS_PER_COMPARISON_MONTH


def test_the_730_hour_example_matches_the_catalogs_h100_price_and_the_one_rounding_rule() -> None:
    from anchorgpu.catalog import load_catalog
    from anchorgpu.units import HOURS_PER_COMPARISON_MONTH, round_usd

    facts = get_entry("comparison-month-730").facts
    # seed (Russian glossary, "GPU-час"): one H100 at $2,190 a month is about $3.00 per GPU-hour
    h100 = next(o for o in load_catalog().offerings if o.gpu == "h100-sxm" and o.gpus == 1)
    assert h100.prices_usd.month == Decimal(facts["example_monthly_price_usd"])
    assert round_usd(h100.prices_usd.month / h100.gpus / HOURS_PER_COMPARISON_MONTH) == Decimal(str(facts["example_per_gpu_hour_usd"]))


def test_the_gpu_hour_example_multiplies_gpus_by_hours() -> None:
    facts = get_entry("gpu-hour").facts
    assert facts["example_gpus"] * facts["example_hours"] == facts["example_gpu_hours"]


def test_the_included_egress_allowances_agree_with_every_offering_of_the_catalog() -> None:
    from anchorgpu.catalog import load_catalog

    facts = get_entry("included-egress").facts
    offerings = load_catalog().offerings
    single = [o.egress_tb_per_month for o in offerings if o.gpus == 1]
    eight = [o.egress_tb_per_month for o in offerings if o.gpus == 8]
    assert single and set(single) == {facts["egress_tb_per_month_single_gpu"]}
    assert eight and set(eight) == {facts["egress_tb_per_month_8_gpu"]}


def test_whole_gpus_only_agrees_with_the_catalog_and_the_units_module() -> None:
    from anchorgpu.catalog import load_catalog
    from anchorgpu.errors import PartialGpuRequested
    from anchorgpu.units import require_whole_gpus

    facts = get_entry("whole-gpus-only").facts
    assert facts["whole_gpus_only"] is True
    assert (facts["mig_offered"], facts["vgpu_offered"], facts["time_slicing_offered"]) == (False, False, False)
    assert all(get_entry(i).facts["offered"] is False for i in ("mig", "vgpu", "time-slicing"))
    offerings = load_catalog().offerings
    assert all(isinstance(o.gpus, int) and o.gpus >= 1 for o in offerings)
    with pytest.raises(PartialGpuRequested):
        require_whole_gpus(0.5)
    # single-GPU offerings are dedicated VMs with the GPU passed through; 8-GPU servers are bare metal
    assert {o.kind for o in offerings if o.gpus == 1} == {get_entry("gpu-passthrough").facts["single_gpu_offering_kind"]}
    assert {o.kind for o in offerings if o.gpus == 8} == {get_entry("bare-metal").facts["eight_gpu_offering_kind"]}


def test_ddos_protection_is_included_on_every_offering() -> None:
    from anchorgpu.catalog import load_catalog

    assert get_entry("ddos-protection").facts["ddos_protection_included"] is True
    assert all(o.ddos_protection for o in load_catalog().offerings)


def test_the_roce_fact_matches_the_mi355x_servers_network() -> None:
    from anchorgpu.catalog import load_catalog

    facts = get_entry("roce").facts
    mi355x = [o for o in load_catalog().offerings if o.gpu == "mi355x" and o.gpus == 8]
    assert mi355x
    for o in mi355x:
        assert f"{facts['mi355x_roce_ports']}x{facts['mi355x_roce_port_gbit']} Gb/s RoCE" in o.fabric


# --- presets point at real things ------------------------------------------------------------------------

PRESET_GPUS = sorted({g for e in ENTRIES if e.try_it.compare for g in e.try_it.compare}
                     | {a[a.index("--gpu") + 1] for e in ENTRIES for a in e.try_it.planner_args if "--gpu" in a})
PRESET_MODELS = sorted({a[1] for e in ENTRIES for a in e.try_it.planner_args if a[0] in ("plan", "recommend", "model")})
PRESET_OFFERINGS = sorted({a[1] for e in ENTRIES for a in e.try_it.planner_args if a[0] == "quote"})


@pytest.mark.parametrize("name", PRESET_GPUS)
def test_every_gpu_named_by_a_preset_exists_in_the_hardware_data(name: str) -> None:
    from anchorgpu.hardware import get_gpu

    assert get_gpu(name).name


@pytest.mark.parametrize("name", PRESET_MODELS)
def test_every_model_named_by_a_preset_exists_in_the_registry(name: str) -> None:
    from anchorgpu.architectures import load_model

    assert load_model(name, offline=True) is not None


@pytest.mark.parametrize("offering", PRESET_OFFERINGS)
def test_every_offering_a_quote_preset_names_is_in_the_catalog(offering: str) -> None:
    from anchorgpu.catalog import load_catalog

    assert load_catalog().offering(offering).id == offering


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.try_it.catalog_filter], ids=lambda e: e.id)
def test_every_catalog_filter_matches_some_offering_and_not_all_of_them_unless_it_is_the_catalog_itself(entry) -> None:
    from anchorgpu.catalog import load_catalog
    from anchorgpu.glossary.links import matching_offerings

    found = matching_offerings(entry.try_it.catalog_filter)
    assert found
    if entry.id != "offering":
        assert len(found) < len(load_catalog().offerings)


def test_the_nvlink_filter_finds_exactly_the_servers_whose_gpus_talk_over_nvlink() -> None:
    from anchorgpu.catalog import load_catalog
    from anchorgpu.glossary.links import matching_offerings

    found = {o.id for o in matching_offerings(get_entry("nvlink").try_it.catalog_filter)}
    expected = {o.id for o in load_catalog().offerings if "nvlink" in o.interconnect.lower()}
    assert found == expected and all(o.endswith("-bm") for o in found)


# --- our own words ---------------------------------------------------------------------------------------

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"


def _shingles(text: str, n: int = 7) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_no_entry_repeats_seven_words_in_a_row_from_a_seed_document() -> None:
    if not SEEDS.is_dir():
        pytest.skip(f"seed documents not found at {SEEDS} (they live beside the repository, not in it)")
    seed = set().union(*(_shingles(p.read_text(encoding="utf-8")) for p in SEEDS.glob("*.txt")))
    copied = {}
    for e in ENTRIES:
        for field in ("short", "long", "example", "caveat"):
            text = getattr(e, field)
            if text is None:
                continue
            for lang in LANGS:
                common = _shingles(text.get(lang)) & seed
                if common:
                    copied[f"{e.id}.{field}.{lang}"] = " ".join(sorted(common)[0])
    assert copied == {}
