"""Random loop-nest programs that look like real ones.

A program is a chain of 1 to 6 computations, each drawn from a family:
assignments, element-wise maps (with transposed and shifted reads), stencils
in 1-3 dimensions with radius 1-2, stencils swept in a time loop (Jacobi's two
buffers or Gauss-Seidel in place: the loop-carried dependences that skewing and
wavefronts are for), matmul-like and along-a-dimension reductions, direct
convolutions, triangular nests and (version 2) matrix-vector products and
rank-1 updates, (version 3) contractions through a scratch row as doitgen's.
A computation reads the previous one's output when their shapes
agree (producer-consumer), and consecutive maps over the same space may share
outer loops. Extents come from small, medium and large pools (version 2: and an
extra-large one for programs of one or two dimensions), scaled so that the
estimated work lands in a target range. The same seed and version give the same
programs.

Version 2 covers what the library's kernels hold and version 1 never drew (``bench/TRAIN-amd.md``): reads
that stay put while the innermost loop runs (``x[i]`` in a ``j`` loop: matrix-vector products), reductions
written as perfect nests (their initialization in a nest of its own, so that the reduction loop can move
outward), extents above 2048 and memory above 64 MiB (programs that stream from DRAM), subtraction and
division. Version 3 draws what version 2 still left outside the data's range: a scratch row written inside
two outer loops (doitgen), convolutions over input channels and batches with 4-D tensors, depthwise ones,
time loops of 65536 sweeps (jacobi-1d's 40000); and its matrix-vector products no longer read their own
output as the vector (version 2's did when the matrix was square). Version 4 draws nests over triangles and
tetrahedra beside version 3's triangle of one element-wise update: rank-k updates of a triangle (syrk),
triangular matrix products in place (trmm), products of two triangular matrices and Gaussian elimination, loops
whose bounds move with an outer iterator (one program in ten held a triangle, and none of three loops).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from ..errors import LoopcostError
from ..ir.dsl import BufferRef, ProgramBuilder
from ..ir.expr import Expr, call
from ..ir.program import Program

POOLS = {"small": (16, 24, 32, 48, 64), "medium": (96, 128, 192, 256, 384),
         "large": (512, 768, 1024, 1536, 2048)}
#: version 2: extents of programs of one or two dimensions (a vector of 24000, a matrix of 6000 x 5000)
XLARGE = (3000, 4096, 5000, 6144, 8000, 10000, 16384, 24000, 32768)
#: version 2: time loops of iterated stencils as long as the kernels' (jacobi-1d at bench size sweeps 40000 times:
#: version 3 adds 65536, so that it lies within the range)
LONG_SWEEPS = [512, 2048, 8192, 32768]
#: version 2: the share of computations of one or two dimensions that may draw from ``XLARGE``
XLARGE_SHARE = 0.35
#: version 2: the share of programs whose memory may exceed version 1's limit (the others stay within it, so that
#: programs in cache keep their share; a kernel of the library over 64 MiB streams from DRAM: 8 of 28)
LARGE_MEMORY_SHARE = 0.2
#: the version of the generator: builds record it, since the programs a seed draws depend on it
GENERATOR_VERSION = 4
#: each version's families (the default: all of them) and memory limit per program
VERSION_FAMILIES = {1: ("assign", "map", "stencil", "matmul", "sum", "conv", "triangular", "iterated")}
VERSION_FAMILIES[2] = (*VERSION_FAMILIES[1], "matvec")
VERSION_FAMILIES[3] = (*VERSION_FAMILIES[2], "batched")
VERSION_FAMILIES[4] = VERSION_FAMILIES[3]  # its triangular family draws more forms
VERSION_MAX_BYTES = {1: 64 * 2**20, 2: 2**30, 3: 2**30, 4: 2**30}
FAMILIES = VERSION_FAMILIES[GENERATOR_VERSION]


def parse_families(text: str | None) -> tuple[str, ...] | None:
    """``--families a,b``: program families of the generator, checked; None (all of the version's) when
    ``text`` is None."""
    if text is None:
        return None
    names = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = sorted(set(names) - set(FAMILIES))
    if unknown or not names:
        raise LoopcostError(f"unknown program families {unknown}; choose among {', '.join(FAMILIES)}")
    return names
ITERS = "ijklm"


@dataclass(frozen=True)
class GeneratorOptions:
    """Work is estimated as points x operations; programs outside the range are redrawn. ``max_bytes`` and
    ``families`` left None are the ``version``'s (``VERSION_MAX_BYTES``, ``VERSION_FAMILIES``)."""

    min_work: float = 2e6
    max_work: float = 1.5e8
    max_bytes: int | None = None
    max_comps: int = 6
    families: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] = ("float64", "float32")
    version: int = GENERATOR_VERSION

    def __post_init__(self) -> None:
        if self.version not in VERSION_FAMILIES:
            raise LoopcostError(f"unknown generator version {self.version}; use one of "
                                f"{', '.join(map(str, VERSION_FAMILIES))}")
        if not 0 < self.min_work < self.max_work:
            raise LoopcostError("--min-work must be positive and below --max-work")
        if self.max_bytes is None:
            object.__setattr__(self, "max_bytes", VERSION_MAX_BYTES[self.version])
        if self.families is None:
            object.__setattr__(self, "families", VERSION_FAMILIES[self.version])
        newer = sorted(set(self.families) - set(VERSION_FAMILIES[self.version]))
        if newer:
            raise LoopcostError(f"generator version {self.version} draws no {', '.join(newer)} programs (from "
                                f"version {min(v for v, f in VERSION_FAMILIES.items() if newer[0] in f)} on)")


