"""Subpackage fronts whose modules need an extra: their names are imported on first use (PEP 562)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports each name from the module ``where`` gives for it."""

    def __getattr__(name: str) -> object:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        return getattr(importlib.import_module(module), name)

    return __getattr__
