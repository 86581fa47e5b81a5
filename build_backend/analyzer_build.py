"""The project's build backend: setuptools', and for a wheel the chess kernels built ahead of time.

`python -m build --wheel` (or `pip wheel .`) builds the two chess kernel modules
(analyzer/aot_build.py, numba.pycc) for portable targets (x86-64-v3, then x86-64-v2 as the fallback;
the architecture's generic CPU elsewhere) into the wheel's analyzer/_aot/, so that an install of
the wheel scans standard chess without compiling anything, and without a C compiler. Such a
wheel is tagged for this Python and platform. Building it needs numba and numpy (asked for
here, for wheels only) and a C compiler. `-C kernels=none` builds the pure-Python wheel
without them. Editable installs (`pip install -e .`, the README's) and sdists are setuptools'
own: nothing is compiled, and their first scan builds the kernels for the machine it runs on.
"""

from __future__ import annotations

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the hooks this backend does not change)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

KERNEL_BUILD_REQUIRES = ["numba>=0.60", "numpy>=1.26"]
ENV = "ANALYZER_WHEEL_KERNELS"  # read by setup.py


def _kernels(config_settings) -> str:
    value = str((config_settings or {}).get("kernels", "portable"))
    if value not in ("portable", "none"):
        raise ValueError(f"-C kernels={value}: expected portable or none")
    return value


def _theirs(config_settings):
    """The settings without ours, for setuptools."""
    if not config_settings:
        return config_settings
    return {k: v for k, v in config_settings.items() if k != "kernels"} or None


def get_requires_for_build_wheel(config_settings=None):
    extra = KERNEL_BUILD_REQUIRES if _kernels(config_settings) == "portable" else []
    return _setuptools.get_requires_for_build_wheel(_theirs(config_settings)) + extra


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    previous = os.environ.get(ENV)
    os.environ[ENV] = _kernels(config_settings)
    try:
        return _setuptools.build_wheel(wheel_directory, _theirs(config_settings), metadata_directory)
    finally:
        if previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = previous
