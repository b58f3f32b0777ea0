#!/usr/bin/env bash
# The fast gate, to run before each commit, and the first stage of the test command
# (scripts/test.sh, CI's): the tree's formatting (clang-format; ruff's format and lint),
# spelling (codespell, pyproject.toml's words), large files (scripts/large_files.sh) and the
# library's include layers (cmake/check_layers.cmake); then the library tests without the slow
# ones on the Serial backend and the Python tests without MPI, both on the golden data of the
# repository (tests/data) with the larger shared reference data left out, as in a plain clone. About 5 minutes on 2 cores once its build folder exists
# (the first run builds it: the tests, the Python extension and perfex-extract).
#
#   bash scripts/check.sh                       the Serial suite alone, in build-check
#   bash scripts/check.sh --build DIR -- ARGS   in DIR, configured with cmake ARGS instead
#                                               (scripts/test.sh: its full build's, so that the
#                                               gate builds part of that build, not a second one)
#
# The full gate is the test command, scripts/test.sh; docs/development.md says which tests each
# runs. Environment: Kokkos_ROOT (default: the OpenMP Kokkos that scripts/install-deps.sh
# builds), PERFEX_CHECK_DIR (the default build folder, build-check), PERFEX_RUFF (see
# format.sh), PERFEX_CODESPELL (codespell, else the one on PATH, else install-deps' Python
# environment's).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
kokkos=${Kokkos_ROOT:-$HOME/.cache/perfex/kokkos-3.4.1-openmp}
build=${PERFEX_CHECK_DIR:-build-check}
configure=(-DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos" -DPERFEX_TEST_BACKENDS=serial
           -DPERFEX_ENABLE_BENCHMARKS=OFF -DPERFEX_ENABLE_CONSUMER_TESTS=OFF
           -DPERFEX_ENABLE_HEADER_CHECK=OFF)
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --) shift; configure=("$@"); break ;;
    *) echo "check.sh: unknown argument '$1' (--build DIR [-- CMAKE_ARGS...])" >&2; exit 2 ;;
  esac
done
jobs=$(nproc)
start=$SECONDS
step() { echo "== check: $1 ($((SECONDS - start)) s)"; }

step "formatting: C++ against .clang-format, Python against ruff's format and lint"
bash scripts/format.sh --check

step "spelling (codespell), large files, pre-commit's pins"
codespell=${PERFEX_CODESPELL:-$(command -v codespell \
  || echo "${PERFEX_DEPS_DIR:-${HOME}/.cache/perfex}/venv/bin/codespell")}
if [ ! -x "$codespell" ]; then
  echo "check: codespell not found ($codespell): run scripts/install-deps.sh, or set" \
       "PERFEX_CODESPELL" >&2
  exit 1
fi
git ls-files -z | xargs -0 "$codespell"  # pyproject.toml: what it skips, the project's words
echo "spelling: codespell $("$codespell" --version) finds nothing"
bash scripts/large_files.sh
# pre-commit's hooks run the tools at the versions this gate runs.
pins=("clang-format==$(clang-format --version | grep -o '[0-9][0-9.]*' | head -n 1)"
      "$(grep -o '^ruff==[0-9.]*' python/requirements/dev.txt)"
      "$(grep -o '^codespell==[0-9.]*' python/requirements/dev.txt)")
for pin in "${pins[@]}"; do
  grep -qF "[$pin]" .pre-commit-config.yaml || {
    echo "check: .pre-commit-config.yaml does not pin $pin (the version this gate runs)" >&2
    exit 1
  }
done
echo "pre-commit: its hooks pin ${pins[*]}"

step "the library's layers include one way (cmake/check_layers.cmake)"
cmake -P cmake/check_layers.cmake

step "build of the library tests, the Python extension and perfex-extract in $build"
cmake -S . -B "$build" "${configure[@]}" >/dev/null
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