@dataclass
class _Plan:
    """What the builder accumulates while a program is drawn."""

    rng: random.Random
    p: ProgramBuilder
    dtype: str
    version: int
    #: it holds matrix-vector work, which reaches the work of a bench-scale program only in memory beyond the
    #: caches (one pass over the matrix): version 2 lets it take up to ``max_bytes``
    streams: bool = False
    work: float = 0.0
    bytes: int = 0
    n_buf: int = 0
    last: tuple[BufferRef, tuple[int, ...]] | None = None
    outputs: list[BufferRef] = field(default_factory=list)

    def buffer(self, shape: tuple[int, ...], role: str) -> BufferRef:
        name = ("in" if role == "input" else "buf") + str(self.n_buf)
        self.n_buf += 1
        self.bytes += math.prod(shape) * (4 if self.dtype == "float32" else 8)
        return self.p.buffer(name, shape, self.dtype, role)

    def source(self, shape: tuple[int, ...]) -> BufferRef:
        """The previous computation's output if its shape fits (producer-consumer), else a new input."""
        if self.last is not None and self.last[1] == shape and self.rng.random() < 0.75:
            return self.last[0]
        return self.buffer(shape, "input")

    def result(self, shape: tuple[int, ...]) -> BufferRef:
        out = self.buffer(shape, "output")
        self.last = (out, shape)
        self.outputs.append(out)
        return out


def _extents(pl: _Plan, rank: int, budget: float) -> tuple[int, ...]:
    """``rank`` extents from the pools whose product is near ``budget`` (version 2: the extra-large pool too,
    for one or two dimensions)."""
    rng, version = pl.rng, pl.version
    pools = POOLS | ({"xlarge": XLARGE} if version >= 2 and rank <= 2 and rng.random() < XLARGE_SHARE else {})
    pool = rng.choice(list(pools))
    ext = [rng.choice(pools[pool]) for _ in range(rank)]
    all_sizes = sorted({s for sizes in pools.values() for s in sizes})
    for _ in range(40 if version == 1 else 80):  # move single extents along the pool ladder toward the budget
        prod = math.prod(ext)
        if budget / 2 <= prod <= budget * 2:
            break
        k = rng.randrange(rank)
        idx = all_sizes.index(ext[k]) if ext[k] in all_sizes else 0
        idx = min(idx + 1, len(all_sizes) - 1) if prod < budget else max(idx - 1, 0)
        ext[k] = all_sizes[idx]
    return tuple(ext)


def _coef(rng: random.Random) -> float:
    return round(rng.uniform(0.1, 0.9), 2)


def _combine(pl: _Plan, terms: list[Expr]) -> Expr:
    """A random arithmetic combination that keeps values bounded (version 2: divisions too)."""
    rng = pl.rng
    out = terms[0] * _coef(rng)
    for t in terms[1:]:
        op = rng.choice("+-*m" if pl.version == 1 else "+-*/m")
        if op == "+":
            out = out + t * _coef(rng)
        elif op == "-":
            out = out - t * _coef(rng)
        elif op == "*":
            out = out * t
        elif op == "/":  # by a value at least 0.5 away from zero
            out = out / (t * t + _coef(rng) + 0.5)
        else:
            out = call(rng.choice(["max", "min"]), out, t)
    if rng.random() < 0.15:
        out = call(rng.choice(["sqrt", "abs"]), call("abs", out) if rng.random() < 0.5 else out * out)
    return out


