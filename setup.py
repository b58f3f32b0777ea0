"""Builds perfex._perfex with the project's CMake for `pip install .` (with build isolation:
setuptools and pybind11 from the package index; or --no-build-isolation in an environment
that has them, as desiInstall runs it) and `python setup.py build_ext --inplace`
(etc/perfex_compile.sh, desiInstall's branch installs).

Kokkos: Kokkos_ROOT when set, else one on CMAKE_PREFIX_PATH, else one built into the
extension (static, its symbols hidden; offline: PERFEX_KOKKOS_ARCHIVE or
FETCHCONTENT_SOURCE_DIR_KOKKOS). CFITSIO likewise (PERFEX_CFITSIO=auto|system|bundled,
PERFEX_CFITSIO_ARCHIVE, FETCHCONTENT_SOURCE_DIR_CFITSIO). pybind11 (>= 2.12) and cmake: the ones installed
for this interpreter, else cmake on PATH. CMAKE_ARGS adds CMake options (split as a shell
would: quote an option holding spaces); PERFEX_BUILD_JOBS
sets the parallel jobs (default: the cores). The build folder is build-pip/TAG in the source
tree, one per interpreter and ABI (TAG: the extension suffix's, e.g. cpython-313-x86_64-linux-gnu),
so that one clone installs for several Pythons in turn; a folder configured with another Python
installation, Kokkos or CMAKE_ARGS is emptied first.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-313-x86_64-linux-gnu.so


def version():
    text = open(os.path.join(HERE, "CMakeLists.txt")).read()
    return re.search(r"project\(perfex VERSION ([0-9.]+)", text).group(1)


# Passed on to CMake when set: where Kokkos is (a module, spack, E4S), and where the bundled
# Kokkos and CFITSIO come from on a machine without network (cmake/bundled.cmake).
FORWARDED = (
    "Kokkos_ROOT",
    "PERFEX_CFITSIO",
    "PERFEX_KOKKOS_ARCHIVE",
    "PERFEX_CFITSIO_ARCHIVE",
    "FETCHCONTENT_SOURCE_DIR_KOKKOS",
    "FETCHCONTENT_SOURCE_DIR_CFITSIO",
)


def forwarded_options():
    """-DNAME=VALUE for each of FORWARDED set in the environment. Without Kokkos_ROOT, CMake
    looks on CMAKE_PREFIX_PATH and, finding no Kokkos, builds one into the extension."""
    return [f"-D{name}={os.environ[name]}" for name in FORWARDED if os.environ.get(name)]


def pybind11_dir():
    try:
        import pybind11
    except ImportError:
        sys.exit(
            f"perfex: building the extension needs pybind11 >= 2.12 for {sys.executable} "
            "(pip install 'pybind11>=3'; pip install . without --no-build-isolation takes it "
            "from the package index)"
        )
    return pybind11.get_cmake_dir()


def cmake_program():
    """The cmake of this interpreter's environment (pip install cmake), else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "cmake")
    program = beside if os.access(beside, os.X_OK) else shutil.which("cmake")
    if program is None:
        sys.exit("perfex: cmake not found (Debian: apt-get install cmake; or pip install cmake)")
    return program


def build_folder(configuration):
    """build-pip/TAG for this interpreter's ABI, emptied when it holds a build configured
    otherwise (CMake keeps the first Python, Kokkos and pybind11 it found in its cache)."""
    tag = MODULE_SUFFIX.strip(".").rsplit(".", 1)[0]
    build = os.path.join(HERE, "build-pip", tag)
    stamp = os.path.join(build, "perfex-configuration.txt")
    text = "\n".join(configuration) + "\n"
    if os.path.exists(build) and (not os.path.exists(stamp) or open(stamp).read() != text):
        shutil.rmtree(build)
    os.makedirs(build, exist_ok=True)
    with open(stamp, "w") as f:
        f.write(text)
    return build


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures the project with only the Python package enabled and builds its module."""

    def build_extension(self, ext):
        args = [
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11_dir()}",
            "-DPERFEX_ENABLE_PYTHON=ON",
            "-DPERFEX_ENABLE_TESTS=OFF",
            "-DPERFEX_ENABLE_TOOLS=OFF",
            "-DPERFEX_ENABLE_BENCHMARKS=OFF",
            "-DPERFEX_ENABLE_CONSUMER_TESTS=OFF",
            "-DPERFEX_ENABLE_HEADER_CHECK=OFF",
        ]
        args += forwarded_options() + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        jobs = os.environ.get("PERFEX_BUILD_JOBS", str(os.cpu_count() or 1))
        cmake = cmake_program()
        build = build_folder([sys.base_prefix, cmake] + args)
        subprocess.run([cmake, "-S", HERE, "-B", build] + args, check=True)
        subprocess.run([cmake, "--build", build, "--target", "perfex_python", "-j", jobs], check=True)
        module = os.path.join(build, "python", "perfex", "_perfex" + MODULE_SUFFIX)
        if not os.path.exists(module):
            sys.exit(f"perfex: the build in {build} made no {os.path.basename(module)} for {sys.executable}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(module, target)


setup(
    version=version(),
    ext_modules=[CMakeExtension("perfex._perfex")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join("build-pip", "setuptools")}},
)
