"""Integer variables the code gives values as it runs (``j = i + 1;``, ``k++``, ``idx += n``, ``out[k++] = v``):
at each point of the region, each is an affine expression of the loop iterators and sizes (the ``k`` of
``k = -1; for (i...) for (j < N...) { k++; x[k] = ...; }`` is ``i * N + j``) or is not known there.

A loop's body is first run once symbolically, changes of these variables only (a dry run), from a symbol for
each one's value at the iteration's start. A variable the iteration adds a constant to (a constant in that
loop: sizes and the iterators of the loops around it) is an induction variable: at an iteration's start it is
its value before the loop plus the constant times the iterations run, and after the loop that plus the
constant times the trip count. A variable the iteration gives a value that does not depend on its previous one
is its value from the previous iteration (``last = i;``: ``i - 1``) where its value before the loop is what the
iteration before the first would have given, else not known at the iteration's start (a read before the
assignment is refused); it is not known after the loop. A variable
whose changes are of no such form, or that is read where it is not known, is data: the translator reads the
region again with it as data (``NotIndex``)."""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from ..errors import CSourceError, NotAffineError
from ..ir.affine import Affine
from .declared import INDEX, base_type
from .loops import Header
from .parse import CSource, walk_nodes
from .sizes import changed_names

#: the prefix of the symbols of values at an iteration's start in a dry run (not a C name)
HEAD = "@"
#: the symbol of the loop iterator's value in a dry run of its body
ITERATOR = HEAD + "iterator"
#: why an int variable's value is not known
UNKNOWN = ("where its value is not an affine expression of the loop iterators (an int changed in a loop must "
           "change by the same amount each iteration, or be given a value in the iteration before it is read)")
#: the change each increment operator makes
STEPS = {"++": 1, "p++": 1, "--": -1, "p--": -1}
_INT_ARITHMETIC = (c_ast.Constant, c_ast.ID, c_ast.BinaryOp, c_ast.UnaryOp, c_ast.Cast, c_ast.Typename,
                   c_ast.TypeDecl, c_ast.IdentifierType)


class NotIndex(Exception):
    """Int variable ``name`` cannot be followed as an affine value (``error`` says where): read it as data."""

    def __init__(self, name: str, error: Exception) -> None:
        super().__init__(str(error))
        self.name = name
        self.error = error


def index_candidates(body: c_ast.Node) -> set[str]:
    """The names changed outside for headers only by ``= += -=`` of integer arithmetic (constants, names,
    ``+ - * / %``, casts) and by ``++``/``--``: whether each is an int is for its declaration to say."""
    good: set[str] = set()
    bad: set[str] = set()

    class Visitor(c_ast.NodeVisitor):
        def visit_For(self, node: c_ast.For) -> None:
            for part in (node.cond, node.stmt):
                if part is not None:
                    self.visit(part)

        def visit_Assignment(self, node: c_ast.Assignment) -> None:
            if isinstance(node.lvalue, c_ast.ID):
                ok = node.op in ("=", "+=", "-=") and _int_arithmetic(node.rvalue)
                (good if ok else bad).add(node.lvalue.name)
            self.generic_visit(node)

        def visit_UnaryOp(self, node: c_ast.UnaryOp) -> None:
            if isinstance(node.expr, c_ast.ID) and node.op in STEPS:
                good.add(node.expr.name)
            elif isinstance(node.expr, c_ast.ID) and node.op == "&":
                bad.add(node.expr.name)
            self.generic_visit(node)

    Visitor().visit(body)
    return good - bad


def _int_arithmetic(node: c_ast.Node) -> bool:
    return all(isinstance(n, _INT_ARITHMETIC) and (not isinstance(n, c_ast.Constant) or n.type.endswith("int"))
               and (not isinstance(n, c_ast.BinaryOp) or n.op in ("+", "-", "*", "/", "%"))
               and (not isinstance(n, c_ast.UnaryOp) or n.op in ("-", "+", *STEPS))
               for n in walk_nodes(node))


def region_entry(src: CSource, name: str) -> str | None:
    """Why the value an int declared before ``src``'s region has there is not its initializer's (None if it
    is): the function changes it elsewhere, or runs the region in a loop."""
    region = {id(n) for s in src.statements for n in walk_nodes(s)}
    outside = [n for n in walk_nodes(src.function.body) if id(n) not in region]
    if any(n.name == name for n in _changes(outside)):
        return "the function changes it outside the loops"
    if any(isinstance(n, (c_ast.For, c_ast.While, c_ast.DoWhile)) and any(m is src.block for m in walk_nodes(n))
           for n in outside):
        return "the loops run inside another loop"
    return None


