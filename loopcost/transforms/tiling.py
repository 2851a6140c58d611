"""Tiling: consecutive loops split into tile loops (outside) and point loops (inside)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.state import LoopTag, ProgramState
from .base import Transformation
from .legality import loop_level
from .levels import fresh_name, identity, insert_levels, rewrite


def tile_levels(state: ProgramState, loops: tuple[str, ...], sizes: tuple[int, ...],
                names: list[str]) -> ProgramState:
    """Insert tile levels ``floor(l/size)`` named ``names`` before the consecutive ``loops``.

    Partial tiles are exact: isl bounds each point loop by its tile and the domain.
    """
    if len(set(loops)) != len(loops):
        raise ScheduleError(f"tiling needs distinct loops, got {list(loops)}")
    if any(s < 1 for s in sizes):
        raise ScheduleError(f"tile sizes must be positive, got {list(sizes)}")
    changed = {}
    p = loop_level(state, *loops)
    for cs in state.comps_with(*loops):
        if [cs.level_of(lp) for lp in loops] != list(range(p, p + len(loops))):
            raise ScheduleError(f"loops {list(loops)} are not consecutive, outermost first, in {cs.comp}")
        exprs = identity(cs)
        exprs[p:p] = [f"floor(l{p + k}/{s})" for k, s in enumerate(sizes)]
        betas = list(cs.betas)
        betas[p + 1:p + 1] = [0] * len(loops)
        names_ = list(cs.loops)
        names_[p:p] = names
        changed[cs.comp] = rewrite(cs, exprs, betas, names_)
    return insert_levels(state, p, len(loops), changed)


@dataclass(frozen=True)
class Tile(Transformation):
    """2D or 3D tiling of consecutive loops; tile loops are named ``<loop>_t``."""

    loops: tuple[str, ...]
    sizes: tuple[int, ...]
    kind = "tile"

    def __post_init__(self) -> None:
        if len(self.loops) not in (2, 3) or len(self.sizes) != len(self.loops):
            raise ScheduleError(f"tiling takes 2 or 3 loops and as many sizes, got {list(self.loops)} "
                                f"and {list(self.sizes)}")

    @property
    def code(self) -> str:  # type: ignore[override]
        return f"T{len(self.loops)}"

    def transformed(self, state: ProgramState) -> ProgramState:
        names = [fresh_name(state, f"{lp}_t") for lp in self.loops]
        if len(set(names)) != len(names):
            raise ScheduleError(f"could not name tile loops of {list(self.loops)}")
        state = tile_levels(state, self.loops, self.sizes, names)
        return state.with_tags(*[LoopTag(n, "tile", s) for n, s in zip(names, self.sizes, strict=True)],
                               *[LoopTag(lp, "tiled", s) for lp, s in zip(self.loops, self.sizes, strict=True)])
