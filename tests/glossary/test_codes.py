"""Every planner warning code and every API error code names an existing glossary entry.

Codes are discovered live: the planner's one registry (``anchorgpu.planner.warnings.WARNING_CODES``) and the
``code`` of every subclass of :class:`anchorgpu.errors.AnchorError`, found after importing every module of
the package (so errors defined in any area count), plus the codes the API answers with outside the tree.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import anchorgpu
from anchorgpu.api.errors import TRANSPORT_CODES
from anchorgpu.errors import AnchorError
from anchorgpu.glossary import entry_for_code, get_entry, load_glossary

# problem+json codes the API sends without an AnchorError subclass (see anchorgpu.api.errors)
HTTP_ONLY_CODES = ["idempotency_key_missing", *TRANSPORT_CODES]


def _import_everything() -> None:
    for module in pkgutil.walk_packages(anchorgpu.__path__, "anchorgpu."):
        if ".migrations" in module.name or module.name.endswith(".asgi"):
            continue  # Alembic scripts and the module that builds an app at import
        importlib.import_module(module.name)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def error_codes() -> list[str]:
    _import_everything()
    codes = {AnchorError.code} | {c.code for c in _subclasses(AnchorError)}
    return sorted(codes | set(HTTP_ONLY_CODES))


def warning_codes() -> list[tuple[str, str]]:
    from anchorgpu.planner.warnings import WARNING_CODES

    return sorted((w.code, w.concept) for w in WARNING_CODES.values())


def test_discovery_finds_the_error_codes_of_several_areas() -> None:
    codes = error_codes()
    # one from the root module, one from the API layer, one from the store/allocations area
    assert {"invalid_term", "unknown_gpu", "idempotency_key_missing", "idempotency_key_reused"} <= set(codes)
    assert len(codes) >= 20


@pytest.mark.parametrize("code", error_codes())
def test_every_error_code_is_explained_by_an_entry(code: str) -> None:
    entry = entry_for_code(code)
    assert entry is not None, f"no glossary entry lists {code!r} in its codes"
    assert code in entry.codes


@pytest.mark.parametrize(("code", "concept"), warning_codes())
def test_every_planner_warning_code_is_explained_and_its_concept_exists(code: str, concept: str) -> None:
    entry = entry_for_code(code)
    assert entry is not None, f"no glossary entry lists planner warning {code!r}"
    named = get_entry(concept)  # the concept the warning links to on the planner page
    assert named.id == entry.id or named.id in entry.related or entry.id in named.related


def test_the_glossary_lists_no_code_twice_and_every_code_it_lists_is_snake_case() -> None:
    glossary = load_glossary()
    listed = [c for e in glossary for c in e.codes]
    assert len(listed) == len(set(listed)) == len(glossary.code_index)
    assert all(c.replace("_", "").isalnum() and c == c.lower() for c in listed)


def unknown_entity_codes() -> list[str]:
    """``unknown_<kind>`` codes made at run time by ``UnknownEntity("kind", ...)`` and the catalog's
    ``_lookup("kind", ...)``: no class carries them, so the source is read for their kinds."""
    import re
    from pathlib import Path

    kinds: set[str] = set()
    for path in Path(anchorgpu.__path__[0]).rglob("*.py"):
        kinds |= set(re.findall(r'(?:UnknownEntity|_lookup)\(\s*"([a-z][a-z ]*)"', path.read_text(encoding="utf-8")))
    return sorted(f"unknown_{kind.replace(' ', '_')}" for kind in kinds)


def test_discovery_finds_the_codes_of_unknown_entities() -> None:
    assert {"unknown_quote", "unknown_allocation", "unknown_region", "unknown_offering"} <= set(unknown_entity_codes())


@pytest.mark.parametrize("code", unknown_entity_codes())
def test_every_unknown_entity_code_is_explained_by_an_entry(code: str) -> None:
    # QA-CLI: problem+json for an unknown quote/allocation/region/option linked /glossary/errors#unknown_quote etc.,
    # which no entry explained (only class-level codes were discovered).
    entry = entry_for_code(code)
    assert entry is not None, f"no glossary entry lists {code!r} in its codes"
