"""Links from glossary entries into the product: CLI commands, planner page URLs, offering filters.

Pure functions over :class:`~anchorgpu.glossary.model.TryIt`; ``matching_offerings`` is the only one that
reads other areas (catalog and hardware), imported inside it.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from anchorgpu.glossary.model import FactValue, TryIt

__all__ = [
    "catalog_cli_args",
    "catalog_url",
    "cli_command",
    "compare_args",
    "matching_offerings",
    "offering_matches",
    "listed_offerings",
    "live_quote",
    "planner_query",
    "planner_url",
    "preset_url",
    "try_it_json",
]

#: Where the web page's planner, catalog and GPU comparison live (WEB's routes).
PLANNER_PATH = "/plan"
RECOMMEND_PATH = "/recommend"
CATALOG_PATH = "/catalog"
COMPARE_PATH = "/gpus/compare"
QUOTE_PATH = "/quote"


def cli_command(args: Sequence[str]) -> str:
    """A copy-pasteable shell command.

    >>> cli_command(["plan", "llama-3.1-8b", "--gpu", "h100", "--context", "8192"])
    'anchorgpu plan llama-3.1-8b --gpu h100 --context 8192'
    """
    return shlex.join(["anchorgpu", *args])


def planner_query(args: Sequence[str]) -> dict[str, str]:
    """CLI preset → the planner page's query parameters (first positional = ``model``; ``--a-b V`` → ``a_b=V``;
    a bare flag → ``flag=1``).

    >>> planner_query(["plan", "llama-3.1-70b", "--task", "qlora", "--gpus", "1", "--vae-tiling"])
    {'model': 'llama-3.1-70b', 'task': 'qlora', 'gpus': '1', 'vae_tiling': '1'}
    """
    params: dict[str, str] = {}
    rest = list(args[1:])
    i = 0
    while i < len(rest):
        word = rest[i]
        if word.startswith("--"):
            key = word[2:].replace("-", "_")
            if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                params[key] = rest[i + 1]
                i += 2
                continue
            params[key] = "1"
        elif "model" not in params:
            params["model"] = word
        i += 1
    return params


def planner_url(args: Sequence[str]) -> str:
    """The planner page with a preset filled in.

    >>> planner_url(["plan", "llama-3.1-8b", "--gpu", "h100", "--context", "131072"])
    '/plan?model=llama-3.1-8b&gpu=h100&context=131072'
    """
    return f"{PLANNER_PATH}?{urlencode(planner_query(args))}"


def preset_url(args: Sequence[str]) -> str | None:
    """The page that runs a preset: planner, recommendations, catalog filter or quote builder (None for ``model``).

    >>> preset_url(["offerings", "--gpu", "l4", "--min-gpus", "1"])
    '/catalog?gpu=l4&min_gpus=1'
    >>> preset_url(["quote", "h100-sxm-1x-vm", "--term", "1w", "--quantity", "2"])
    '/quote?offering=h100-sxm-1x-vm&term=1w&quantity=2'
    >>> preset_url(["model", "llama-3.1-8b"]) is None
    True
    """
    if not args:
        return None
    if args[0] == "plan":
        return planner_url(args)
    if args[0] == "recommend":
        return f"{RECOMMEND_PATH}?{urlencode(planner_query(args))}"
    if args[0] == "offerings":
        return f"{CATALOG_PATH}?{urlencode(planner_query(['offerings', *args[1:]]))}"
    if args[0] == "quote":
        params = planner_query(args)
        query = {"offering": params.pop("model", ""), **{k: v for k, v in params.items() if k != "option"}}
        return f"{QUOTE_PATH}?{urlencode(query)}"
    return None


def live_quote(args: Sequence[str], now: Any = None) -> Any:
    """A ``quote`` preset priced now from the shipped catalog (pure pricing; nothing is stored or booked).

    ``now`` defaults to the current UTC time; the price does not depend on it, only the quote's validity.
    """
    from datetime import UTC, datetime

    from anchorgpu.catalog import load_catalog
    from anchorgpu.quotes import price_quote

    if not args or args[0] != "quote":
        raise ValueError("live_quote needs a 'quote' preset")
    params = planner_query(args)
    options: dict[str, int] = {}
    rest = list(args[2:])
    for i, word in enumerate(rest[:-1]):
        if word == "--option":
            key, _, units = rest[i + 1].partition("=")
            options[key] = int(units or "1")
    return price_quote(load_catalog(), params["model"], int(params.get("quantity", "1")), params["term"], options,
                       now or datetime.now(UTC), region=params.get("region"))


def listed_offerings(args: Sequence[str]) -> list[Any]:
    """The shipped catalog's offerings that an ``offerings`` preset lists, cheapest 730-h rate first."""
    from anchorgpu.catalog import find_offerings, load_catalog

    if not args or args[0] != "offerings":
        raise ValueError("listed_offerings needs an 'offerings' preset")
    params = planner_query(["offerings", *args[1:]])
    return list(find_offerings(
        load_catalog(),
        gpu=params.get("gpu"),
        min_gpus=int(params["min_gpus"]) if "min_gpus" in params else None,
        max_usd_per_gpu_hour=params.get("max_usd_per_gpu_hour"),
        region=params.get("region"),
        interconnect=params.get("interconnect"),
    ))


