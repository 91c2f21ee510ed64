"""Looking GPUs up: canonical names, aliases, insensitivity to case/spaces/hyphens, and "did you mean"."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.errors import NotFound, UnknownGpu
from anchorgpu.hardware import GpuIndex, get_gpu, list_gpus, normalize_name

ALL_LABELS = sorted({(gpu.name, label) for gpu in list_gpus() for label in (gpu.name, gpu.display_name, *gpu.aliases)})


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("h100", "h100-sxm"),
        ("H100-SXM5-80GB", "h100-sxm"),
        ("a100-80gb", "a100-80gb-sxm"),
        ("a100", "a100-80gb-sxm"),
        ("l40s", "l40s"),
        ("L40S", "l40s"),
        ("mi355x", "mi355x"),
        ("AMD Instinct MI355X", "mi355x"),
        ("NVIDIA H200 SXM 141GB", "h200"),
        ("h200", "h200"),
        ("H100 NVL", "h100-nvl"),
        ("h100 pcie", "h100-pcie"),
        ("RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
        ("GeForce RTX 5090", "rtx-5090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("rtx4090", "rtx-4090"),
        ("GB200 NVL72", "gb200"),
        ("Blackwell Ultra", "b300"),
        ("B200-SXM-180GB", "b200"),
        ("nvidia l4", "l4"),
        ("  a10g ", "a10g"),
        ("Instinct MI300X", "mi300x"),
        ("mi325x", "mi325x"),
        ("h800", "h800"),
        ("a100-40gb", "a100-40gb-sxm"),
        ("GB300 NVL72", "gb300"),
    ],
)
def test_canonical_names_and_aliases_resolve(typed: str, canonical: str) -> None:
    assert get_gpu(typed).name == canonical


def test_every_label_resolves_to_its_own_gpu() -> None:
    for canonical, label in ALL_LABELS:
        assert get_gpu(label).name == canonical, label


def test_every_label_resolves_in_upper_lower_and_respaced_forms() -> None:
    for canonical, label in ALL_LABELS:
        squeezed = "".join(ch for ch in label if ch.isalnum())
        for variant in (label.upper(), label.lower(), squeezed, "-".join(squeezed), " ".join(label.split("-")), f"  {label}  "):
            assert get_gpu(variant).name == canonical, (label, variant)


SEPARATORS = ["", "", "", "-", " ", "_", "  "]


@st.composite
def scrambled(draw: st.DrawFn) -> tuple[str, str, str]:
    """(canonical, label, the label with case flipped and separators changed/inserted between characters)."""
    canonical, label = draw(st.sampled_from(ALL_LABELS))
    upper = draw(st.lists(st.booleans(), min_size=len(label), max_size=len(label)))
    seps = draw(st.lists(st.sampled_from(SEPARATORS), min_size=len(label), max_size=len(label)))
    out = []
    for ch, up, sep in zip(label, upper, seps, strict=True):
        if ch.isalnum():
            out.append((ch.upper() if up else ch.lower()) + sep)
        else:
            out.append(sep)  # an existing separator becomes another one (or vanishes)
    return canonical, label, "".join(out)


@settings(max_examples=200, deadline=None)
@given(case=scrambled())
def test_lookup_ignores_case_hyphens_and_spaces_for_every_alias(case: tuple[str, str, str]) -> None:
    canonical, label, typed = case
    assert normalize_name(typed) == normalize_name(label)
    assert get_gpu(typed).name == canonical


@pytest.mark.parametrize(
    ("typed", "expected_first"),
    [
        ("h10", "h100-sxm"),
        ("h2000", "h200"),
        ("mi30", "mi300x"),
        ("mi350x", "mi355x"),
        ("b20", "b200"),
        ("l40", "l40s"),
        ("rtx 509", "rtx-5090"),
        ("mi250", "mi250x"),  # the MI250 (fewer CUs and links) is a different part: suggest, never silently map
        ("a100-40gb-pcie", "a100-40gb-sxm"),  # the 40 GB A100 PCIe card is not shipped
        ("gb400", "gb300"),
    ],
)
def test_an_unknown_name_suggests_the_closest_canonical_names(typed: str, expected_first: str) -> None:
    with pytest.raises(UnknownGpu) as info:
        get_gpu(typed)
    error = info.value
    assert error.suggestions[0] == expected_first, error.suggestions
    assert 1 <= len(error.suggestions) <= 3
    assert all(get_gpu(s).name == s for s in error.suggestions)  # suggestions are canonical names
    assert error.message.startswith(f"unknown GPU {typed!r}; did you mean ")
    assert isinstance(error, NotFound) and error.exit_code == 3 and error.code == "unknown_gpu"


def test_a_name_like_nothing_gets_no_suggestions() -> None:
    with pytest.raises(UnknownGpu) as info:
        get_gpu("zzzz-qqqq")
    assert info.value.suggestions == []
    assert info.value.message == "unknown GPU 'zzzz-qqqq'"


def test_an_empty_name_is_unknown() -> None:
    with pytest.raises(UnknownGpu):
        get_gpu(" - ")


def test_an_index_over_other_gpus_looks_up_only_those() -> None:
    index = GpuIndex([get_gpu("h100"), get_gpu("h200")])
    assert index.names() == ("h100-sxm", "h200")
    assert index.find("NVIDIA H200") is get_gpu("h200")
    assert index.find("a100") is None
    with pytest.raises(UnknownGpu, match="did you mean 'h100-sxm'"):
        index.get("h1OO")


def test_a_label_as_written_finds_what_its_normalised_spelling_finds() -> None:
    """The index answers labels as written from a dict of their own (recommend looks GPUs up thousands of times an
    answer); that shortcut must give the GPU the case-, space- and hyphen-insensitive lookup gives, for every label
    of every shipped GPU, and for labels whose spelling only differs."""
    index = GpuIndex(list_gpus())
    for _, label in ALL_LABELS:
        by_key = index.find(f" {label.upper()} ")  # never a label as written: the normalised path
        assert by_key is not None
        assert index.find(label) is by_key, label
