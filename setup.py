"""setuptools hooks of the build backend (build_backend/analyzer_build.py): when it builds a
wheel with kernels (ANALYZER_WHEEL_KERNELS=portable), build_py also builds the chess kernels for
portable targets into the wheel's analyzer/_aot/ (analyzer.aot_build.build_portable), and the wheel
is tagged for this Python and platform. Everything else is in pyproject.toml."""

from __future__ import annotations

import os
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _with_kernels() -> bool:
    return os.environ.get("ANALYZER_WHEEL_KERNELS", "none") == "portable"


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        if _with_kernels() and not self.editable_mode:
            dest = os.path.join(os.path.abspath(self.build_lib), "analyzer", "_aot")
            # In a child (numba compiles there), from these sources (the current directory)
            code = "import sys; from analyzer.aot_build import build_portable; build_portable(sys.argv[1])"
            subprocess.run([sys.executable, "-c", code, dest], cwd=HERE, check=True)


class KernelDistribution(Distribution):
    def has_ext_modules(self):  # the wheel holds extension modules: tag it for this Python and platform
        return _with_kernels()


setup(cmdclass={"build_py": BuildPyWithKernels}, distclass=KernelDistribution)
