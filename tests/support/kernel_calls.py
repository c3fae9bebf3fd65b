"""Calling the cost kernel's parts and helpers from a test (dnnmap/cost/kernel.py, docs/cost-model.md section 5).

They are compiled without a Python entry point (only the kernel calls them, which spares their wrappers'
compile time on a machine's first run), so a test calls one through a compiled trampoline."""

from __future__ import annotations

from functools import cache
from typing import Callable

from numba import njit


@cache
def from_python(function: Callable) -> Callable:
    """A compiled function passing its arguments to the kernel function ``function`` and returning its result."""

    @njit
    def call(*args):  # noqa: ANN002, ANN202 - numba types the arguments
        return function(*args)

    return call
