"""The built-in kernel library. Importing this package registers every kernel."""

from . import linalg, ml, stencils  # noqa: F401  (registers kernels)
from .registry import KERNELS, Kernel

__all__ = ["KERNELS", "Kernel"]
