"""The kernel library: named programs with a small and a benchmark size, and a NumPy reference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import KernelLoadError
from ..ir.program import Program

SIZES = ("small", "bench")


@dataclass(frozen=True)
class Kernel:
    """A library kernel.

    ``build(**sizes)`` returns the program; ``sizes`` maps ``small`` and
    ``bench`` to keyword sizes; ``reference(arrays, **sizes)`` updates a dict
    of NumPy arrays (every buffer, initialized) in place the way the kernel does.
    """

    name: str
    description: str
    build: Callable[..., Program]
    sizes: dict[str, dict[str, int]]
    reference: Callable[..., None]

    def program(self, size: str = "small") -> Program:
        if size not in self.sizes:
            raise KernelLoadError(f"kernel {self.name!r} has no size {size!r}; use one of {list(self.sizes)}")
        return self.build(**self.sizes[size])


KERNELS: dict[str, Kernel] = {}


def kernel(name: str, description: str, sizes: dict[str, dict[str, int]],
           reference: Callable[..., None]):
    """Decorator that registers a build function as a library kernel."""

    def wrap(build: Callable[..., Program]) -> Callable[..., Program]:
        if name in KERNELS:
            raise ValueError(f"kernel {name!r} registered twice")
        if set(sizes) != set(SIZES):
            raise ValueError(f"kernel {name!r} must give sizes {SIZES}")
        KERNELS[name] = Kernel(name, description, build, sizes, reference)
        return build

    return wrap
