"""New names that do not clash: the one rule for loops the DSL, the C frontend and transformations add."""

from __future__ import annotations

from collections.abc import Container


def unique_name(base: str, taken: Container[str]) -> str:
    """``base`` if it is not ``taken``, else the first of ``base_1``, ``base_2``, ... that is not."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name
