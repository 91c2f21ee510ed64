"""Look GPUs up by canonical name or alias; list them. Pure; stdlib only.

Lookup ignores case, spaces, hyphens, underscores and other punctuation, and a leading vendor or brand
word ("NVIDIA", "AMD", "GeForce", "Instinct"): ``get_gpu("NVIDIA H200 SXM 141GB")`` and
``get_gpu("h200")`` give the same record. Unknown names raise :class:`~anchorgpu.errors.UnknownGpu` with
up to three canonical names as "did you mean" suggestions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache

from anchorgpu.errors import InvalidInput, PartialGpuRequested, UnknownGpu, did_you_mean, said
from anchorgpu.hardware.loader import load_shipped_gpus, load_shipped_sources, normalize_name, strip_vendor
from anchorgpu.hardware.spec import GpuSpec

__all__ = ["GpuIndex", "get_gpu", "gpu_index", "list_gpus", "partial_gpu_words", "source_descriptions"]

#: Words that name a share of a GPU rather than a GPU: a MIG profile (``1g.10gb``, ``3g.40gb``, ``mig``),
#: a virtual GPU or a time-sliced share. AnchorGPU rents whole GPUs only, so such a name is refused with that
#: reason instead of "unknown GPU".
_PARTIAL = re.compile(
    r"(?<![a-z0-9])(?:mig|vgpu|time[\s_-]*slic\w*|timeslic\w*|\d+g\.\d+gb(?:\+me)?|\d+c\.\d+g\.\d+gb)(?![a-z0-9])"
)


class GpuIndex:
    """Name lookup over a fixed set of GPUs (the shipped ones, or any set a test builds)."""

    def __init__(self, gpus: Iterable[GpuSpec]) -> None:
        self.gpus: tuple[GpuSpec, ...] = tuple(gpus)
        self._by_key: dict[str, GpuSpec] = {}
        for gpu in self.gpus:
            for label in (gpu.name, gpu.display_name, *gpu.aliases):
                for key in {normalize_name(label), strip_vendor(normalize_name(label))}:
                    self._by_key.setdefault(key, gpu)
        # every label as written, resolved as the normalised lookup resolves it: the sweep's and recommend's own
        # lookups (thousands per answer) skip normalising
        self._by_name: dict[str, GpuSpec] = {}
        for gpu in self.gpus:
            for label in (gpu.name, gpu.display_name, *gpu.aliases):
                self._by_name[label] = self._find_key(label)  # type: ignore[assignment]

    def names(self) -> tuple[str, ...]:
        """Canonical names in data-file order."""
        return tuple(gpu.name for gpu in self.gpus)

    def find(self, name: str) -> GpuSpec | None:
        """The GPU called ``name`` (canonical or alias, insensitive as described above), or None."""
        exact = self._by_name.get(name)
        return exact if exact is not None else self._find_key(name)

    def _find_key(self, name: str) -> GpuSpec | None:
        key = normalize_name(name)
        return self._by_key.get(key) or self._by_key.get(strip_vendor(key))

    def get(self, name: str) -> GpuSpec:
        """The GPU called ``name``; raises UnknownGpu with suggestions when there is none."""
        gpu = self.find(name)
        if gpu is None:
            words = partial_gpu_words(name)
            if words:
                whole = self.find(_PARTIAL.sub(" ", name.lower()))
                hint = said("; ask for the whole GPU instead: {whole}", whole=whole.name) if whole else ""
                raise PartialGpuRequested(
                    said("GPU {name!r} names a share of a GPU ({words}): AnchorGPU rents whole GPUs only (no MIG "
                         "slices, vGPU or time-slicing){hint}", name=name, words=', '.join(words), hint=hint)
                )
            raise UnknownGpu(name, self.suggest(name))
        return gpu

    def suggest(self, name: str, *, n: int = 3) -> list[str]:
        """Up to ``n`` canonical names close to ``name``, best first."""
        key = strip_vendor(normalize_name(name))
        if not key:
            return []
        ranked: list[str] = []
        # Close spellings of any name or alias, then names that contain what was typed.
        for match in did_you_mean(key, self._by_key, n=3 * n):
            ranked.append(self._by_key[match].name)
        if len(key) >= 2:
            ranked.extend(gpu.name for k, gpu in self._by_key.items() if key in k)
        unique = list(dict.fromkeys(ranked))
        return unique[:n]


def partial_gpu_words(name: str) -> list[str]:
    """The words of ``name`` that ask for part of a GPU (MIG profile, vGPU, time-slicing), in order.

    >>> partial_gpu_words("h100 mig 1g.10gb"), partial_gpu_words("A100-MIG-3g.40gb"), partial_gpu_words("h100-sxm")
    (['mig', '1g.10gb'], ['mig', '3g.40gb'], [])
    """
    return [m.group(0) for m in _PARTIAL.finditer(name.lower())]


@cache
def gpu_index() -> GpuIndex:
    """The index over the shipped GPU data (loaded once, on first use)."""
    return GpuIndex(load_shipped_gpus())


def list_gpus() -> tuple[GpuSpec, ...]:
    """Every shipped GPU, in data-file order (cached after the first call)."""
    return gpu_index().gpus


def get_gpu(name: str) -> GpuSpec:
    """The shipped GPU called ``name`` (canonical name or alias; case, spaces and hyphens ignored).

    >>> get_gpu("H100-SXM5-80GB").name
    'h100-sxm'
    >>> get_gpu("NVIDIA H200 SXM 141GB").memory_headline
    '141 GB'
    """
    if isinstance(name, str) and not name.strip():  # bad input, not a name that was looked up
        raise InvalidInput(said("GPU {name!r}: the name is empty; give a GPU name or alias, e.g. h100 (`anchorgpu "
                                "gpus`, /v1/gpus)", name=name))
    return gpu_index().get(name)


@cache
def _sources() -> Mapping[str, str]:
    return load_shipped_sources()


def source_descriptions(keys: Iterable[str]) -> dict[str, str]:
    """Descriptions of source keys such as ``S2`` or ``P6`` (from ``data/sources.toml``)."""
    table = _sources()
    return {key: table.get(key, "(unknown source key)") for key in keys}
