"""Typed, validated reads from a Hugging Face ``config.json`` mapping.

Every failure is an :class:`~anchorgpu.errors.InvalidConfig` whose one-line message names the file
and the field, e.g. ``llama.json: field 'hidden_size' must be a positive integer, got -4096``.
Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from anchorgpu.errors import InvalidConfig

__all__ = ["ConfigReader"]

_MISSING: Final = object()
# No real dimension comes near this; it keeps products of sizes and per-layer tuples sane on junk input.
MAX_SIZE: Final = 1 << 40


class ConfigReader:
    """Reads fields of one config mapping; ``where`` names it in error messages.

    >>> r = ConfigReader({"hidden_size": 4096, "bias": True}, where="cfg.json")
    >>> r.size("hidden_size"), r.flag("bias", default=False), r.size("n_embd", "hidden_size")
    (4096, True, 4096)
    >>> r.size("num_hidden_layers")
    Traceback (most recent call last):
    anchorgpu.errors.InvalidConfig: cfg.json: required field 'num_hidden_layers' is missing
    """

    __slots__ = ("data", "where")

    def __init__(self, data: Mapping[str, object], *, where: str) -> None:
        self.data = data
        self.where = where or "config.json"

    def fail(self, field: str, reason: str) -> InvalidConfig:
        """The error to raise for ``field`` (one line, names the file and the field)."""
        return InvalidConfig(f"{self.where}: field {field!r} {reason}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def _first(self, keys: Sequence[str]) -> tuple[str, object]:
        for key in keys:
            if key in self.data and self.data[key] is not None:
                return key, self.data[key]
        return keys[0], _MISSING

    def size(self, *keys: str, default: int | None = None, minimum: int = 1, maximum: int = MAX_SIZE) -> int:
        """A whole number in ``[minimum, maximum]`` from the first present key (aliases), else ``default``.

        Raises ``InvalidConfig`` when absent without a default, not an integer, or out of range.
        """
        key, value = self._first(keys)
        if value is _MISSING:
            if default is None:
                raise InvalidConfig(f"{self.where}: required field {keys[0]!r} is missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                kind = "positive integer" if minimum == 1 else f"integer >= {minimum}"
                raise self.fail(key, f"must be a {kind}, got {value!r}")
        if value < minimum:
            kind = "positive integer" if minimum == 1 else f"integer >= {minimum}"
            raise self.fail(key, f"must be a {kind}, got {value!r}")
        if value > maximum:
            raise self.fail(key, f"must be at most {maximum:,}, got {value!r}")
        return value

    def opt_size(self, key: str, *, minimum: int = 1, maximum: int = MAX_SIZE) -> int | None:
        """Like :meth:`size` but ``None`` when the key is absent or null."""
        if not self.has(key):
            return None
        return self.size(key, minimum=minimum, maximum=maximum)

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {value!r}")
        return value

    def number(self, key: str, *, default: float) -> float:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be a number, got {value!r}")
        if value <= 0:
            raise self.fail(key, f"must be positive, got {value!r}")
        return float(value)

    def text(self, key: str, *, default: str | None = None) -> str:
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise InvalidConfig(f"{self.where}: required field {key!r} is missing")
            return default
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {value!r}")
        return value

    def int_list(self, key: str) -> tuple[int, ...]:
        """A list of non-negative integers (e.g. ``mlp_only_layers``); empty when absent."""
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in value):
            raise self.fail(key, f"must be a list of non-negative integers, got {value!r}")
        return tuple(value)

    def str_list(self, key: str) -> tuple[str, ...] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
            raise self.fail(key, f"must be a list of strings, got {value!r}")
        return tuple(value)

    def sub(self, key: str) -> ConfigReader:
        """A reader over a nested mapping (``text_config`` of a multimodal config)."""
        value = self.data.get(key)
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be an object")
        return ConfigReader(value, where=f"{self.where} [{key}]")