def used_outside(src: CSource, name: str) -> bool:
    """Whether the function reads or changes ``name`` outside ``src``'s region."""
    region = {id(n) for s in src.statements for n in walk_nodes(s)}
    return any(isinstance(n, c_ast.ID) and n.name == name and id(n) not in region
               for n in walk_nodes(src.function.body))


def _changes(nodes: list[c_ast.Node]) -> list[c_ast.ID]:
    return [n.lvalue if isinstance(n, c_ast.Assignment) else n.expr for n in nodes
            if isinstance(n, c_ast.Assignment) and isinstance(n.lvalue, c_ast.ID)
            or isinstance(n, c_ast.UnaryOp) and n.op in STEPS and isinstance(n.expr, c_ast.ID)]


@dataclass(frozen=True)
class Change:
    """How one iteration of a loop changes an int variable: it adds ``step`` (constant in the loop), or gives
    it ``last``, an affine expression of the iterator's value ``ITERATOR`` (both None: neither)."""

    step: Affine | None = None
    last: Affine | None = None


def _at(e: Affine, value: Affine) -> Affine:
    """``e`` (affine in ``ITERATOR``) where the iterator's value is ``value``."""
    c = e.coeff(ITERATOR)
    return e - Affine.var(ITERATOR) * c + value * c


def _plus(start: Affine | None, step: Affine | None, times: Affine | None) -> Affine | None:
    if start is None or step is None or times is None:
        return None
    try:
        return start + step * times
    except NotAffineError:
        return None