def compare_args(pair: tuple[str, str]) -> tuple[str, ...]:
    """``anchorgpu gpus compare A B`` as arguments.

    >>> compare_args(("h100", "h200"))
    ('gpus', 'compare', 'h100', 'h200')
    """
    return ("gpus", "compare", *pair)


_CLI_FILTER_KEYS = ("gpu", "min_gpus")


def catalog_cli_args(filt: Mapping[str, FactValue]) -> tuple[str, ...] | None:
    """``anchorgpu offerings`` arguments for a filter, or None when the CLI cannot express all of it.

    >>> catalog_cli_args({"min_gpus": 8, "gpu": "h100"})
    ('offerings', '--gpu', 'h100', '--min-gpus', '8')
    >>> catalog_cli_args({"interconnect": "nvlink"}) is None
    True
    """
    if not filt or set(filt) - set(_CLI_FILTER_KEYS):
        return None
    args: list[str] = ["offerings"]
    for key in _CLI_FILTER_KEYS:
        if key in filt:
            args += [f"--{key.replace('_', '-')}", str(filt[key])]
    return tuple(args)


def offering_matches(
    filt: Mapping[str, FactValue],
    *,
    offering_kind: str,
    gpus: int,
    gpu_name: str,
    vendor: str,
    interconnect: str,
    memory_type: str,
    fp8_hardware: bool,
    fp4_hardware: bool,
) -> bool:
    """Whether one offering (described by plain values) passes a glossary filter.

    Keys: ``interconnect`` (case-insensitive substring of the server's GPU link or fabric, as the catalog
    page filters: ``nvlink``, ``nvswitch``, ``infinity fabric``, ``pcie``), ``kind`` (``vm``/``bare-metal``),
    ``vendor``, ``memory_type`` (prefix, e.g. ``HBM3e``), ``fp8``/``fp4`` (hardware support), ``min_gpus``,
    ``gpu`` (hardware name).

    >>> base = dict(offering_kind="bare-metal", gpus=8, gpu_name="h100-sxm", vendor="NVIDIA",
    ...             interconnect="NVLink 4 (NVSwitch) 8x400 Gb/s InfiniBand NDR", memory_type="HBM3",
    ...             fp8_hardware=True, fp4_hardware=False)
    >>> offering_matches({"interconnect": "nvlink"}, **base), offering_matches({"fp4": True}, **base)
    (True, False)
    """
    checks: dict[str, Callable[[FactValue], bool]] = {
        "interconnect": lambda want: str(want).casefold() in interconnect.casefold(),
        "kind": lambda want: offering_kind == want,
        "vendor": lambda want: vendor.casefold() == str(want).casefold(),
        "memory_type": lambda want: memory_type.casefold().startswith(str(want).casefold()),
        "fp8": lambda want: fp8_hardware == bool(want),
        "fp4": lambda want: fp4_hardware == bool(want),
        "min_gpus": lambda want: gpus >= int(want),
        "gpu": lambda want: gpu_name == want,
    }
    return all(key in checks and checks[key](want) for key, want in filt.items())


def catalog_url(filt: Mapping[str, FactValue]) -> str:
    """The catalog page with the part of a filter it understands (gpu, min_gpus, kind, interconnect).

    >>> catalog_url({"interconnect": "nvlink", "fp4": True})
    '/catalog?interconnect=nvlink'
    """
    keys = ("gpu", "min_gpus", "kind", "interconnect")
    return f"{CATALOG_PATH}?{urlencode({k: str(filt[k]) for k in keys if k in filt})}"


def matching_offerings(filt: Mapping[str, FactValue]) -> list[Any]:
    """Offerings of the shipped catalog that pass ``filt`` (empty list for an empty filter)."""
    if not filt:
        return []
    from anchorgpu.catalog import load_catalog
    from anchorgpu.hardware import get_gpu

    found = []
    for offering in load_catalog().offerings:
        spec = get_gpu(offering.gpu)
        if offering_matches(
            filt,
            offering_kind=offering.kind,
            gpus=offering.gpus,
            gpu_name=spec.name,
            vendor=spec.vendor,
            interconnect=f"{offering.interconnect} {offering.fabric}",
            memory_type=spec.memory_type,
            fp8_hardware=spec.fp8_hardware,
            fp4_hardware=spec.fp4_hardware,
        ):
            found.append(offering)
    return found


def try_it_json(try_it: TryIt) -> dict[str, Any]:
    """The ``try_it`` object of the JSON contract, plus ready commands and page URLs."""
    compare = list(try_it.compare) if try_it.compare else None
    offerings_args = catalog_cli_args(try_it.catalog_filter)
    return {
        "planner_args": [list(a) for a in try_it.planner_args],
        "catalog_filter": dict(try_it.catalog_filter) or None,
        "compare": compare,
        "commands": [cli_command(a) for a in try_it.planner_args]
        + ([cli_command(offerings_args)] if offerings_args else [])
        + ([cli_command(compare_args(try_it.compare))] if try_it.compare else []),
        "planner_urls": [planner_url(a) for a in try_it.planner_args if a[0] == "plan"],
        "preset_urls": [preset_url(a) for a in try_it.planner_args],
        "catalog_url": catalog_url(try_it.catalog_filter) if try_it.catalog_filter else None,
    }