def _map(pl: _Plan, budget: float, rank: int, assign_only: bool = False) -> None:
    rng = pl.rng
    ext = _extents(pl, rank, budget)
    out = pl.result(ext)
    shared = pl.rng.random() < 0.3 and rank > 1
    with _nest(pl.p, ITERS[:rank], ext) as loops:
        if assign_only:
            src = pl.source(ext)
            out[tuple(loops)] = src[tuple(loops)] * _coef(rng) + _coef(rng)
            pl.work += math.prod(ext) * 2
            return
        terms = []
        for _ in range(rng.randint(1, 3)):
            perm = list(range(rank))
            if rank > 1 and rng.random() < 0.3:  # transposed read
                rng.shuffle(perm)
            shift = [rng.choice([0, 0, 1]) for _ in range(rank)]  # shifted read
            shape = tuple(ext[perm[d]] + shift[d] for d in range(rank))
            src = pl.source(shape)
            terms.append(src[tuple(loops[perm[d]] + shift[d] for d in range(rank))])
        out[tuple(loops)] = _combine(pl, terms)
        pl.work += math.prod(ext) * (2 * len(terms) + 1)
        if shared:  # a second computation in the same nest, reading the first
            out2 = pl.result(ext)
            out2[tuple(loops)] = out[tuple(loops)] * _coef(rng) + terms[0] * _coef(rng)
            pl.work += math.prod(ext) * 3


class _nest:
    """``with _nest(p, names, extents) as iterators``: a perfect nest of rectangular loops."""

    def __init__(self, p: ProgramBuilder, names: str, ext: tuple[int, ...], lower: tuple[int, ...] = ()):
        self.p, self.names, self.ext = p, names, ext
        self.lower = lower or (0,) * len(ext)
        self.ctx: list = []

    def __enter__(self):
        its = []
        for name, lo, n in zip(self.names, self.lower, self.ext, strict=True):
            cm = self.p.loop(name, lo, n)
            its.append(cm.__enter__())
            self.ctx.append(cm)
        return its

    def __exit__(self, *exc):
        for cm in reversed(self.ctx):
            cm.__exit__(*exc)
        return False


def _stencil(pl: _Plan, budget: float, rank: int) -> None:
    rng = pl.rng
    r = rng.choice([1, 1, 2])
    ext = _extents(pl, rank, budget)
    ext = tuple(max(e, 2 * r + 2) for e in ext)
    src = pl.source(ext)
    out = pl.result(ext)
    offsets = [tuple(0 for _ in range(rank))]
    for d in range(rank):
        for o in range(1, r + 1):
            for sgn in (-1, 1):
                off = [0] * rank
                off[d] = sgn * o
                offsets.append(tuple(off))
    _written_order(pl, offsets)
    with _nest(pl.p, ITERS[:rank], tuple(e - r for e in ext), (r,) * rank) as its:
        out[tuple(its)] = _update(pl, src, its, offsets)
    pl.work += math.prod(ext) * 2 * len(offsets)


def _update(pl: _Plan, src: BufferRef, its: list, offsets: list[tuple[int, ...]]) -> Expr:
    """A stencil's new value from the points ``offsets`` of ``src`` around ``its``: their mean (version 2:
    sometimes their sum divided, as ``/ 9.0``; a diffusion step ``c + k * (sum - n * c)``; or a Laplacian axis by
    axis, ``c + k * (A[i+1] - 2 * c + A[i-1]) + ...``, as heat equations write it, the other points left out)."""
    at = {off: src[tuple(it + o for it, o in zip(its, off, strict=True))] for off in offsets}
    acc = None
    for off in offsets:
        acc = at[off] if acc is None else acc + at[off]
    n, rank = len(offsets), len(its)
    form = "mean" if pl.version == 1 else pl.rng.choice(["mean", "divided", "diffusion", "laplacian"])
    centre = src[tuple(its)]
    if form == "divided":
        return acc / float(n)
    if form == "diffusion":
        return centre + (acc - centre * float(n)) * round(0.5 / n, 4)
    if form == "laplacian":
        out = centre
        for d in range(rank):
            plus, minus = (tuple(sgn if k == d else 0 for k in range(rank)) for sgn in (1, -1))
            out = out + (at[plus] - centre * 2.0 + at[minus]) * round(0.25 / rank, 4)
        return out
    return acc * round(1.0 / n, 4)


