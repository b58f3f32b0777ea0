#!/usr/bin/env bash
# The test command: installs the dependencies (first run only: Debian packages, Kokkos, the Python
# environment from the package index); runs the fast gate first (scripts/check.sh: the formatting,
# spelling and large-file checks in seconds, then the library tests on Serial and the Python tests
# without MPI from the part of the build they need, so that those failures show within minutes);
# builds the API reference from that build's Python package (scripts/docs.sh: Sphinx, warnings as
# errors, in seconds); builds the rest of perfex with its tests, tools, benchmarks and
# Python package (pybind11 and the build's interpreter from that environment: numpy 2, mpi4py 4,
# desispec; one build, the gate's included), runs the suite on every backend (Serial, OpenMP with
# 2 threads), the consumer projects, the Python suite under numpy 2 and (the same extension)
# Debian's numpy 1 and mpi4py 3.1, the Python install routes and stubs check, and the benchmark
# smoke runs, the package pip-installed on every Python 3.10-3.13 the machine has
# (scripts/test-pythons.sh), the MPI cases under MPICH with an mpi4py built against it
# (scripts/test-mpich.sh; skipped with a message where MPICH cannot be installed), then the C++
# suite (OpenMP) under AddressSanitizer + UndefinedBehaviorSanitizer, and last, where a CUDA
# Kokkos exists, compiles everything for CUDA (nothing runs: CI has no GPU).
#
# Environment: Kokkos_ROOT (a Kokkos of your own, see install-deps.sh), KOKKOS_CUDA_ROOT (a
# CUDA Kokkos for the compile check; default: the one install-deps.sh builds where nvcc is
# installed and no Kokkos_ROOT is given), PERFEX_BUILD_DIR (default build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
deps=$(bash scripts/install-deps.sh)
kokkos_prefix=$(sed -n 's/^KOKKOS_PREFIX=//p' <<<"$deps" | tail -n 1)
kokkos_cuda_prefix=${KOKKOS_CUDA_ROOT:-$(sed -n 's/^KOKKOS_CUDA_PREFIX=//p' <<<"$deps" | tail -n 1)}
python=$(sed -n 's/^PERFEX_PYTHON=//p' <<<"$deps" | tail -n 1)
config_args=()
[ -z "$python" ] || config_args=(-DPython3_EXECUTABLE="$python")
# The tests of the Kokkos and CFITSIO built with perfex, from install-deps' offline sources.
kokkos_source=$(sed -n 's/^KOKKOS_SOURCE=//p' <<<"$deps" | tail -n 1)
cfitsio_source=$(sed -n 's/^CFITSIO_SOURCE=//p' <<<"$deps" | tail -n 1)
config_args+=(-DPERFEX_TEST_KOKKOS_SOURCE="$kokkos_source" -DPERFEX_TEST_CFITSIO_ARCHIVE="$cfitsio_source")
jobs=$(nproc)
build=${PERFEX_BUILD_DIR:-build}

echo "== perfex: the fast gate (scripts/check.sh) in the Release build (Kokkos at ${kokkos_prefix})"
t0=$SECONDS
PERFEX_RUFF=${python:+$(dirname "$python")/ruff} \
PERFEX_CODESPELL=${python:+$(dirname "$python")/codespell} \
  bash scripts/check.sh --build "$build" -- \
    -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="${kokkos_prefix}" "${config_args[@]}"
echo "== perfex: the fast gate passed ($((SECONDS - t0)) s)"

echo "== perfex: the API reference (scripts/docs.sh: Sphinx + numpydoc, warnings as errors)"
t0=$SECONDS
bash scripts/docs.sh "$build"
echo "== perfex: the API reference built ($((SECONDS - t0)) s)"

echo "== perfex: Release build, the rest"
cmake --build "$build" -j "$jobs"
(cd "$build" && ctest --output-on-failure -j 1 | tee ctest.log)
# The Python stages' share of the run (for the CI time budget).
awk '/Test +#[0-9]+: python\./ { for (i = 1; i < NF; i++) if ($(i + 1) == "sec") { t += $i; n++ } }
     END { if (n) printf "== perfex: the %d Python tests took %.0f s\n", n, t }' "$build/ctest.log"

echo "== perfex: the Python package on every Python here (3.10-3.13: pip install . in clean environments)"
Kokkos_ROOT="${kokkos_prefix}" bash scripts/test-pythons.sh "${build}/pythons" "$build"

echo "== perfex: the MPI cases under MPICH (Cray MPICH's family; mpi4py built against Debian's MPICH)"
t0=$SECONDS
rc=0
Kokkos_ROOT="${kokkos_prefix}" bash scripts/test-mpich.sh "${build}/mpich" "$build" || rc=$?
case $rc in
  0) echo "== perfex: the MPICH stage passed ($((SECONDS - t0)) s)" ;;
  77) echo "== perfex: the MPICH stage skipped: MPICH could not be installed (above)" ;;
  *) exit "$rc" ;;
esac

echo "== perfex: AddressSanitizer + UndefinedBehaviorSanitizer build of the tests and tools"
# Without the Python package: an ASan-built extension cannot load into an uninstrumented python3.
# The library tests for OpenMP alone (its teams of one thread take the Serial backend's paths,
# its teams of several the rest; the Release stage runs Serial), which keeps this stage's
# compile time within CI's budget.
san_flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S . -B "${build}-asan" -DCMAKE_BUILD_TYPE=Debug -DKokkos_ROOT="${kokkos_prefix}" \
      -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g ${san_flags}" -DCMAKE_EXE_LINKER_FLAGS="${san_flags}" \
      -DPERFEX_ENABLE_BENCHMARKS=OFF -DPERFEX_ENABLE_CONSUMER_TESTS=OFF \
      -DPERFEX_ENABLE_HEADER_CHECK=OFF -DPERFEX_ENABLE_PYTHON=OFF -DPERFEX_TEST_FILTER='~[slow]' \
      -DPERFEX_TEST_BACKENDS=openmp >/dev/null
cmake --build "${build}-asan" -j "$jobs"
(cd "${build}-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j 1)

if [ -n "$kokkos_cuda_prefix" ]; then
  echo "== perfex: CUDA compile check: tests, tools, benchmarks" \
       "(Kokkos at ${kokkos_cuda_prefix}; nothing runs)"
  # nvcc_wrapper calls the nvcc on PATH.
  command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:${PATH}"
  t0=$SECONDS
  # The tests for the CUDA backend alone (their Serial instances are the host builds'), and no
  # header-by-header check (the host build's: every header reaches nvcc through a test, tool or
  # benchmark).
  cmake -S . -B "${build}-cuda" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="${kokkos_cuda_prefix}" \
        -DCMAKE_CXX_COMPILER="${kokkos_cuda_prefix}/bin/nvcc_wrapper" \
        -DPERFEX_TEST_BACKENDS=cuda -DPERFEX_ENABLE_HEADER_CHECK=OFF >/dev/null
  cmake --build "${build}-cuda" -j "$jobs"
  echo "== perfex: CUDA compile check passed ($((SECONDS - t0)) s)"
else
  echo "== perfex: CUDA compile check skipped: no CUDA Kokkos (set KOKKOS_CUDA_ROOT to one)"
fi
echo "== perfex: all tests passed"
