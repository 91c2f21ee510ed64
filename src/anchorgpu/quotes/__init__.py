"""Fixed-term quotes: pure pricing of whole servers of an offering for ``Nh``, ``Nw`` or ``Nmonth``.

Public API:

- :func:`price_quote` ``(catalog, offering_id, quantity, term, options, now, validity_s=86400, *,
  region=None, quote_id=None) -> Quote`` — pure; ``now`` is passed in, never read;
- :class:`Quote`, :class:`QuoteLine` (frozen), :func:`bill_term`, :func:`egress_included_tb`,
  :func:`servers_for_gpus` (a GPU count → whole servers of an offering, partial GPUs refused),
  :func:`term_total_usd` (the servers-only cost of a term, None when unpriced — for ranking), :func:`run_term`
  (the term a run of so many hours is quoted for: hours, or the shortest priced unit covering them);
- :func:`quote_to_json` / :func:`quote_from_json` — the JSON contract and its inverse;
- errors: :class:`UnpricedOffering`, :class:`RegionNotOffered`, :class:`InvalidOptionRequest`,
  :class:`InvalidQuoteRequest` (all ``InvalidInput``).

The pricing rules are written out in :mod:`anchorgpu.quotes.pricing`.
"""

from anchorgpu.quotes.errors import InvalidOptionRequest, InvalidQuoteRequest, RegionNotOffered, UnpricedOffering
from anchorgpu.quotes.model import LineKind, Quote, QuoteLine
from anchorgpu.quotes.pricing import (
    DEFAULT_VALIDITY_S,
    Billing,
    bill_term,
    egress_included_tb,
    price_quote,
    run_term,
    servers_for_gpus,
    term_total_usd,
)
from anchorgpu.quotes.serialize import line_to_json, quote_from_json, quote_to_json

__all__ = [
    "DEFAULT_VALIDITY_S",
    "Billing",
    "InvalidOptionRequest",
    "InvalidQuoteRequest",
    "LineKind",
    "Quote",
    "QuoteLine",
    "RegionNotOffered",
    "UnpricedOffering",
    "bill_term",
    "egress_included_tb",
    "line_to_json",
    "price_quote",
    "quote_from_json",
    "quote_to_json",
    "run_term",
    "servers_for_gpus",
    "term_total_usd",
]
