"""The C frontend under mutated input: every mutant of the C files is read or refused with a LoopcostError
(a message with file and line), never with another exception."""

import random
import re
from pathlib import Path

import pytest

from loopcost.errors import LoopcostError
from loopcost.frontend import load_c
from loopcost.frontend.parse import parse_c
from loopcost.kernels import KERNELS

C_DIR = Path(__file__).parent / "c"
_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\S")
_SNIPPETS = ["?", ":", "=", "==", "+=", "*", "&", "(", ")", "[", "]", "{", "}", ";", ",", "0", "1.5", "-1", "n",
             "i", "sqrt(", "a ? b : c", "x = y = 0.0", "char", "long", "#include \"missing.h\"", "#define N 0",
             "for (;;)", "if (A[0][0] > 0)", "return;", "/*", "*/", "\"", "'", "\\", "#pragma scop", "goto l;"]


_OPERATORS = ["+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!="]


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits of ``text``. Half keep the syntax (an identifier swapped for another of the
    file, a number changed, an operator swapped); the rest delete, replace or double a token, insert a
    snippet, drop or double a line, or cut the file short."""
    for _ in range(rng.randint(1, 3)):
        tokens = list(_TOKEN.finditer(text))
        names = [t for t in tokens if t.group()[0].isalpha() or t.group()[0] == "_"]
        numbers = [t for t in tokens if t.group()[0].isdigit()]
        operators = [t for t in tokens if t.group() in _OPERATORS]
        kind = rng.randrange(12)
        pool = {6: names, 7: names, 8: numbers, 9: numbers, 10: operators, 11: operators}.get(kind, tokens)
        if not pool:
            continue
        t = rng.choice(pool)
        if kind in (6, 7):
            new = rng.choice(names).group()
        elif kind in (8, 9):
            new = str(rng.choice([0, 1, 2, 7, -3, 10**9]))
        elif kind >= 10:
            new = rng.choice(_OPERATORS)
        elif kind < 3:
            new = ["", rng.choice(_SNIPPETS), t.group() * 2][kind]
        elif kind == 3:
            new = t.group() + " " + rng.choice(_SNIPPETS) + " "
        elif kind == 4:
            lines = text.splitlines(keepends=True)
            k = rng.randrange(len(lines))
            lines[k:k + 1] = [] if rng.random() < 0.5 else [lines[k], lines[k]]
            text = "".join(lines)
            continue
        else:
            text = text[:t.start()]
            continue
        text = text[:t.start()] + new + text[t.end():]
    return text


def sizes(path: Path) -> tuple[dict[str, str], dict[str, int]]:
    """-D and --param values that read ``path`` unmutated at its library kernel's small size (none for a
    file of no library kernel: its own)."""
    if path.stem not in KERNELS:
        return {}, {}
    small = KERNELS[path.stem].sizes["small"]
    defines = {name.rstrip("_").upper(): str(v) for name, v in small.items()}
    return defines, {n: int(defines[n.upper()]) for n in parse_c(path, defines=defines).int_params}


@pytest.mark.slow
def test_mutated_c_files_are_read_or_refused_with_a_loopcost_error(tmp_path):
    rng = random.Random(2112)
    sources = {p: sizes(p) for p in sorted(C_DIR.glob("*.c"))}
    read = refused = 0
    for case in range(240):
        src = rng.choice(list(sources))
        defines, params = sources[src]
        path = tmp_path / f"m{case}.c"
        path.write_text(mutate(src.read_text(), rng))
        try:
            load_c(path, defines=defines, params=params)
            read += 1
        except LoopcostError as e:
            assert str(e).strip(), f"case {case}: an empty message"
            refused += 1
        except Exception as e:  # noqa: BLE001 - what this test looks for
            pytest.fail(f"case {case} ({src.name}): {type(e).__name__}: {e}\n--- {path}\n{path.read_text()}")
    assert read + refused == 240 and read > 0 and refused > 0
