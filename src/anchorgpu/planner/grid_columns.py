"""The catalog sweep's result columns, kept on the grid's axes until one is read.

A sweep's columns hold one entry per configuration (tens of thousands), but most of them repeat along the grid:
the layout's TP is the same for every weight format, KV dtype and concurrency it is tried with. A column is
flattened to one entry per configuration the first time it is read (then kept; a column computed on the whole
grid in its order is read as it is); one configuration's values are read straight from the grid.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["GridColumns"]

Array = npt.NDArray[Any]


class GridColumns(Mapping[str, Array]):
    """Columns of a grid of ``shape`` (flattened in C order, the sweep's order), each given broadcastable to it.

    >>> c = GridColumns({"tp": np.array([[1], [2]]), "weights": np.array([[0, 1, 2]])}, (2, 3))
    >>> c["tp"].tolist(), c.values_at(4), c.widen(c.compact("tp") * 10).tolist()
    ([1, 1, 1, 2, 2, 2], {'tp': 2, 'weights': 1}, [10, 10, 10, 20, 20, 20])
    """

    def __init__(self, grid: Mapping[str, Array], shape: tuple[int, ...], *, flatten: bool = False) -> None:
        self._shape = shape
        # each column with the grid's number of axes, of length 1 along those it does not vary on
        self._compact = {name: values.reshape((1,) * (len(shape) - values.ndim) + values.shape)
                         for name, values in grid.items()}
        self._views = {name: np.broadcast_to(values, shape) for name, values in self._compact.items()}
        self._flat: dict[str, Array] = {}
        if flatten:
            for name in self._compact:
                self[name]

    def __getitem__(self, name: str) -> Array:
        flat = self._flat.get(name)
        if flat is None:
            flat = self._flat[name] = self.widen(self._compact[name])
        return flat

    def __iter__(self) -> Iterator[str]:
        return iter(self._compact)

    def __len__(self) -> int:
        return len(self._compact)

    @property
    def shape(self) -> tuple[int, ...]:
        """The grid's shape (its first axis: the layouts)."""
        return self._shape

    def compact(self, name: str) -> Array:
        """Column ``name`` on the grid's axes, of length 1 along those it does not vary on (not a copy)."""
        return self._compact[name]

    def widen(self, values: Array) -> Array:
        """``values`` (broadcastable to the grid) as one entry per configuration; no copy when it already is."""
        if values.shape == self._shape and values.flags.c_contiguous:
            return values.reshape(-1)
        return np.ascontiguousarray(np.broadcast_to(values, self._shape)).reshape(-1)

    def values_at(self, i: int) -> dict[str, Any]:
        """Configuration ``i``'s value in every column, as plain Python values (``ndarray.item`` reads a view
        at a flat index as it reads a flat column)."""
        return {name: values.item(i) for name, values in self._views.items()}

    def value_at(self, name: str, i: int) -> Any:
        """Configuration ``i``'s value in one column, as a plain Python value."""
        return self._views[name].item(i)
