"""Affine expressions over loop iterators: the only index and bound language."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

from ..errors import NotAffineError

AffineLike = Union["Affine", int]


@dataclass(frozen=True)
class Affine:
    """``sum(coeff * iterator) + const`` with integer coefficients.

    ``terms`` is sorted by iterator name and holds no zero coefficient, so two
    equal expressions compare and hash equal.
    """

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def var(name: str) -> Affine:
        return Affine(((name, 1),), 0)

    @staticmethod
    def of(value: AffineLike) -> Affine:
        """Coerce an int or an Affine to an Affine; refuse anything else."""
        if isinstance(value, Affine):
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise NotAffineError(
                f"{value!r} is not an affine expression of loop iterators "
                "(use integers, iterators, + and -, and multiplication by integer constants)"
            )
        return Affine((), int(value))

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.terms)

    def coeff(self, name: str) -> int:
        return dict(self.terms).get(name, 0)

    def _combine(self, other: AffineLike, sign: int) -> Affine:
        other = Affine.of(other)
        acc = dict(self.terms)
        for name, c in other.terms:
            acc[name] = acc.get(name, 0) + sign * c
        terms = tuple(sorted((n, c) for n, c in acc.items() if c != 0))
        return Affine(terms, self.const + sign * other.const)

    def __add__(self, other: AffineLike) -> Affine:
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: AffineLike) -> Affine:
        return self._combine(other, -1)

    def __rsub__(self, other: AffineLike) -> Affine:
        return Affine.of(other)._combine(self, -1)

    def __neg__(self) -> Affine:
        return Affine((), 0)._combine(self, -1)

    def __mul__(self, other: AffineLike) -> Affine:
        if isinstance(other, Affine):
            if other.terms and self.terms:
                raise NotAffineError(
                    f"({self}) * ({other}) multiplies two iterators; indices and bounds must be affine"
                )
            if not other.terms:
                other = other.const
            else:
                return other * self.const
        if isinstance(other, bool) or not isinstance(other, int):
            return NotImplemented
        terms = tuple((n, c * other) for n, c in self.terms if c * other != 0)
        return Affine(terms, self.const * other)

    __rmul__ = __mul__

    def to_c(self, env: Mapping[str, str] | None = None) -> str:
        """C (and isl) text, with iterators renamed through ``env``."""
        env = env or {}
        parts: list[str] = []
        for name, c in self.terms:
            v = env.get(name, name)
            if not v.isidentifier():
                v = f"({v})"
            mag = abs(c)
            term = v if mag == 1 else f"{mag} * {v}"
            parts.append(("- " if c < 0 else "+ ") + term)
        if self.const or not parts:
            parts.append(("- " if self.const < 0 else "+ ") + str(abs(self.const)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def __str__(self) -> str:
        return self.to_c()

    def to_json(self) -> dict:
        return {"terms": {n: c for n, c in self.terms}, "const": self.const}

    @staticmethod
    def from_json(d: Mapping) -> Affine:
        terms = d.get("terms", {})
        if not isinstance(terms, Mapping):
            raise NotAffineError(f"affine 'terms' must be an object, got {terms!r}")
        out = Affine.of(d.get("const", 0))
        for name, c in terms.items():
            out = out + Affine.var(str(name)) * Affine.of(c).const
        return out
