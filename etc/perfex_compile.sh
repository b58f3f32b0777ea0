#!/usr/bin/env bash
# desiInstall's branch installs (e.g. `desiInstall perfex main`) copy the repository and run this
# script in it with the interpreter as argument; the module file then puts python/ on
# PYTHONPATH. It builds the extension in place (python/perfex/_perfex.*.so) with setup.py's
# CMake build: Kokkos from Kokkos_ROOT or CMAKE_PREFIX_PATH, else built in, pybind11 >= 2.12
# and cmake from the interpreter's environment (else cmake on PATH).
#
#   etc/perfex_compile.sh [PYTHON]      (default: python3)
set -euo pipefail
python=${1:-python3}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
"$python" setup.py --quiet build_ext --inplace
"$python" - <<'PY'
import sys
sys.path.insert(0, "python")
import perfex
print(f"perfex_compile.sh: perfex {perfex.__version__} built in {perfex.__file__.rsplit('/', 1)[0]}")
PY
