"""C declarations and literals as loopcost reads them: element types, the shapes of arrays and pointers, the
integer scalars that count (sizes, iterators), integer constants."""

from __future__ import annotations

import operator

from pycparser import c_ast, c_generator

from .parse import CSource

C_TYPES = {"double": "float64", "float": "float32", "int": "int32", "char": "int8", "short": "int16",
           "short int": "int16", "long": "int64", "long int": "int64", "long long": "int64", "long long int": "int64",
           "unsigned char": "uint8", "unsigned short": "uint16", "unsigned short int": "uint16", "unsigned": "uint32",
           "unsigned int": "uint32", "unsigned long": "uint64", "unsigned long int": "uint64",
           "unsigned long long": "uint64", "unsigned long long int": "uint64"}
SUPPORTED = "double, float, and char, short, int and long, signed or unsigned"


def text(node: c_ast.Node) -> str:
    return c_generator.CGenerator().visit(node)


def _c_divmod(a: int, b: int) -> tuple[int, int]:
    """C's ``a / b`` and ``a % b`` on ints: the quotient truncates toward zero."""
    q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
    return q, a - q * b


#: C's binary operators on integer constants, as C computes them (``/`` and ``%`` by ``_c_divmod``)
_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "<<": operator.lshift, ">>": operator.rshift,
         "&": operator.and_, "|": operator.or_, "^": operator.xor,
         "/": lambda a, b: _c_divmod(a, b)[0], "%": lambda a, b: _c_divmod(a, b)[1]}
FOLDED = tuple(_FOLD)


def fold(op: str, a: int, b: int) -> int | None:
    """``a op b`` on C integers (an operator of ``FOLDED``); None where C leaves it undefined (a division by
    zero, a shift by a negative count or by the width of a long or more)."""
    if (op in ("/", "%") and b == 0) or (op in ("<<", ">>") and not 0 <= b < 63):
        return None
    return _FOLD[op](a, b)


def int_literal(text: str) -> int:
    t = text.rstrip("uUlL")
    if t.lower().startswith("0x"):
        return int(t, 16)
    if len(t) > 1 and t.startswith("0"):
        return int(t, 8)
    return int(t)


#: the type ``base_type`` gives an integer scalar that counts (any width, signed or not, but ``char``): a size
#: parameter, an int local, a loop iterator
INDEX = "index"
#: the first dimension of a pointer (``double *A``, ``double (*A)[M]``) or of ``double A[][M]``: its extent is
#: what the region's accesses reach (``sized_by_accesses``)
UNSIZED = c_ast.Constant("int", "UNSIZED")


def returns_void(f: c_ast.FuncDef) -> bool:
    """Whether function ``f`` returns nothing (``void f(...)``)."""
    t = f.decl.type.type
    return isinstance(t, c_ast.TypeDecl) and getattr(t.type, "names", None) == ["void"]


def record_pointer(decl: c_ast.Decl) -> bool:
    """Whether ``decl`` is a pointer to a struct or union (``struct args_t *a``)."""
    t = decl.type
    return isinstance(t, c_ast.PtrDecl) and isinstance(t.type, c_ast.TypeDecl) \
        and isinstance(t.type.type, (c_ast.Struct, c_ast.Union))


def base_type(src: CSource, decl: c_ast.Node) -> tuple[str, list[c_ast.Node | None]]:
    """(dtype, array dimensions) of a declaration's type: the first is ``UNSIZED`` for a pointer to elements or
    rows (``double *A``, ``double (*A)[M]``) and for ``double A[][M]``; pointers to pointers, arrays of
    pointers and unknown types are refused."""
    dims: list[c_ast.Node | None] = []
    t = decl.type
    if isinstance(t, c_ast.PtrDecl):
        dims.append(UNSIZED)
        t = t.type
    while isinstance(t, c_ast.ArrayDecl):
        dims.append(UNSIZED if t.dim is None and not dims else t.dim)
        t = t.type
    if isinstance(t, c_ast.PtrDecl):
        raise src.error(decl, f"{decl.name!r} is " + ("a pointer to pointers" if dims == [UNSIZED] else
                                                       "an array of pointers")
                        + f"; loopcost reads arrays whose rows lie side by side, e.g. double *{decl.name} (indexed "
                          f"{decl.name}[i * m + j]) or double {decl.name}[N][M]")
    if not isinstance(t, c_ast.TypeDecl) or not isinstance(t.type, c_ast.IdentifierType):
        raise src.error(decl, f"the type of {decl.name!r} is not supported (use {SUPPORTED})")
    if not dims and src.is_index(t.type.names):
        return INDEX, dims
    return element_type(src, decl, t.type.names, repr(decl.name)), dims


def spelled(src: CSource, names: list[str]) -> str:
    """A type's words with typedefs spelled out and ``unsigned`` first (``char unsigned`` is ``unsigned char``)."""
    words = src.resolve(names).split()
    return " ".join(["unsigned"] * ("unsigned" in words) + [w for w in words if w != "unsigned"])


def element_type(src: CSource, node: c_ast.Node, names: list[str], what: str) -> str:
    """The dtype of elements of C type ``names`` (typedefs spelled out; ``unsigned`` first) that ``what``
    has."""
    name = spelled(src, names)
    if name not in C_TYPES:
        raise src.error(node, f"{what} has type {name!r}; loopcost supports {SUPPORTED}")
    return C_TYPES[name]


def return_type(src: CSource) -> str | None:
    """The dtype of the value ``src``'s function returns (None: void, or a type loopcost does not read)."""
    t = src.function.decl.type.type
    if not isinstance(t, c_ast.TypeDecl) or not isinstance(t.type, c_ast.IdentifierType):
        return None
    return C_TYPES.get(spelled(src, t.type.names))
