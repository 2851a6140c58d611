"""loopcost: a deep-learning cost model and autoscheduler for loop nests."""

from .errors import LoopcostError
from .ir.dsl import ProgramBuilder
from .ir.program import Buffer, Computation, Loop, Program
from .ir.state import ProgramState

__version__ = "0.1.0"
__all__ = ["Buffer", "Computation", "Loop", "LoopcostError", "Program", "ProgramBuilder", "ProgramState"]