def _written_order(pl: _Plan, offsets: list[tuple[int, ...]]) -> None:
    """Version 2: a stencil's points in the order of one that writes them, e.g. ``A[i-1] + A[i] + A[i+1]``
    (version 1 reads the centre first, then each axis's neighbours)."""
    if pl.version == 1:
        return
    if pl.rng.random() < 0.5:
        offsets.sort()
    else:
        pl.rng.shuffle(offsets)


def _neighbours(rng: random.Random, rank: int) -> list[tuple[int, ...]]:
    """The centre, the 2 * ``rank`` axis neighbours and, sometimes in 2-D, the 4 diagonal ones."""
    offsets = [(0,) * rank]
    for d in range(rank):
        for sgn in (-1, 1):
            offsets.append(tuple(sgn if k == d else 0 for k in range(rank)))
    if rank == 2 and rng.random() < 0.5:
        offsets += [(a, b) for a in (-1, 1) for b in (-1, 1)]
    return offsets


def _iterated(pl: _Plan, budget: float, rank: int) -> None:
    """A radius-1 stencil swept ``steps`` times inside a time loop ``t``: Jacobi style (A -> B, then
    B -> A) or Gauss-Seidel style (A updated in place, reading neighbours already updated)."""
    rng = pl.rng
    steps = rng.choice([2, 4, 8, 16, 32, 64, 128] + (LONG_SWEEPS if pl.version >= 2 else [])
                       + ([65536] if pl.version >= 3 else []))
    in_place = rng.random() < 0.4
    offsets = _neighbours(rng, rank)
    _written_order(pl, offsets)
    sweeps = 1 if in_place else 2
    ext = tuple(max(e, 4) for e in _extents(pl, rank, budget / (steps * sweeps * 2 * len(offsets))))
    a = pl.result(ext)
    b = a if in_place else pl.result(ext)
    with pl.p.loop("t", 0, steps):
        for dst, src in [(a, a)] if in_place else [(b, a), (a, b)]:
            with _nest(pl.p, ITERS[:rank], tuple(e - 1 for e in ext), (1,) * rank) as its:
                dst[tuple(its)] = _update(pl, src, its, offsets)
    pl.work += steps * sweeps * math.prod(ext) * 2 * len(offsets)


def _matmul(pl: _Plan, budget: float) -> None:
    rng = pl.rng
    ni, nj, nk = _extents(pl, 3, budget)
    a = pl.source((ni, nk))
    b = pl.buffer((nk, nj), "input") if rng.random() < 0.5 else pl.buffer((nj, nk), "input")
    transposed = b.buffer.shape == (nj, nk) and nj != nk
    out = pl.result((ni, nj))
    perfect = _zeroed_apart(pl, out, (ni, nj))
    with pl.p.loop("i", 0, ni) as i:
        with pl.p.loop("j", 0, nj) as j:
            if not perfect:
                out[i, j] = 0.0
            with pl.p.loop("k", 0, nk) as k:
                out[i, j] += a[i, k] * (b[j, k] if transposed else b[k, j])
    pl.work += ni * nj * nk * 3


def _zeroed_apart(pl: _Plan, out: BufferRef, shape: tuple[int, ...]) -> bool:
    """Version 2, half of the time: ``out`` set to zero in a nest of its own, so that the reduction after it
    is a perfect nest (its reduction loop can then move outward); returns whether it was."""
    if pl.version == 1 or pl.rng.random() < 0.5:
        return False
    with _nest(pl.p, ITERS[:len(shape)], shape) as its:
        out[tuple(its)] = 0.0
    return True


def _sum(pl: _Plan, budget: float, rank: int) -> None:
    rng = pl.rng
    ext = _extents(pl, rank, budget)
    src = pl.source(ext)
    axis = rng.randrange(rank)
    keep = tuple(e for d, e in enumerate(ext) if d != axis)
    out = pl.result(keep)
    keep_names = ITERS[:rank - 1]
    perfect = _zeroed_apart(pl, out, keep)
    with _nest(pl.p, keep_names, keep) as its:
        if not perfect:
            out[tuple(its)] = 0.0
        with pl.p.loop("r", 0, ext[axis]) as r:
            idx = list(its)
            idx.insert(axis, r)
            out[tuple(its)] += src[tuple(idx)]
    pl.work += math.prod(ext) * 2


