"""What the user must still check about a recommendation, as the CLI's "Still to check" lists it."""

from __future__ import annotations

from typing import Any


def recommend_checks(result: dict[str, Any]) -> list[tuple[str, str, list[int]]]:
    """(code, what to check, the table rows it applies to) for every warning code of the results and of the whole
    answer, sorted by code as ``anchorgpu recommend`` prints them (``cli/recommend_render``); a whole-answer code has
    no rows.

    >>> recommend_checks({"results": [{"warnings": ["tp_over_pcie"]}, {"warnings": []}, {"warnings": ["tp_over_pcie"]}],
    ...                   "warnings": [{"code": "checkpoint_restore_unverified", "message": "..."}]})[1]
    ('tp_over_pcie', 'Tensor parallelism over PCIe-only GPUs is slow: every layer all-reduces over PCIe.', [1, 3])
    """
    from anchorgpu.planner.warnings import WARNING_CODES

    rows: dict[str, list[int]] = {}
    for rank, row in enumerate(result.get("results") or [], start=1):
        for code in row.get("warnings") or []:
            rows.setdefault(str(code), []).append(rank)
    for warning in result.get("warnings") or []:
        rows.setdefault(str(warning["code"]), [])
    return [(code, WARNING_CODES[code].check if code in WARNING_CODES else code, rows[code]) for code in sorted(rows)]
