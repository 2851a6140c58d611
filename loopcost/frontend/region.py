"""The region loopcost chooses in a function whose whole body it cannot read (one that times its loops, prints
or calls other functions around them): of the runs of statements with loops, in any block, that it can read,
the one with the most work."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pycparser import c_ast

from ..errors import CSourceError
from ..ir.polyhedral import domain_str, points
from .declared import returns_void
from .parse import CSource, walk_nodes
from .translate import CKernel

#: statements a region may hold (declarations end a run: a name declared in the region would leave scope)
_KINDS = (c_ast.For, c_ast.If, c_ast.Assignment, c_ast.Compound, c_ast.Pragma, c_ast.EmptyStatement)


def candidates(src: CSource) -> list[CSource]:
    """Each maximal run of statements of ``_KINDS`` and calls of the file's void functions, with a ``for`` loop
    (in a called function too), in every block of the function (outermost blocks first), as a region."""
    functions = {f.decl.name: f for f in src.ast.ext if isinstance(f, c_ast.FuncDef) and returns_void(f)}

    def called(item: c_ast.Node | None) -> c_ast.FuncDef | None:
        return functions.get(item.name.name) if isinstance(item, c_ast.FuncCall) \
            and isinstance(item.name, c_ast.ID) else None

    def loops(item: c_ast.Node, seen: frozenset[str] = frozenset()) -> bool:
        return any(isinstance(n, c_ast.For) or (f := called(n)) is not None and f.decl.name not in seen
                   and loops(f.body, seen | {f.decl.name}) for n in walk_nodes(item))

    out = []
    for block in (n for n in walk_nodes(src.function.body) if isinstance(n, c_ast.Compound)):
        items = block.block_items or []
        start = None
        for k, item in enumerate([*items, None]):
            if isinstance(item, _KINDS) or called(item) is not None:
                start = k if start is None else start
                continue
            if start is not None and any(loops(i) for i in items[start:k]):
                out.append(replace(src, block=block, start=start, stop=k, found=True))
            start = None
    return out


def has_other_code(src: CSource) -> bool:
    """Whether the function does more than loop-nest code: calls as statements (timers, prints, other
    functions), loops that do not count, jumps, returns before its end."""
    body = src.function.body.block_items or []
    for block in (n for n in walk_nodes(src.function.body) if isinstance(n, c_ast.Compound)):
        for item in block.block_items or []:
            if isinstance(item, c_ast.Return) and not (block is src.function.body and item is body[-1]):
                return True
            if isinstance(item, (c_ast.FuncCall, c_ast.While, c_ast.DoWhile, c_ast.Switch, c_ast.Goto,
                                 c_ast.Break, c_ast.Continue, c_ast.Label)):
                return True
    return False


def work(k: CKernel) -> float:
    """How many times the region's statements run (its computations' points)."""
    return sum(points(domain_str(c, loops)) for c, loops in k.program.walk_computations())


def chosen(src: CSource, read: Callable[[CSource], CKernel], why: CSourceError) -> CKernel:
    """The readable region of ``src`` with the most work, read with ``read`` (its ``picked`` says which lines);
    ``why`` (the whole body's refusal), and the innermost loops' own, when none is readable."""
    best: tuple[float, CKernel] | None = None
    refused: list[CSourceError] = []
    for region in candidates(src):
        if region.start == 0 and region.stop == len(src.function.body.block_items or []) \
                and region.block is src.function.body:
            continue  # the whole body: refused already
        try:
            k = read(region)
        except CSourceError as e:
            refused.append(e)
            continue
        w = work(k)
        if best is None or w > best[0]:
            best = (w, k)
    if best is None:
        raise CSourceError(f"{why}" + (f"; nor are its innermost loops: {refused[-1]}" if refused else "")) from None
    k = best[1]
    items = k.source.statements
    lines = f"{items[0].coord.line}-{_last_line(items[-1])}"
    note = (f"{src.name}: the loops at lines {lines} of {src.path.name} (the whole function is not read: "
            f"{str(why).split(': ', 1)[-1]})")
    return replace(k, source=replace(k.source, picked=note if not src.picked else f"{src.picked}; {note}"))


def _last_line(node: c_ast.Node) -> int:
    return max(n.coord.line for n in walk_nodes(node) if n.coord is not None)
