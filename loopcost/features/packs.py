"""Packs as the features see them (layout 4).

A pack ``K(B,L)`` copies, before each run of loop ``L``, the box of ``B`` that the computations inside
``L`` read into a contiguous local array (``transforms.packing``). The features show both halves of it:

- the copy is a computation of its own, placed just before ``L`` under the loops around it: their levels,
  then one level per dimension of the box (its extent), a write of the copy and a read of ``B`` that both
  step by one element along the innermost level;
- every read of ``B`` inside ``L`` reads a temporary of the box's size, laid out in the copy's order of
  dimensions, with its gaps (``ir.packing.copy_layout``), so its stride along the innermost loop is the copy's (gemm's
  ``B[k][j]`` read across rows moves by the tile's width, not by the matrix's).
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.expr import reads
from ..ir.packing import Box, read_box
from ..ir.state import CompSchedule, LoopTag, ProgramState
from . import layout as L
from .layout import FeatureLimitError
from .nest import TRIPS_AT

_LF, _AF, _CF = L.LEVEL_INDEX, L.ACCESS_INDEX, L.COMP_INDEX
_ROLES = ("buffer_is_input", "buffer_is_output", "buffer_is_temp")
_STRIDE = ("inner_stride_known", "inner_stride_zero", "inner_stride_one", "log2_inner_stride")


def _set_stride(row: np.ndarray, stride: float) -> None:
    """The inner-stride fields of an access block (``row``) for a stride of ``stride`` elements."""
    for field, value in zip(_STRIDE, (1.0, stride < 1e-9, abs(stride - 1) < 1e-9, math.log2(1 + stride)),
                            strict=True):
        row[_AF[field]] = value


def _reading_copy(vec: np.ndarray, state: ProgramState, cs: CompSchedule, tag: LoopTag, box: Box,
                  step: np.ndarray | None) -> np.ndarray:
    """``vec`` of computation ``cs`` with its reads of the packed buffer reading the copy instead."""
    c = state.program.computation(cs.comp)
    iters = [lp.name for lp in state.program.enclosing_loops(cs.comp)]
    pitch = box.pitch
    vec = vec.copy()
    for a, r in enumerate(reads(c.rhs), start=1):
        if r.buffer != tag.buffer or a >= L.MAX_ACCESSES:
            continue
        row = vec[L.ACCESSES_AT + a * L.ACCESS_SIZE:L.ACCESSES_AT + (a + 1) * L.ACCESS_SIZE]
        for role in _ROLES:
            row[_AF[role]] = role == "buffer_is_temp"
        row[_AF["log2_buffer_size"]] = math.log2(math.prod(box.copy_shape))
        if step is not None:
            address = np.array([sum(w * ix.coeff(it) for w, ix in zip(pitch, r.index, strict=True)) for it in iters])
            _set_stride(row, float(abs(address @ step)))
    return vec


def _copy(reader: np.ndarray, q: int, tag: LoopTag, state: ProgramState, extents: tuple[int, ...]) -> np.ndarray:
    """The copy's vector: the level blocks of the ``q`` loops of ``reader`` (the first computation that reads the
    copy) around the pack's loop, with their real trips (their coefficients dropped: the copy's iterators are the
    box's), a level per dimension of the box, the copy's write and the buffer's read."""
    outer = reader[:q * L.LEVEL_SIZE]
    rank, depth = len(extents), q + len(extents)
    if depth > L.MAX_DEPTH:
        raise FeatureLimitError(f"{state.program.name}: the copy of {tag.buffer!r} at loop {tag.loop!r} has "
                                f"{depth} loop levels; the features allow {L.MAX_DEPTH}")
    vec = np.zeros(L.COMP_SIZE, np.float32)
    vec[:len(outer)] = outer
    coef = len(L.LEVEL_FIELDS)
    for d in range(len(outer) // L.LEVEL_SIZE):
        vec[d * L.LEVEL_SIZE + coef:(d + 1) * L.LEVEL_SIZE] = 0
    runs = sum(vec[d * L.LEVEL_SIZE + _LF["log2_extent"]] for d in range(len(outer) // L.LEVEL_SIZE))
    for d, extent in enumerate(extents):
        at = len(outer) + d * L.LEVEL_SIZE
        vec[at + _LF["present"]] = 1
        vec[at + _LF["log2_extent"]] = math.log2(extent)
        vec[at + coef + d] = 1
    vec[TRIPS_AT:TRIPS_AT + q] = reader[TRIPS_AT:TRIPS_AT + q]
    vec[TRIPS_AT + q:TRIPS_AT + depth] = [math.log2(e) for e in extents]
    buffer = state.program.buffer(tag.buffer)
    for a, (role, size) in enumerate((("buffer_is_temp", math.prod(extents)), (f"buffer_is_{buffer.role}",
                                                                              buffer.size))):
        row = vec[L.ACCESSES_AT + a * L.ACCESS_SIZE:L.ACCESSES_AT + (a + 1) * L.ACCESS_SIZE]
        row[_AF["present"]] = 1
        row[_AF["is_write"]] = a == 0
        row[_AF["rank"]] = rank
        row[_AF[role]] = 1
        row[_AF["log2_buffer_size"]] = math.log2(size)
        _set_stride(row, 1.0)
        for d in range(rank):  # copy[i0][i1]..., read from B at the box's offset plus the same indices
            row[len(L.ACCESS_FIELDS) + d * (L.MAX_ITERS + 1) + d] = 1
    fields = vec[L.FIELDS_AT:L.NEST_AT]
    fields[_CF["n_reads"]] = 1
    fields[_CF[L.FEATURE_DTYPE.get(buffer.dtype, buffer.dtype)]] = 1
    fields[_CF["n_levels"]] = depth
    fields[_CF["n_iters"]] = rank
    fields[_CF["log2_points"]] = runs + math.log2(math.prod(extents))
    return vec


def with_packs(state: ProgramState, comps: list[CompSchedule], vecs: list[np.ndarray],
               paths: list[tuple[tuple[int, str], ...]], steps: list[np.ndarray | None]
               ) -> tuple[list[np.ndarray], list[tuple[tuple[int, str], ...]]]:
    """The vectors and loop paths of ``comps`` (each computation's real levels as (beta, loop name), and the
    direction its innermost loop steps in, ``steps``) with every pack of ``state`` shown: the packed reads
    changed and each copy inserted before the first computation inside its loop."""
    vecs, paths = list(vecs), list(paths)
    copies = []
    for tag in (t for t in state.tags if t.kind == "pack"):
        box = read_box(state, tag.loop, tag.buffer)
        extents = box.extents
        # the computations inside the loop that read the buffer (another computation may have a loop of the
        # same name that it no longer shares: gemm's S0 keeps its ``i`` when S1's is tiled)
        readers = [k for k, path in enumerate(paths) if any(name == tag.loop for _, name in path)
                   and any(r.buffer == tag.buffer for r in state.program.computation(comps[k].comp).reads())]
        for k in readers:
            vecs[k] = _reading_copy(vecs[k], state, comps[k], tag, box, steps[k])
        q = next(d for d, (_, name) in enumerate(paths[readers[0]]) if name == tag.loop)
        at = paths[readers[0]][:q + 1]  # the loop, as the first reader's path reaches it
        path = paths[readers[0]][:q] + tuple((-1, f"{tag.loop}/K({tag.buffer})/{d}") for d in range(len(extents)))
        copies.append((at, _copy(vecs[readers[0]], q, tag, state, extents), path))
    for at, vec, path in copies:  # each before the first computation inside its loop, after earlier copies
        k = next(k for k, p in enumerate(paths) if p[:len(at)] == at)
        vecs.insert(k, vec)
        paths.insert(k, path)
    return vecs, paths
