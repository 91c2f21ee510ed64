"""Sentences the pages build from the API's JSON, in the page's language: rental terms with their plurals,
allocation states and events, a quote's lines and its "nothing else is billed" statement.

The JSON keeps its English words (``"unit": "week"``, ``"state": "stopped"``, a line's ``description``): it is the
API's contract. Pages show the same facts through the message catalogue instead (:mod:`anchorgpu.web.i18n`), built
from the JSON's structured fields, so a Russian page reads "2 недели" where the JSON says ``{"unit": "week",
"count": 2}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from babel.numbers import format_decimal

from anchorgpu.web.i18n import PageText

__all__ = ["Wording"]

_UNIT_HOURS = {"hour": 1, "week": 168, "month": 720}


class Wording:
    """The page sentences of one locale (the templates use them as filters)."""

    def __init__(self, locale: str) -> None:
        self.text = PageText(locale)
        self.locale = self.text.locale
        t = self.text
        self._states = {
            "scheduled": t.pgettext("allocation state", "scheduled"),
            "active": t.pgettext("allocation state", "active"),
            "stopped": t.pgettext("allocation state", "stopped"),
            "expired": t.pgettext("allocation state", "expired"),
            "terminated": t.pgettext("allocation state", "terminated"),
        }
        self._events = {
            "created": t.pgettext("allocation event", "created"),
            "activated": t.pgettext("allocation event", "activated"),
            "stopped": t.pgettext("allocation event", "stopped"),
            "started": t.pgettext("allocation event", "started"),
            "extended": t.pgettext("allocation event", "extended"),
            "expired": t.pgettext("allocation event", "expired"),
            "terminated": t.pgettext("allocation event", "terminated"),
        }

    def option(self, option_id: str, name: str, unit: str) -> tuple[str, str]:
        """A catalog option's name and unit in the page's language. The catalog's English words are data: each
        translation here is used only while the catalog still says what was translated, else its English shows."""
        t = self.text
        known = {
            ("nvme-tb", "Extra local NVMe", "1 TB of local NVMe"): (t.gettext("Extra local NVMe"), t.gettext("1 TB of local NVMe")),
            ("ipv4", "Extra public IPv4", "1 public IPv4 address"): (t.gettext("Extra public IPv4"), t.gettext("1 public IPv4 address")),
            ("volume-tb", "Network block volume", "1 TB of replicated network block storage"):
                (t.gettext("Network block volume"), t.gettext("1 TB of replicated network block storage")),
        }
        return known.get((option_id, name, unit), (name, unit))

    def term(self, value: Any) -> str:
        """A term in words: ``"1w"`` or ``{"unit": "week", "count": 2}`` → en '1 week', '2 weeks'; ru '1 неделя',
        '2 недели', '5 недель'. Text that is not a term is shown as given.

        >>> Wording("en").term("2w"), Wording("ru").term({"unit": "month", "count": 5}), Wording("ru").term("7 days")
        ('2 weeks', '5 месяцев', '1 неделя')
        """
        from anchorgpu.errors import AnchorError
        from anchorgpu.units import parse_term

        if isinstance(value, Mapping):
            unit, count = value.get("unit"), value.get("count")
        else:
            try:
                parsed = parse_term(str(value))
            except (AnchorError, ValueError):
                return str(value)
            unit, count = parsed.unit, parsed.count
        if not isinstance(count, int) or isinstance(count, bool):
            return str(value)
        t = self.text
        if unit == "hour":
            return t.ngettext("%(num)d hour", "%(num)d hours", count)
        if unit == "week":
            return t.ngettext("%(num)d week", "%(num)d weeks", count)
        if unit == "month":
            return t.ngettext("%(num)d month", "%(num)d months", count)
        return str(value)

    def state(self, state: Any) -> str:
        """An allocation's state for people (its badge keeps the code as its CSS class)."""
        return self._states.get(str(state or ""), str(state or "–"))

    def event(self, kind: Any) -> str:
        """An allocation event's kind for people (the history table)."""
        return self._events.get(str(kind or ""), str(kind or "–"))

    def quote_lines(self, quote: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The quote's lines, each with ``description``, ``billed`` and ``note`` in the page's language (the JSON's
        own fields stay as they are, under ``line``)."""
        t = self.text
        servers = int(quote.get("quantity") or 1)
        term = quote.get("term") or {}
        lines = []
        for line in quote.get("lines") or []:
            if line.get("kind") == "servers":
                description = t.ngettext("%(offering)s: %(num)d GPU per server", "%(offering)s: %(num)d GPUs per server",
                                         int(quote.get("gpus_per_server") or 0), offering=quote.get("offering", line.get("item")))
            else:
                per_server = int(line.get("quantity") or 0) // servers
                description = t.gettext("%(option)s: %(count)s per server", option=self._option_name(str(line.get("item"))),
                                        count=per_server)
            billed = {"unit": line.get("billed_unit"), "count": line.get("billed_count")}
            note = ""
            if line.get("billed_unit") != term.get("unit") and line.get("billed_unit") in _UNIT_HOURS:
                covered_h = int(line.get("billed_count") or 0) * _UNIT_HOURS[str(line["billed_unit"])]
                note = t.gettext("%(hours)s h billed as %(billed)s: cheaper than %(asked)s at that unit's price; a term of "
                                 "%(covered)s h costs the same", hours=term.get("hours"), billed=self.term(billed),
                                 asked=self.term(term), covered=covered_h)
            lines.append({"line": line, "description": description, "billed": self.term(billed), "note": note})
        return lines

    def _option_name(self, option_id: str) -> str:
        from anchorgpu.catalog import load_catalog

        for option in load_catalog().options:
            if option.id == option_id:
                return self.option(option.id, option.name, option.unit)[0]
        return option_id

    def quote_statement(self, quote: Mapping[str, Any]) -> str:
        """What the total covers and includes (the JSON's ``nothing_else_billed``, from the quote's own fields)."""
        t = self.text
        servers = int(quote.get("quantity") or 1)
        egress = str(quote.get("egress_included_tb") or "0")
        included = egress if self.locale == "en" else str(format_decimal(Decimal(egress), format="#,##0.###", locale=self.locale))
        text = t.ngettext(
            "Nothing else is billed: the total covers the GPU servers and the options listed. Included: %(egress)s TB of "
            "egress over the %(hours)s h term (%(per_server)s TB per server per 720-h month, pro-rated by hours, for "
            "%(num)d server, fair use).",
            "Nothing else is billed: the total covers the GPU servers and the options listed. Included: %(egress)s TB of "
            "egress over the %(hours)s h term (%(per_server)s TB per server per 720-h month, pro-rated by hours, for "
            "%(num)d servers, fair use).",
            servers, egress=included, hours=(quote.get("term") or {}).get("hours"),
            per_server=quote.get("egress_tb_per_month_per_server"))
        if quote.get("ddos_protection"):
            text += " " + t.gettext("DDoS protection on public IPs is included.")
        return text + " " + t.gettext("Stopping an allocation does not pause the paid term.")

