"""The one bridge from the catalog to the hardware data: GPU names and aliases → canonical ids."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["GpuResolver", "canonical_gpu"]

GpuResolver = Callable[[str], str]
"""Maps a GPU name or alias to its hardware canonical id; raises ``NotFound`` (``UnknownGpu``) otherwise."""


def canonical_gpu(name: str) -> str:
    """``anchorgpu.hardware.get_gpu(name).name`` — canonical id for a name or alias (case-insensitive)."""
    from anchorgpu import hardware  # imported late: nothing happens at import

    canonical: str = hardware.get_gpu(name).name
    return canonical