def _conv(pl: _Plan, budget: float) -> None:
    """A direct convolution of one 2-D image by ``nf`` filters (version 3, three times in four: over ``nc``
    input channels, a batch of such images with 4-D tensors, or depthwise, each channel by its own filter; and
    half of the time started from a bias rather than zero, as the library's conv2d is)."""
    rng = pl.rng
    if pl.version >= 3:
        form = rng.choice(["plain", "channels", "batched", "depthwise"])
        if form != "plain":
            _conv_channels(pl, budget, form)
            return
    k = rng.choice([3, 5])
    nf = rng.choice([4, 8, 16])
    h, w = _extents(pl, 2, budget / (nf * k * k))
    h, w = max(h, k + 1), max(w, k + 1)
    src = pl.source((h, w))
    wt = pl.buffer((nf, k, k), "input")
    out = pl.result((nf, h - k + 1, w - k + 1))
    with _nest(pl.p, "fyx", (nf, h - k + 1, w - k + 1)) as (f, y, x):
        out[f, y, x] = 0.0
        with _nest(pl.p, ("u", "v"), (k, k)) as (u, v):
            out[f, y, x] += wt[f, u, v] * src[y + u, x + v]
    pl.work += nf * h * w * k * k * 3


def _conv_channels(pl: _Plan, budget: float, form: str) -> None:
    """Version 3: ``out[f,y,x] += w[f,c,u,v] in[c,y+u,x+v]`` (``channels``), the same with a batch loop ``b``
    outermost and 4-D tensors (``batched``), or ``out[c,y,x] += w[c,u,v] in[c,y+u,x+v]`` (``depthwise``; half
    of the time batched too)."""
    rng = pl.rng
    k = rng.choice([1, 3, 3, 5])
    nc = rng.choice([3, 4, 8, 16, 32])
    nf = nc if form == "depthwise" else rng.choice([4, 8, 16, 32])
    batched = form == "batched" or (form == "depthwise" and rng.random() < 0.5)
    nb = rng.choice([2, 4, 8]) if batched else 1
    per_pixel = nb * nf * k * k * (1 if form == "depthwise" else nc)
    h, w = _extents(pl, 2, budget / per_pixel)
    h, w = max(h, k + 1), max(w, k + 1)
    oh, ow = h - k + 1, w - k + 1
    lead = (nb,) if batched else ()
    src = pl.source((*lead, nc, h, w))
    wt = pl.buffer((nf, k, k) if form == "depthwise" else (nf, nc, k, k), "input")
    bias = pl.buffer((nf,), "input") if rng.random() < 0.5 else None
    out = pl.result((*lead, nf, oh, ow))
    names = ("b" if lead else "") + "fyx"
    with _nest(pl.p, names, (*lead, nf, oh, ow)) as its:
        b, (f, y, x) = its[:len(lead)], its[len(lead):]
        out[(*b, f, y, x)] = bias[f] if bias is not None else 0.0
        if form == "depthwise":
            with _nest(pl.p, ("u", "v"), (k, k)) as (u, v):
                out[(*b, f, y, x)] += wt[f, u, v] * src[(*b, f, y + u, x + v)]
        else:
            with _nest(pl.p, ("c", "u", "v"), (nc, k, k)) as (c, u, v):
                out[(*b, f, y, x)] += wt[f, c, u, v] * src[(*b, c, y + u, x + v)]
    pl.work += per_pixel * oh * ow * 3


def _batched(pl: _Plan, budget: float) -> None:
    """Version 3: a matrix product for each point of two outer loops through a scratch row, as doitgen:
    ``t[p] = sum_s A[r,q,s] C[s,p]``, then ``out[r,q,p] = t[p]``: the scratch row is written indexed by an inner
    loop only, and half of the time ``out`` is ``A`` itself (updated in place)."""
    rng = pl.rng
    nr, nq, np_, ns = _extents(pl, 4, budget / 3)
    in_place = rng.random() < 0.5
    if in_place:
        ns = np_
        a = out = pl.result((nr, nq, np_))
    else:
        a = pl.source((nr, nq, ns))
    c = pl.buffer((ns, np_), "input")
    t = pl.buffer((np_,), "temp")
    if not in_place:
        out = pl.result((nr, nq, np_))
    with pl.p.loop("r", 0, nr) as r:
        with pl.p.loop("q", 0, nq) as q:
            with pl.p.loop("p", 0, np_) as p:
                t[p] = 0.0
                with pl.p.loop("s", 0, ns) as s:
                    t[p] += a[r, q, s] * c[s, p]
            with pl.p.loop("p", 0, np_) as p:
                out[r, q, p] = t[p]
    pl.work += nr * nq * np_ * (ns * 2 + 1)