class IntVariables:
    """The int-variable part of the translator (``translate._Translator``), which gives it ``src``,
    ``scopes``, ``bind``, ``affine``, ``header``, ``trip_count`` and the names ``index_ints`` (int variables
    unless their declaration says otherwise) and ``data_ints``; ``dry`` counts the dry runs under way."""

    dry: int = 0

    # ---- values ---------------------------------------------------------
    def current(self, name: str) -> Affine | None:
        """The value of int variable ``name`` here (None: not known, or not an int variable)."""
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name][1] if scope[name][0] == "var" else None
        return None

    def is_var(self, name: str) -> bool:
        """Whether ``name`` names an int variable here."""
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name][0] == "var"
        return False

    def set_var(self, name: str, value: Affine | None) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                if scope[name][0] == "var":
                    scope[name] = ("var", value)
                return

    def var_read(self, node: c_ast.ID, value: Affine | None) -> Affine:
        """The value of int variable ``node`` here."""
        if value is None:
            raise NotIndex(node.name, self.src.error(node, f"{node.name!r} is read {UNKNOWN}"))
        return value

    def stepped(self, node: c_ast.UnaryOp) -> Affine:
        """``k++`` (``++k``, ``k--``, ``--k``) as a value: ``k``'s (after the change for ``++k``), changed."""
        old = self.var_read(node.expr, self.current(node.expr.name))
        self.change(node, node.expr.name, "+=", STEPS[node.op])
        return old if node.op.startswith("p") else old + STEPS[node.op]

    def change(self, node: c_ast.Node, name: str, op: str, rvalue: c_ast.Node | int) -> None:
        """``name op rvalue`` (op ``=``, ``+=`` or ``-=``; an int ``rvalue`` is a constant)."""
        try:
            value = Affine.of(rvalue) if isinstance(rvalue, int) else self.affine(rvalue)
            if op == "=":
                new = value
            elif op in ("+=", "-="):
                old = self.current(name)
                if old is None:
                    raise self.src.error(node, f"{name!r} is changed {UNKNOWN}")
                new = old + value if op == "+=" else old - value
            else:
                raise self.src.error(node, f"{op} on int variable {name!r}")
        except (CSourceError, NotAffineError, NotIndex) as e:
            if not self.dry:
                raise e if isinstance(e, NotIndex) else NotIndex(name, e) from None
            new = None
        self.set_var(name, new)

    # ---- loops ----------------------------------------------------------
    def loop_changes(self, h: Header) -> dict[str, Change]:
        """How one iteration changes each int variable the loop's body changes."""
        names = sorted(n for n in changed_names(h.node.stmt) if self.is_var(n))
        if not names:
            return {}
        heads = {n: Affine.var(HEAD + n) for n in names}
        scope: dict[str, tuple] = {n: ("var", heads[n]) for n in names}
        scope[h.var] = ("iter", Affine.var(ITERATOR))
        for k, (other, _, _) in enumerate(h.others):  # companions: values that change each time
            scope[other] = ("iter", Affine.var(f"{HEAD}{len(self.scopes)}.{k}"))
        self.scopes.append(scope)
        self.dry += 1
        try:
            self.dry_run(h.node.stmt)
        finally:
            self.scopes.pop()
            self.dry -= 1
        out: dict[str, Change] = {}
        for n in names:
            end = scope[n][1]
            step = None if end is None else end - heads[n]
            if step is not None and not any(v.startswith(HEAD) for v in step.variables):
                out[n] = Change(step=step)
            elif end is not None and set(end.variables) <= {ITERATOR}:
                out[n] = Change(last=end)
            else:
                out[n] = Change()
        return out

    def enter_loop(self, changes: dict[str, Change], count: Affine, previous: Affine,
                   before: Affine | None) -> dict[str, Affine | None]:
        """Each changed variable at the start of the iteration after ``count`` others, where the iterator's
        value in the iteration before was ``previous`` (``before``: before the first, None if not affine);
        their values before the loop."""
        entry = {n: self.current(n) for n in changes}
        for n, c in changes.items():
            if c.last is not None:
                ok = before is not None and entry[n] is not None and _at(c.last, before) == entry[n]
                self.set_var(n, _at(c.last, previous) if ok else None)
            else:
                self.set_var(n, _plus(entry[n], c.step, count))
        return entry

    def leave_loop(self, changes: dict[str, Change], entry: dict[str, Affine | None], trips: Affine | None,
                   iterator: str) -> None:
        """Each changed variable after the loop (and its iterator, if an int variable, not known)."""
        for n, c in changes.items():
            self.set_var(n, _plus(entry[n], c.step, trips))
        self.set_var(iterator, None)

    # ---- the dry run ------------------------------------------------------
    def dry_run(self, node: c_ast.Node) -> None:
        """The changes ``node`` makes to int variables, in order (nothing else is read)."""
        if isinstance(node, c_ast.Compound):
            self.scopes.append({})
            for item in node.block_items or []:
                self.dry_run(item)
            self.scopes.pop()
        elif isinstance(node, c_ast.For):
            try:
                h = self.header(node)
            except (CSourceError, NotIndex):
                self.forget(node)
                return
            changes = self.loop_changes(h)
            self.leave_loop(changes, {n: self.current(n) for n in changes}, self.trip_count(h), h.var)
        elif isinstance(node, c_ast.If):
            self.forget(node)
        elif isinstance(node, c_ast.Decl):
            self.dry_declaration(node)
        else:
            self.dry_changes(node)

    def dry_changes(self, node: c_ast.Node) -> None:
        if isinstance(node, c_ast.Assignment) and isinstance(node.lvalue, c_ast.ID) and self.is_var(node.lvalue.name):
            self.change(node, node.lvalue.name, node.op, node.rvalue)
        elif isinstance(node, c_ast.UnaryOp) and node.op in STEPS and isinstance(node.expr, c_ast.ID) \
                and self.is_var(node.expr.name):
            self.change(node, node.expr.name, "+=", STEPS[node.op])
        else:
            for _, child in node.children():
                self.dry_changes(child)

    def forget(self, node: c_ast.Node) -> None:
        """Each int variable ``node`` changes is not known after it (a branch may or may not have run)."""
        for n in changed_names(node):
            if self.is_var(n):
                self.set_var(n, None)

    def declare_var(self, decl: c_ast.Decl) -> None:
        """``int k = e;`` of an int variable: ``k`` is ``e``'s value (not known without an initializer)."""
        value = None
        if decl.init is not None:
            try:
                value = self.affine(decl.init)
            except (CSourceError, NotIndex) as e:
                if not self.dry:
                    raise e if isinstance(e, NotIndex) else NotIndex(decl.name, e) from None
        self.bind(decl.name, ("var", value))

    def dry_declaration(self, decl: c_ast.Decl) -> None:
        """A declaration in a dry run: an int variable, a name for an affine value, or else data."""
        try:
            dtype, dims = base_type(self.src, decl)
        except CSourceError:
            dtype, dims = None, None
        if dtype == INDEX and not dims and decl.name in self.index_ints:
            self.declare_var(decl)
            return
        if dtype == INDEX and not dims and decl.name not in self.data_ints and decl.init is not None:
            try:
                self.bind(decl.name, ("alias", self.affine(decl.init)))
                return
            except (CSourceError, NotIndex):
                pass
        self.bind(decl.name, ("data", None))
