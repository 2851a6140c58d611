"""The one family of errors that loopcost raises for user mistakes and failures of the machine.

Every message says what was wrong, where, and how to fix it. The command line
prints these without a traceback: exit 3 for an ``EnvironmentFailure``, 2 for the rest.
"""


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none): what a one-line error
    quotes of a library's failure."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class LoopcostError(Exception):
    """Base class of every error caused by bad input or a bad environment."""


class ProgramError(LoopcostError):
    """A program (DSL, JSON) is malformed: unknown buffer, bad shape, bad name."""


class NotAffineError(ProgramError):
    """An index or loop bound is not an affine function of the loop iterators."""


class OutOfBoundsError(ProgramError):
    """An access may touch an element outside its buffer."""


class KernelLoadError(LoopcostError):
    """A kernel name, file or JSON document could not be loaded."""


class EnvironmentFailure(LoopcostError):
    """The machine failed the command, not the user's input: a compiler missing or crashing, a full disk, a
    database locked past its timeout, a cluster out of reach (the command line exits 3)."""


class CompilerNotFoundError(EnvironmentFailure):
    """The C compiler is missing."""


class CompileError(LoopcostError):
    """The C compiler rejected generated or user code."""


class CompileTimeout(EnvironmentFailure):
    """The C compiler ran past its time limit (hung, or a program too big to compile in time)."""


class ScheduleError(LoopcostError):
    """A schedule is malformed or illegal for the program."""


class IllegalScheduleError(ScheduleError):
    """A transformation would break a dependence; the message names it."""


class CSourceError(KernelLoadError):
    """A C file cannot be read into the IR; the message gives the file, the line and the reason."""


class VacuousCheckError(LoopcostError):
    """With the inputs used, comparing a program's outputs with the reference checks nothing (NaN or
    infinite reference outputs, or an output left as it was): no measured speedup can be trusted."""