def _matvec(pl: _Plan, budget: float) -> None:
    """Matrix-vector work (BLAS 2, version 2): ``y = A x`` along rows (``y[i] += A[i,j] x[j]``) or columns
    (``y[j] += A[i,j] x[i]``: ``x[i]`` stays put in the ``j`` loop), both in one nest (BiCG), ``A`` read
    transposed, a rank-1 update ``A + u v^T`` or ``A``'s columns centred and its rows scaled."""
    rng = pl.rng
    pl.streams = True
    m, n = _extents(pl, 2, budget)
    kind = rng.choice(["rows", "columns", "both", "rank1", "centre"])
    transposed = kind in ("rows", "columns") and m != n and rng.random() < 0.3
    a = pl.source((n, m) if transposed else (m, n))

    def at(i, j):
        return a[j, i] if transposed else a[i, j]

    if kind in ("rows", "columns", "both"):
        ys = {"rows": [(m, "i")], "columns": [(n, "j")], "both": [(n, "j"), (m, "i")]}[kind]
        # x along the loop the result does not follow. Version 3 draws it before y, so that a previous vector
        # output can feed it; version 2 drew y first, so that x could be y itself (y[i] += A[i,j] y[j] when
        # the matrix is square: values grow past the float range and the build discards the program)
        def vectors() -> list[BufferRef]:
            return [pl.source((n,) if it == "i" else (m,)) for _, it in ys]

        xs = vectors() if pl.version >= 3 else []
        outs = [(pl.result((size,)), it) for size, it in ys]
        xs = xs or vectors()
        perfect = rng.random() < 0.5 or kind != "rows"
        if perfect:
            for (y, _), (size, _) in zip(outs, ys, strict=True):
                with pl.p.loop("i", 0, size) as i:
                    y[i] = 0.0
        with pl.p.loop("i", 0, m) as i:
            if not perfect:
                outs[0][0][i] = 0.0
            with pl.p.loop("j", 0, n) as j:
                for (y, it), x in zip(outs, xs, strict=True):
                    if it == "i":
                        y[i] += at(i, j) * x[j]
                    else:
                        y[j] += at(i, j) * x[i]
        pl.work += m * n * 2 * len(outs)
        return
    out = pl.result((m, n))
    with pl.p.loop("i", 0, m) as i:
        with pl.p.loop("j", 0, n) as j:
            if kind == "rank1":
                terms = rng.randint(1, 2)
                acc = a[i, j]
                for _ in range(terms):
                    acc = acc + pl.buffer((m,), "input")[i] * pl.buffer((n,), "input")[j]
                out[i, j] = acc
                pl.work += m * n * (1 + 2 * terms)
            else:
                out[i, j] = (a[i, j] - pl.buffer((n,), "input")[j]) * pl.buffer((m,), "input")[i]
                pl.work += m * n * 2


def _triangular(pl: _Plan, budget: float) -> None:
    """A nest over a triangle: version 1-3 an element-wise update of a lower triangle; version 4 also an upper
    one, or one of ``TRIANGULAR_FORMS``' nests of three loops whose bounds move with an outer iterator."""
    rng = pl.rng  # the nests of version 4 take two thirds of ``budget`` points (three operations each)
    if pl.version >= 4:
        form = rng.choice(TRIANGULAR_FORMS)
        if form != "elementwise":
            _TRIANGULAR_NESTS[form](pl, budget)
            return
    (n,) = _extents(pl, 1, math.sqrt(2 * budget))
    src = pl.source((n, n))
    out = pl.result((n, n))
    upper = pl.version >= 4 and rng.random() < 0.5
    with pl.p.loop("i", 0, n) as i:
        with pl.p.loop("j", *((i, n) if upper else (0, i + 1))) as j:
            if rng.random() < 0.5:
                out[i, j] = src[i, j] * _coef(rng) + src[j, i] * _coef(rng)
            else:
                out[i, j] = call("max", src[i, j], src[j, i] * _coef(rng))
    pl.work += n * n * 2


