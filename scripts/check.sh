#!/usr/bin/env bash
# The fast gate, to run before each commit: formatting (clang-format; ruff's format and lint),
# the library tests built for the Serial backend alone and run without the slow ones, and the
# Python tests without MPI, both on the golden data of the repository (tests/data) with the
# larger shared reference data left out, as in a plain clone. About 5 minutes on 2 cores once
# its build folder exists (the first run builds it: the tests and the Python extension).
# The full gate is the test command, scripts/test.sh (CI's); docs/development.md says which
# tests each runs.
#
# Environment: Kokkos_ROOT (default: the OpenMP Kokkos that scripts/install-deps.sh builds),
# PERFEX_CHECK_DIR (the build folder, default build-check), PERFEX_RUFF (see format.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
kokkos=${Kokkos_ROOT:-$HOME/.cache/perfex/kokkos-3.4.1-openmp}
build=${PERFEX_CHECK_DIR:-build-check}
jobs=$(nproc)
start=$SECONDS
step() { echo "== check: $1 ($((SECONDS - start)) s)"; }

step "formatting: C++ against .clang-format, Python against ruff's format and lint"
bash scripts/format.sh --check

step "Serial build of the library tests, the Python extension and perfex-extract"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos" \
      -DPERFEX_TEST_BACKENDS=serial -DPERFEX_ENABLE_BENCHMARKS=OFF \
      -DPERFEX_ENABLE_CONSUMER_TESTS=OFF -DPERFEX_ENABLE_HEADER_CHECK=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target perfex_tests perfex_python perfex-extract \
      perfex_region_recorder

# The shared reference data left out: its tests skip, as in a plain clone.
export PERFEX_SHARED_DATA_DIR=/nonexistent PERFEX_SHARED_DATA=/nonexistent
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false

step "library tests, Serial, without [slow]"
"$build/tests/perfex_tests" --backend serial "~[slow]"

step "Python tests without MPI"
python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 \
  PERFEX_EXTRACT_EXE="$build/tools/perfex-extract" \
  PERFEX_REGION_RECORDER="$build/tests/libperfex_region_recorder.so" \
  PERFEX_KOKKOS_TOOLS_VARIABLE="$(cat "$build/tests/kokkos-tools-variable")" \
  "$python" -m pytest -q -p no:cacheprovider -m "not mpi" python/tests

step "passed"
