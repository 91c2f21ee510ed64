"""The catalog sweep's result columns, kept on the grid's axes until one is read.

A sweep's columns hold one entry per configuration (tens of thousands), but most of them repeat along the grid:
the layout's TP is the same for every weight format, KV dtype and concurrency it is tried with. A column is
flattened to one entry per configuration the first time it is read (then kept); one configuration's values are
read straight from the grid, without flattening anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["GridColumns"]


class GridColumns(Mapping[str, npt.NDArray[Any]]):
    """Columns of a grid of ``shape`` (flattened in C order, the sweep's order), each given broadcastable to it.

    >>> c = GridColumns({"tp": np.array([[1], [2]]), "weights": np.array([[0, 1, 2]])}, (2, 3))
    >>> c["tp"].tolist(), c.values_at(4)
    ([1, 1, 1, 2, 2, 2], {'tp': 2, 'weights': 1})
    """

    def __init__(self, grid: Mapping[str, npt.NDArray[Any]], shape: tuple[int, ...], *, flatten: bool = False) -> None:
        self._grid = {name: np.broadcast_to(values, shape) for name, values in grid.items()}  # views, no copies
        self._flat: dict[str, npt.NDArray[Any]] = {}
        if flatten:
            for name in self._grid:
                self[name]

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        flat = self._flat.get(name)
        if flat is None:
            flat = self._flat[name] = np.ascontiguousarray(self._grid[name]).reshape(-1)
        return flat

    def __iter__(self) -> Iterator[str]:
        return iter(self._grid)

    def __len__(self) -> int:
        return len(self._grid)

    def values_at(self, i: int) -> dict[str, Any]:
        """Configuration ``i``'s value in every column, as plain Python values (``ndarray.item`` reads a view
        at a flat index as it reads a flat column)."""
        return {name: values.item(i) for name, values in self._grid.items()}

    def value_at(self, name: str, i: int) -> Any:
        """Configuration ``i``'s value in one column, as a plain Python value."""
        return self._grid[name].item(i)