def _rank_k(pl: _Plan, budget: float) -> None:
    """Version 4: ``C[i, j] += A[i, k] * B[j, k]`` over the lower triangle ``j <= i`` (syrk, syr2k), its
    ``k`` loop innermost or between ``i`` and ``j`` (then ``C`` is scaled in a loop of its own first)."""
    rng = pl.rng
    (m,) = _extents(pl, 1, budget ** (1 / 3))
    (n,) = _extents(pl, 1, math.sqrt(4 * budget / (3 * m)))
    a = pl.source((n, m))
    b = a if rng.random() < 0.5 else pl.buffer((n, m), "input")
    out = pl.result((n, n))
    if rng.random() < 0.5:
        perfect = _zeroed_apart(pl, out, (n, n))
        with pl.p.loop("i", 0, n) as i, pl.p.loop("j", 0, i + 1) as j:
            if not perfect:
                out[i, j] = out[i, j] * _coef(rng)
            with pl.p.loop("k", 0, m) as k:
                out[i, j] += a[i, k] * b[j, k]
    else:
        with pl.p.loop("i", 0, n) as i:
            with pl.p.loop("j", 0, i + 1) as j:
                out[i, j] = out[i, j] * _coef(rng)
            with pl.p.loop("k", 0, m) as k, pl.p.loop("j", 0, i + 1) as j:
                out[i, j] += a[i, k] * b[j, k]
    pl.work += n * (n + 1) // 2 * m * 3


def _triangular_product(pl: _Plan, budget: float) -> None:
    """Version 4: ``B[i, j] += A[k, i] * B[k, j]`` for ``k`` past ``i`` (trmm; or before it, or ``A[i, k]``),
    in place or into a new output, its ``k`` loop innermost or between ``i`` and ``j``."""
    rng = pl.rng
    (m,) = _extents(pl, 1, budget ** (1 / 3))
    (n,) = _extents(pl, 1, 4 * budget / (3 * m * m))
    tri = pl.buffer((m, m), "input")
    in_place = rng.random() < 0.5
    src = None if in_place else pl.source((m, n))  # before the output: the previous computation's if it fits
    out = pl.result((m, n))
    reads = out if src is None else src
    after, transposed, k_inner = rng.random() < 0.5, rng.random() < 0.5, rng.random() < 0.5
    perfect = not in_place and _zeroed_apart(pl, out, (m, n))
    coef = _coef(rng)
    with pl.p.loop("i", 0, m) as i:
        def update(j, k):
            out[i, j] += (tri[k, i] if transposed else tri[i, k]) * reads[k, j]
        bounds = (i + 1, m) if after else (0, i)
        if k_inner:
            with pl.p.loop("j", 0, n) as j:
                if not (in_place or perfect):
                    out[i, j] = 0.0
                with pl.p.loop("k", *bounds) as k:
                    update(j, k)
                if in_place:  # trmm's scaling, after the sum
                    out[i, j] = out[i, j] * coef
        else:
            if not (in_place or perfect):
                with pl.p.loop("j", 0, n) as j:
                    out[i, j] = 0.0
            with pl.p.loop("k", *bounds) as k, pl.p.loop("j", 0, n) as j:
                update(j, k)
    pl.work += m * (m - 1) // 2 * n * 3


def _tetrahedral(pl: _Plan, budget: float) -> None:
    """Version 4: the product of two lower (or upper) triangular matrices, ``C[i, j] += A[i, k] * B[k, j]``
    for ``j <= k <= i`` (or ``i <= k <= j``): three loops over a tetrahedron."""
    rng = pl.rng
    (n,) = _extents(pl, 1, (4 * budget) ** (1 / 3))
    a = pl.source((n, n))
    b = pl.buffer((n, n), "input")
    out = pl.result((n, n))
    lower = rng.random() < 0.5
    perfect = _zeroed_apart(pl, out, (n, n))
    with pl.p.loop("i", 0, n) as i, pl.p.loop("j", *((0, i + 1) if lower else (i, n))) as j:
        if not perfect:
            out[i, j] = 0.0
        with pl.p.loop("k", *((j, i + 1) if lower else (i, j + 1))) as k:
            out[i, j] += a[i, k] * b[k, j]
    pl.work += n ** 3 // 6 * 3


