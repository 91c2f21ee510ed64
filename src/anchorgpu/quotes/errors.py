"""Named errors of pricing a quote (subclasses of the one tree in :mod:`anchorgpu.errors`).

All are ``InvalidInput`` (CLI exit 2, HTTP 422): the request cannot be priced as asked, and nothing
was stored. Unknown offerings and options are ``UnknownEntity`` (exit 3, 404) with did-you-mean.
"""

from __future__ import annotations

from anchorgpu.errors import InvalidInput

__all__ = ["InvalidOptionRequest", "InvalidQuoteRequest", "RegionNotOffered", "UnpricedOffering"]


class UnpricedOffering(InvalidInput):
    """The offering (or an option) has no list price for the requested term unit: price on request.

    Unpriced is a state of the catalog, never a price of 0.
    """

    code = "unpriced_offering"


class RegionNotOffered(InvalidInput):
    """The offering is not listed in the requested region."""

    code = "region_not_offered"


class InvalidOptionRequest(InvalidInput):
    """An option count that is not a whole number, is negative, exceeds the per-server maximum, or an
    option that does not apply to the offering's kind."""

    code = "invalid_option"


class InvalidQuoteRequest(InvalidInput):
    """Other malformed pricing inputs (a naive ``now``, a non-positive validity)."""

    code = "invalid_quote_request"
