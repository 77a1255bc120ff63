"""Build the compiled record engine (Cython modules plus hand-written C kernels).

Every ``kafka_fast/_native/*.pyx`` becomes one extension module and is linked with the C
kernels in ``kafka_fast/_native/csrc`` it declares; every ``kafka_fast/producer/*.pyx`` (``produce()``'s
fast path and routing state) becomes one without them. CPU-specific paths (SSE4.2, PCLMULQDQ, ARMv8 CRC) are
chosen at run time inside the kernels, so the build never uses ``-march=native``.
"""

from __future__ import annotations

import glob
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: Compile jobs when the builder names none (``pip install`` of the sdist gives no -j).
JOBS = os.cpu_count() or 1


class ParallelBuildExt(build_ext):
    """``build_ext`` compiling the extensions side by side unless ``-j`` says otherwise."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if not self.parallel:
            self.parallel = JOBS

NATIVE = os.path.join("kafka_fast", "_native")
PRODUCER = os.path.join("kafka_fast", "producer")
C_KERNELS = sorted(glob.glob(os.path.join(NATIVE, "csrc", "*.c")))
#: Kernels another kernel calls (kf_records.c computes batch CRCs with crc32c.c).
KERNEL_NEEDS = {"kf_records.c": ("crc32c.c",)}


def _kernels(pyx: str) -> list[str]:
    """The C kernels ``pyx`` declares (``cdef extern from "<kernel>.h"``) and those they call:
    a module links only those, so each kernel is not compiled once per module."""
    with open(pyx, encoding="utf-8") as f:
        text = f.read()
    names = {os.path.basename(c) for c in C_KERNELS
             if f'"{os.path.splitext(os.path.basename(c))[0]}.h"' in text}
    for name in list(names):
        names.update(KERNEL_NEEDS.get(name, ()))
    return [c for c in C_KERNELS if os.path.basename(c) in names]


def _compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2"]
    return ["-O3", "-fno-strict-aliasing", "-Wno-unused-function"]


def _extensions() -> list[Extension]:
    modules = []
    for pyx in sorted(glob.glob(os.path.join(NATIVE, "*.pyx"))):
        name = os.path.splitext(pyx)[0].replace(os.sep, ".")
        modules.append(
            Extension(
                name,
                [pyx, *_kernels(pyx)],
                include_dirs=[os.path.join(NATIVE, "csrc"), numpy.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=_compile_args(),
            )
        )
    for pyx in sorted(glob.glob(os.path.join(PRODUCER, "*.pyx"))):
        name = os.path.splitext(pyx)[0].replace(os.sep, ".")
        modules.append(Extension(name, [pyx], extra_compile_args=_compile_args()))
    return modules


setup(
    cmdclass={"build_ext": ParallelBuildExt},
    ext_modules=cythonize(
        _extensions(),
        language_level=3,
        nthreads=JOBS,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "embedsignature": True,
        },
    ),
)
