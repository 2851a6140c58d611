"""Fault injection for the tests: work killed with SIGKILL at a chosen moment."""

import os
import select
import signal
from collections.abc import Callable


def killed_at(work: Callable[[], object], delay: float) -> bool:
    """Run ``work`` in a child forked from this process (no start-up cost; its own process group, so the
    compilers and pool workers it starts die with it) and kill the group with SIGKILL after ``delay``
    seconds (sooner when it ends before: what it started dies with it). True when the kill came first; an
    error in ``work`` fails the caller."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setsid()
            work()
            code = 0
        finally:
            os._exit(code)
    child = os.pidfd_open(pid)
    try:
        select.select([child], [], [], delay)  # returns as soon as the child ends
    finally:
        os.close(child)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # not its own group yet: it started nothing
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert not os.WIFEXITED(status) or os.WEXITSTATUS(status) == 0, "the killed work failed on its own"
    return os.WIFSIGNALED(status)
