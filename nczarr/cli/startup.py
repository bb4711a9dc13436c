"""What the ``nczarr`` command sets up before it imports anything heavy.

nczarr does no linear algebra: it uses numpy for arrays of values (fill values,
attributes, chunks it re-encodes) and h5py uses it, but nothing calls BLAS or LAPACK.
numpy's OpenBLAS still starts one thread per core when it is loaded (measured on a
2-core machine: ~0.12 s of CPU of the ~0.3 s ``import numpy`` costs, a third to a half
of what a ``.nc`` convert pays above ``cp``). So the command, and only the command
(never ``import nczarr``: a program using the library keeps its own threads), sets the
thread count of the BLAS and OpenMP runtimes to 1 where the user has not set it, before
numpy can be loaded. A value the user set, even empty, wins; once numpy is loaded
(``main`` called from a program that imported it) nothing is set, as it could no longer
take effect.
"""

from __future__ import annotations

import sys
from collections.abc import Container, MutableMapping

__all__ = ["MATH_THREAD_VARIABLES", "single_threaded_math"]

#: The thread-count variables of the BLAS/OpenMP runtimes numpy may be built with:
#: OpenBLAS, OpenMP (OpenBLAS's OpenMP builds, MKL), MKL, Apple's Accelerate.
MATH_THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def single_threaded_math(
    environ: MutableMapping[str, str], modules: Container[str] = sys.modules
) -> list[str]:
    """Set each of :data:`MATH_THREAD_VARIABLES` the user has not set to ``"1"`` in
    ``environ``, unless numpy is already in ``modules``; return the names set."""
    if "numpy" in modules:
        return []
    names = [name for name in MATH_THREAD_VARIABLES if name not in environ]
    for name in names:
        environ[name] = "1"
    return names
