"""How a serving recommendation chosen for total throughput treats each user: the rows whose users decode slower
than an interactive target (``data/interactive_target.json``, with its source), said in one assumption line. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from anchorgpu.units import fmt_figure

__all__ = ["interactive_tokens_per_s", "slow_users_line"]


@cache
def interactive_tokens_per_s() -> float:
    """Tokens a second a user decodes at the interactive target's time per output token.

    >>> round(interactive_tokens_per_s(), 1)
    33.3
    """
    data = json.loads(resources.files("anchorgpu.recommend").joinpath("data/interactive_target.json")
                      .read_text("utf-8"))
    return 1.0 / float(data["tpot_s"])


def slow_users_line(configs: Sequence[Mapping[str, Any]]) -> str | None:
    """Where rows chosen for the most tokens/s in all (``configs``, the shown rows' in order) decode each user below
    the interactive target, which rows and how to ask for the target instead; None where none does.

    >>> print(slow_users_line([{"decode_tokens_per_s_per_user": 5.6}, {"decode_tokens_per_s_per_user": 40.0},
    ...                        {"decode_tokens_per_s_per_user": 7.7}]))
    Each offering runs the concurrency with the most tokens/s in all, the cheapest tokens (right for batch work); rows #1 (5.6 tok/s), #3 (7.7 tok/s) serve each user below 33.3 tok/s, a token every 30 ms (AIConfigurator's default latency target): for chat, set --min-tokens-per-s-per-user 33.3 (API min_tokens_per_s_per_user) or your own target.
    >>> "#1 (0.030 tok/s)" in slow_users_line([{"decode_tokens_per_s_per_user": 0.0302}])
    True
    >>> slow_users_line([{"decode_tokens_per_s_per_user": 40.0}]) is None
    True
    """
    target = interactive_tokens_per_s()
    slow = [(i, float(c["decode_tokens_per_s_per_user"])) for i, c in enumerate(configs, 1)
            if c.get("decode_tokens_per_s_per_user") is not None and float(c["decode_tokens_per_s_per_user"]) < target]
    if not slow:
        return None
    rows = ", ".join(f"#{i} ({fmt_figure(speed, 1)} tok/s)" for i, speed in slow)
    return (f"Each offering runs the concurrency with the most tokens/s in all, the cheapest tokens (right for batch "
            f"work); {'row' if len(slow) == 1 else 'rows'} {rows} serve{'s' if len(slow) == 1 else ''} each user "
            f"below {target:.1f} tok/s, a token every {1000 / target:.0f} ms (AIConfigurator's default latency "
            f"target): for chat, set --min-tokens-per-s-per-user {target:.1f} (API min_tokens_per_s_per_user) or your own "
            "target.")
