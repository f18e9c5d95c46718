"""Frames made only when a plan first asks for them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from pyspark.sql import DataFrame


class OnFirstUse(Mapping[str, DataFrame]):
    """Frames by name, each made by its function when first asked for."""

    def __init__(self) -> None:
        self._make: dict[str, Callable[[], DataFrame]] = {}
        self._made: dict[str, DataFrame] = {}

    def add(self, name: str, make: Callable[[], DataFrame]) -> None:
        """Register how to make the frame `name`."""
        self._make[name] = make

    def __getitem__(self, name: str) -> DataFrame:
        if name not in self._made:
            self._made[name] = self._make[name]()
        return self._made[name]

    def __contains__(self, name: object) -> bool:
        return name in self._make

    def __iter__(self) -> Iterator[str]:
        return iter(self._make)

    def __len__(self) -> int:
        return len(self._make)
