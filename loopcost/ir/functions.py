"""The IR's math functions, and their names in C: the one table for expressions, code generation and
the C frontend."""

from __future__ import annotations

from .dtypes import DTYPES

#: the IR's value selects: ``select_lt(a, b, x, y)`` is C's ``a < b ? x : y``
SELECTS = {"select_lt": "<", "select_le": "<=", "select_eq": "==", "select_ne": "!="}
_LIBM_1 = ("sqrt", "exp", "log", "sin", "cos", "tanh", "floor", "tan", "asin", "acos", "atan", "sinh", "cosh",
           "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "ceil", "round", "trunc", "erf", "rint")
_LIBM_2 = ("pow", "atan2", "fmod", "hypot", "copysign")
#: C's conversions: ``to_uint8(x)`` is ``(unsigned char)(x)``
CASTS = {f"to_{d}": c for d, c in DTYPES.items()}
#: every function of the IR and its arity
CALLS = {
    **dict.fromkeys(_LIBM_1, 1), "abs": 1, "neg": 1, "min": 2, "max": 2, **dict.fromkeys(_LIBM_2, 2),
    **dict.fromkeys(SELECTS, 4), **dict.fromkeys(CASTS, 1),
}
#: the IR functions that libm has under the same name (``sqrt``; ``sqrtf`` on float)
LIBM = _LIBM_1 + _LIBM_2
_ABS = {"int8": "abs", "int16": "abs", "int32": "abs", "int64": "labs", "uint8": "abs", "uint16": "abs",
        "uint32": "abs", "uint64": "labs", "float32": "fabsf", "float64": "fabs"}
#: the libc and libm functions that generated C calls
C_CALLED = frozenset({*LIBM, *(f + "f" for f in LIBM), *_ABS.values()})
#: the C functions that the frontend reads, and the IR function each one is
FROM_C = {f: f for f in LIBM} | {f + "f": f for f in LIBM} | {
    "fabs": "abs", "fabsf": "abs", "abs": "abs", "labs": "abs", "llabs": "abs", "fmax": "max", "fmaxf": "max",
    "fmin": "min", "fminf": "min", "nearbyint": "rint", "nearbyintf": "rint", "lrint": "rint", "lrintf": "rint",
    "llrint": "rint", "llrintf": "rint", "lround": "round", "lroundf": "round", "llround": "round",
    "llroundf": "round"}


def c_function(fn: str, dtype: str) -> str:
    """The C function that computes IR function ``fn`` (``abs`` or one of ``LIBM``) on ``dtype`` values."""
    if fn == "abs":
        return _ABS[dtype]
    if fn not in LIBM:
        raise KeyError(f"{fn!r} is no C function of the IR (neg, min and max are operators and macros)")
    return fn + ("f" if dtype == "float32" else "")
