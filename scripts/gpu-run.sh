#!/usr/bin/env bash
# Builds perfex for CUDA on a GPU machine that has no network and nothing but nvcc, CMake and
# g++, runs the test suite and the benchmarks on the GPU. What such a machine lacks comes
# along in a carry folder made beforehand on a machine with the dependencies:
#
#   bash scripts/gpu-run.sh --pack [DIR]   # here: DIR (default .gpu-carry, git-ignored) gets
#                                          # the Kokkos + Kokkos Kernels 3.4.1 source with
#                                          # scripts/patches/kokkos-3.4.1-cuda13.patch applied,
#                                          # and Catch2 + Google Benchmark from /usr (~6 MB)
#   bash scripts/gpu-run.sh [options]      # there, in a copy of the clone with DIR beside it
#
# Options (GPU side):
#   --carry DIR     the carry folder (default .gpu-carry)
#   --arch NAME     Kokkos GPU architecture (default HOPPER90: H100/H200; AMPERE80 for A100)
#   --work DIR      build folder, reused by a later run on the same machine (default build-gpu)
#   --out DIR       where logs and bench.json go (default: $OUT if set, else WORK/out)
#   --no-tests / --no-bench   skip running the tests / the benchmarks
#   --no-run        build only (no GPU needed: a compile check)
# Environment: PERFEX_GPU_TEST_ARGS (Catch2 arguments, e.g. '~[slow]'),
#   PERFEX_GPU_BENCH_FILTER (default 'cuda'), PERFEX_GPU_BENCH_ARGS (more benchmark options).
# Without Catch2 the tests are not built, without Google Benchmark the benchmarks; LAPACK
# and CFITSIO are used when the machine has them (else the LAPACK oracle tests and the FITS
# layer, tools and reference-data tests are left out).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=lib/kokkos.sh
. scripts/lib/kokkos.sh
patch_file="$root/scripts/patches/kokkos-3.4.1-cuda13.patch"

carry=.gpu-carry arch=HOPPER90 work=build-gpu out=${OUT:-} pack=0 run_tests=1 run_bench=1
while [ $# -gt 0 ]; do
  case $1 in
    --pack) pack=1; [ $# -gt 1 ] && [ "${2#-}" = "$2" ] && { carry=$2; shift; } ;;
    --carry) carry=$2; shift ;;
    --arch) arch=$2; shift ;;
    --work) work=$2; shift ;;
    --out) out=$2; shift ;;
    --no-tests) run_tests=0 ;;
    --no-bench) run_bench=0 ;;
    --no-run) run_tests=0; run_bench=0 ;;
    *) echo "gpu-run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$pack" = 0 ] || mkdir -p "$carry"
carry=$(cd "$carry" 2>/dev/null && pwd || echo "$carry")

# ---- --pack: on a machine with scripts/install-deps.sh's cache ---------------------------
if [ "$pack" = 1 ]; then
  deps_dir=${PERFEX_DEPS_DIR:-${HOME}/.cache/perfex}
  [ -d "${deps_dir}/src/kokkos" ] || [ -d "${deps_dir}/src-cuda/kokkos" ] \
    || { echo "gpu-run.sh: no Kokkos source in ${deps_dir}: run scripts/install-deps.sh first" >&2; exit 1; }
  patch_kokkos_source "${deps_dir}/src" "${deps_dir}/src-cuda" "$patch_file"
  tar -czf "${carry}/kokkos-src.tar.gz" -C "${deps_dir}/src-cuda" .perfex-patch kokkos kokkos-kernels
  # Catch2 and Google Benchmark as Debian installed them (headers, libraries, CMake packages),
  # in the /usr layout their CMake packages' relative paths expect.
  rm -rf "${carry}/deps" && mkdir -p "${carry}/deps"
  dpkg -L catch2 libbenchmark-dev libbenchmark1debian | grep '^/usr/' | grep -v '^/usr/share/' \
    | while read -r f; do [ -d "$f" ] || echo "${f#/usr/}"; done | tar -c -C /usr -T - | tar -x -C "${carry}/deps"
  echo "gpu-run.sh: packed $(du -sh "$carry" | cut -f1) into ${carry}"
  exit 0
fi

# ---- GPU side ------------------------------------------------------------------------------
mkdir -p "$work"
work=$(cd "$work" && pwd)
out=${out:-${work}/out}
mkdir -p "$out"
nvcc=$(find_nvcc)
[ -n "$nvcc" ] || { echo "gpu-run.sh: nvcc not found (PATH, /usr/local/cuda/bin)" >&2; exit 1; }
export PATH="$(dirname "$nvcc"):${PATH}"  # nvcc_wrapper calls the nvcc on PATH
# Some images have no make: Ninja where it exists (CMake reads CMAKE_GENERATOR).
if command -v ninja >/dev/null; then export CMAKE_GENERATOR=Ninja; fi
jobs=$(nproc)
if command -v nvidia-smi >/dev/null; then nvidia-smi -L || true; fi
"$nvcc" --version | tail -n 2

