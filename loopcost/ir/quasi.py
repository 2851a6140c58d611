"""One loop level read without isl: its extent over a box domain and its coefficients.

A level (``CompSchedule.levels``) is text that the transformations build from the
computation's iterators, integers, ``+``, ``-``, ``integer * e`` and ``floor(e/n)``.
It parses into a ``Quasi``: a quasi-affine expression, integer coefficients outside
its floors. Over a box (constant bounds, no guards), a level that never moves against
an iterator at one place and with it at another takes its extremes at corners of the
box: its extent is then exact without an integer program. Its coefficients, floors
dropped, are what isl's reading gives (``extract._levels``) when every floor divides by
a power of two (the float sums are exact in any order) and the floors are not nested
in ways isl keeps nested. Anything else gives None, and the caller asks isl.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Quasi(NamedTuple):
    """``sum(coefs[k] * x_k) + const + sum(c * floor(num / d) for c, num, d in divs)``."""

    coefs: tuple[int, ...]
    const: int
    divs: tuple[tuple[int, Quasi, int], ...]


class _Unsupported(Exception):
    """Text outside the grammar the transformations write."""


_TOKEN = re.compile(r"\d+|[A-Za-z_]\w*|[-+*/()]")
_ATOM_IN_PARENS = re.compile(r"(?<!\w)\((\w+)\)")


def unwrap(text: str) -> str:
    """``text`` without the parentheses around single names and numbers that rewriting levels adds:
    the same level, in fewer distinct texts."""
    while True:
        out = _ATOM_IN_PARENS.sub(r"\1", text)
        if out == text:
            return out
        text = out


def _add(a: Quasi, b: Quasi, sign: int = 1) -> Quasi:
    return Quasi(tuple(x + sign * y for x, y in zip(a.coefs, b.coefs, strict=True)), a.const + sign * b.const,
                 a.divs + tuple((sign * c, num, d) for c, num, d in b.divs))


def _scale(a: Quasi, n: int) -> Quasi:
    return Quasi(tuple(n * x for x in a.coefs), n * a.const, tuple((n * c, num, d) for c, num, d in a.divs))


class _Parser:
    """Recursive descent over ``expr := term (('+'|'-') term)*``, ``term := INT '*' factor | factor``,
    ``factor := '-' factor | '(' expr ')' | 'floor' '(' factor '/' INT ')' | INT | NAME``."""

    def __init__(self, text: str, index: dict[str, int]) -> None:
        self.tokens = _TOKEN.findall(text)
        if "".join(self.tokens) != text.replace(" ", ""):
            raise _Unsupported(text)
        self.pos = 0
        self.index = index

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise _Unsupported(f"expected {expected!r} at token {self.pos}")
        self.pos += 1
        return tok

    def constant(self, value: int) -> Quasi:
        return Quasi((0,) * len(self.index), value, ())

    def expr(self) -> Quasi:
        out = self.term()
        while self.peek() in ("+", "-"):
            sign = 1 if self.take() == "+" else -1
            out = _add(out, self.term(), sign)
        return out

    def term(self) -> Quasi:
        tok = self.peek()
        if tok is not None and tok.isdigit() and self.pos + 1 < len(self.tokens) and self.tokens[self.pos + 1] == "*":
            self.pos += 2
            return _scale(self.factor(), int(tok))
        return self.factor()

    def factor(self) -> Quasi:
        tok = self.take()
        if tok == "-":
            return _scale(self.factor(), -1)
        if tok == "(":
            out = self.expr()
            self.take(")")
            return out
        if tok.isdigit():
            return self.constant(int(tok))
        if tok == "floor":
            self.take("(")
            num = self.factor()
            self.take("/")
            d = int(self.take()) if (self.peek() or "").isdigit() else 0
            self.take(")")
            if d <= 0:
                raise _Unsupported("floor by a non-positive or non-constant divisor")
            return Quasi((0,) * len(self.index), 0, ((1, num, d),))
        if tok not in self.index:
            raise _Unsupported(f"unknown name {tok!r}")
        coefs = [0] * len(self.index)
        coefs[self.index[tok]] = 1
        return Quasi(tuple(coefs), 0, ())


def parse(text: str, index: dict[str, int]) -> Quasi | None:
    """The level ``text`` over iterators ``index`` (name -> position), or None outside the grammar."""
    try:
        p = _Parser(text, index)
        out = p.expr()
        if p.peek() is not None:
            return None
        return out
    except _Unsupported:
        return None


def value(q: Quasi, x: tuple[int, ...]) -> int:
    """The level at integer point ``x``."""
    out = q.const + sum(c * v for c, v in zip(q.coefs, x, strict=True))
    for c, num, d in q.divs:
        out += c * (value(num, x) // d)
    return out


def _directions(q: Quasi) -> tuple[int, int]:
    """Bit masks of the iterators the level can grow with and can shrink with."""
    up = down = 0
    for k, c in enumerate(q.coefs):
        if c > 0:
            up |= 1 << k
        elif c < 0:
            down |= 1 << k
    for c, num, _ in q.divs:
        u, d = _directions(num)
        if c > 0:
            up, down = up | u, down | d
        elif c < 0:
            up, down = up | d, down | u
    return up, down


def extent(q: Quasi, box: tuple[tuple[int, int], ...]) -> float | None:
    """``max - min + 1`` of the level over the box (inclusive bounds per iterator), computed as isl's
    reading is; None unless the level is monotone in each iterator."""
    up, down = _directions(q)
    if up & down:
        return None
    lo = tuple(hi if down >> k & 1 else low for k, (low, hi) in enumerate(box))
    hi = tuple(high if up >> k & 1 else low for k, (low, high) in enumerate(box))
    return float(value(q, hi)) - float(value(q, lo)) + 1


def _flat(num: Quasi, d: int) -> tuple[Quasi, int] | None:
    """``floor(num/d)`` as ``floor(flat/d')`` with no floor inside, as isl rewrites
    ``floor((a + floor(b/m))/d)`` into ``floor((m*a + b)/(m*d))``; None for other nestings."""
    if not num.divs:
        return num, d
    if len(num.divs) != 1 or num.divs[0][0] != 1:
        return None
    _, inner, m = num.divs[0]
    flat = _flat(inner, m)
    if flat is None:
        return None
    b, m = flat
    return _add(_scale(Quasi(num.coefs, num.const, ()), m), b), m * d


def coefficients(q: Quasi) -> tuple[float, ...] | None:
    """Per iterator, the level's coefficient with floors dropped (``floor(i/32)`` has 1/32); None
    where isl's reading could differ (a divisor that is not a power of two, a floor isl keeps nested)."""
    out = [float(c) for c in q.coefs]
    for c, num, d in q.divs:
        flat = _flat(num, d)
        if flat is None:
            return None
        num, d = flat
        if num.divs or d & (d - 1) or d > 1 << 20:
            return None
        for k, n in enumerate(num.coefs):
            if n:
                if abs(c * n) > 1 << 30:
                    return None
                out[k] += c * n / d
    return tuple(out)


def read(text: str, index: dict[str, int], box: tuple[tuple[int, int], ...] | None
         ) -> tuple[float | None, tuple[float, ...]] | None:
    """The level ``text`` over iterators ``index``: (its extent over ``box``, None where there is no box or
    ``extent`` cannot tell; its ``coefficients``), or None where the text is outside the grammar or its
    coefficients could differ from isl's."""
    q = parse(text, index)
    coef = None if q is None else coefficients(q)
    if coef is None:
        return None
    return (None if box is None else extent(q, box)), coef
