"""Packing: a buffer's tile copied into a contiguous array before the loop that reuses it.

``K(B,L)``: before each run of loop ``L``, the box of ``B`` that the computations inside ``L`` read in that
run (``ir.packing.read_box``: its offsets move with the loops around ``L``) is copied into a local array
whose rows are contiguous, and every read of ``B`` inside ``L`` reads the copy (where each of them is
multiplied by one constant, the copy holds the products: ``ir.packing.pack_scale``). The copy sits right before
``L``, so it is exact while nothing inside ``L`` writes ``B``; it lives on the stack of the thread that
runs ``L``, so no loop at or inside ``L`` may be parallel (a parallel loop around ``L`` gives each thread
its own copy), and it holds at most ``ir.packing.PACK_BYTES``. These conditions are checked again after
every later step (``legality.check_packs``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.packing import reading
from ..ir.state import LoopTag, ProgramState
from .base import Transformation


@dataclass(frozen=True)
class Pack(Transformation):
    """Copy what loop ``loop`` reads of ``buffer`` into a contiguous local array before each of its runs."""

    buffer: str
    loop: str
    code = "K"
    kind = "pack"
    keeps_order = True

    def transformed(self, state: ProgramState) -> ProgramState:
        if self.buffer not in {b.name for b in state.program.buffers}:
            raise ScheduleError(f"no buffer {self.buffer!r} in program {state.program.name!r}; buffers are "
                                f"{[b.name for b in state.program.buffers]}")
        if not reading(state, self.loop, self.buffer):
            raise ScheduleError(f"nothing inside loop {self.loop!r} reads {self.buffer!r}")
        if self.buffer in state.packs(self.loop):
            raise ScheduleError(f"loop {self.loop!r} already packs {self.buffer!r}")
        return state.with_tags(LoopTag(self.loop, "pack", buffer=self.buffer))