def _elimination(pl: _Plan, budget: float) -> None:
    """Version 4: Gaussian elimination in place (lu without pivoting): for each ``k``, optionally the column
    below the diagonal divided by a value at least 0.5 away from zero, then the trailing square updated by
    ``A[i, j] -= c * A[i, k] * A[k, j]`` with ``c`` below ``1 / n``, so that values stay bounded."""
    rng = pl.rng
    (n,) = _extents(pl, 1, (2 * budget) ** (1 / 3))
    a = pl.result((n, n))
    c = _coef(rng) / n
    divide = rng.random() < 0.5
    with pl.p.loop("k", 0, n) as k:
        if divide:
            with pl.p.loop("i", k + 1, n) as i:
                a[i, k] = a[i, k] / (a[k, k] * a[k, k] + _coef(rng) + 0.5)
        with pl.p.loop("i", k + 1, n) as i, pl.p.loop("j", k + 1, n) as j:
            a[i, j] = a[i, j] - a[i, k] * a[k, j] * c
    pl.work += n ** 3 // 3 * 3


#: version 4: the triangular family's forms, drawn evenly (versions 1-3: the element-wise one only)
TRIANGULAR_FORMS = ("elementwise", "rank_k", "triangular_product", "tetrahedral", "elimination")
_TRIANGULAR_NESTS = {"rank_k": _rank_k, "triangular_product": _triangular_product, "tetrahedral": _tetrahedral,
                     "elimination": _elimination}


def random_program(rng: random.Random, name: str, opts: GeneratorOptions = GeneratorOptions()) -> Program:
    """One random program; redraws until its work and memory fit ``opts`` (version 2: a share
    ``LARGE_MEMORY_SHARE`` of the programs, and those with matrix-vector work, may take up to ``opts.max_bytes``,
    the others version 1's limit)."""
    limit = opts.max_bytes
    if opts.version >= 2 and rng.random() >= LARGE_MEMORY_SHARE:
        limit = min(limit, VERSION_MAX_BYTES[1])
    for _ in range(100):
        pl = _Plan(rng, ProgramBuilder(name), rng.choice(opts.dtypes), opts.version)
        n_comps = rng.randint(1, opts.max_comps)
        target = math.exp(rng.uniform(math.log(opts.min_work), math.log(opts.max_work)))
        per_comp = target / n_comps
        while pl.p.n_computations < n_comps:
            fam = rng.choice(opts.families)
            if fam == "assign":
                _map(pl, per_comp / 2, rng.randint(1, 3), assign_only=True)
            elif fam == "map":
                _map(pl, per_comp / 5, rng.randint(1, 4))
            elif fam == "stencil":
                rank = rng.randint(1, 3)
                _stencil(pl, per_comp / (2 * (1 + 2 * rank)), rank)
            elif fam == "matmul":
                _matmul(pl, per_comp / 3)
            elif fam == "sum":
                _sum(pl, per_comp / 2, rng.randint(2, 3))
            elif fam == "conv":
                _conv(pl, per_comp / 3)
            elif fam == "iterated":
                _iterated(pl, per_comp, rng.randint(1, 3))
            elif fam == "matvec":
                _matvec(pl, per_comp / 2)
            elif fam == "batched":
                _batched(pl, per_comp / 2)
            else:
                _triangular(pl, per_comp / 2)
        if (opts.min_work <= pl.work <= opts.max_work and pl.bytes <= (opts.max_bytes if pl.streams else limit)
                and pl.p.n_computations <= opts.max_comps):
            return pl.p.build()
    raise RuntimeError("could not draw a program within the work and memory limits; widen GeneratorOptions")


#: draws of one index of a stream before ``stream_program`` gives up finding a program not excluded
EXCLUDED_DRAWS = 50


def stream_program(seed: int, idx: int, opts: GeneratorOptions = GeneratorOptions(),
                   exclude: frozenset[str] = frozenset()) -> Program:
    """Program ``idx`` of the stream of ``seed``, which depends only on (seed, index): the index's first draw
    whose hash ``exclude`` does not hold (another database's programs, for a set held out from it)."""
    rng = random.Random(f"{seed}:{idx}")
    for _ in range(EXCLUDED_DRAWS):
        program = random_program(rng, f"r{seed}_{idx}", opts)
        if not exclude or program.content_hash() not in exclude:
            return program
    raise RuntimeError(f"{EXCLUDED_DRAWS} draws gave programs of the excluded database")


def generate_programs(n: int, seed: int, opts: GeneratorOptions = GeneratorOptions(),
                      start: int = 0) -> list[Program]:
    """Programs ``start .. start+n-1`` of the stream of ``seed``."""
    return [stream_program(seed, k, opts) for k in range(start, start + n)]