# Kokkos (Serial + CUDA) from the carried, already patched source.
[ -f "${carry}/kokkos-src.tar.gz" ] \
  || { echo "gpu-run.sh: ${carry}/kokkos-src.tar.gz missing: run 'scripts/gpu-run.sh --pack' where the dependencies are" >&2; exit 1; }
patch_sum=$(sha256sum "$patch_file" | cut -c1-16)
src="${work}/kokkos-src"
if [ "$(cat "${src}/.perfex-patch" 2>/dev/null)" != "$patch_sum" ]; then
  rm -rf "$src" && mkdir -p "$src" && tar -xzf "${carry}/kokkos-src.tar.gz" -C "$src"
  [ "$(cat "${src}/.perfex-patch")" = "$patch_sum" ] \
    || { echo "gpu-run.sh: the carried Kokkos source predates the current patch: --pack again" >&2; exit 1; }
fi
kokkos="${work}/kokkos-${arch}"
t0=$SECONDS
build_kokkos "$kokkos" "$src" "patch ${patch_sum}" "${src}/kokkos/bin/nvcc_wrapper" "$jobs" \
  -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON "-DKokkos_ARCH_${arch}=ON"
echo "== Kokkos ready ($((SECONDS - t0)) s)"

# Which optional dependencies this machine has (or the carry folder brings).
probe="${work}/probe"
mkdir -p "$probe"
cat >"${probe}/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(perfex_gpu_probe CXX)
find_package(Catch2 2.13 QUIET)
find_package(benchmark 1.7 QUIET)
find_package(LAPACK QUIET)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(CFITSIO QUIET cfitsio)
endif()
if(NOT CFITSIO_FOUND)
  find_library(CFITSIO_LIBRARY NAMES cfitsio)
  find_path(CFITSIO_INCLUDE_DIR fitsio.h)
  if(CFITSIO_LIBRARY AND CFITSIO_INCLUDE_DIR)
    set(CFITSIO_FOUND ON)
  endif()
endif()
foreach(p Catch2 benchmark LAPACK CFITSIO)
  if(${p}_FOUND)
    message(STATUS "PROBE ${p}=ON")
  else()
    message(STATUS "PROBE ${p}=OFF")
  endif()
endforeach()
CMAKE
# The carried packages by their folders (found whatever the machine's library layout).
carried=()
while read -r config; do
  name=$(basename "$config" Config.cmake)
  carried+=("-D${name}_DIR=$(dirname "$config")")
done < <(find "${carry}/deps" -name '*Config.cmake' 2>/dev/null)
probe_out=$(cmake -S "$probe" -B "${probe}/build" "${carried[@]}" 2>&1) \
  || { echo "$probe_out" >&2; exit 1; }
have() { grep -q "PROBE $1=ON" <<<"$probe_out" && echo ON || echo OFF; }
catch2=$(have Catch2) benchmark=$(have benchmark) lapack=$(have LAPACK) cfitsio=$(have CFITSIO)
echo "== optional dependencies: Catch2 ${catch2}, Google Benchmark ${benchmark}, LAPACK ${lapack}, CFITSIO ${cfitsio}"

# perfex: library (header check), tests, benchmarks, and the tools where CFITSIO exists.
build="${work}/perfex-${arch}"
t0=$SECONDS
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos" \
      -DCMAKE_CXX_COMPILER="${kokkos}/bin/nvcc_wrapper" "${carried[@]}" \
      -DPERFEX_ENABLE_TESTS="$catch2" -DPERFEX_ENABLE_BENCHMARKS="$benchmark" \
      -DPERFEX_ENABLE_LAPACK="$lapack" -DPERFEX_ENABLE_CONSUMER_TESTS=OFF >"${out}/configure.log" 2>&1 \
  || { tail -n 40 "${out}/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$jobs" >"${out}/build.log" 2>&1 || { tail -n 60 "${out}/build.log" >&2; exit 1; }
echo "== perfex built for CUDA (${arch}) in $((SECONDS - t0)) s"

status=0
if [ "$run_tests" = 1 ] && [ "$catch2" = ON ]; then
  echo "== tests on the GPU (perfex_tests --backend cuda ${PERFEX_GPU_TEST_ARGS:-})"
  t0=$SECONDS
  # shellcheck disable=SC2086
  "${build}/tests/perfex_tests" --backend cuda ${PERFEX_GPU_TEST_ARGS:-} 2>&1 | tee "${out}/tests.log" \
    || status=1
  echo "== tests: $([ $status = 0 ] && echo passed || echo FAILED) ($((SECONDS - t0)) s)"
fi
if [ "$run_bench" = 1 ] && [ "$benchmark" = ON ]; then
  echo "== benchmarks (filter '${PERFEX_GPU_BENCH_FILTER:-cuda}'); JSON in ${out}/bench.json"
  # shellcheck disable=SC2086
  "${build}/bench/perfex_bench" --benchmark_filter="${PERFEX_GPU_BENCH_FILTER:-cuda}" \
    --benchmark_out="${out}/bench.json" --benchmark_out_format=json ${PERFEX_GPU_BENCH_ARGS:-} || status=1
fi
exit $status
