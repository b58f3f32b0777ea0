#!/usr/bin/env bash
# Runs perfex's tests and benchmarks on a GPU machine from binaries built beforehand elsewhere:
# the GPU machine (no network, no CFITSIO or LAPACK) would otherwise spend minutes of its time
# compiling Kokkos and perfex.
#
#   bash scripts/gpu-run.sh --pack [--arch ARCH] [--with-data]   # here, after install-deps
#   bash scripts/gpu-run.sh [--no-tests] [--no-bench] [--out DIR]   # there, in a copy of the
#                                                                   # clone with .gpu-carry/
#
# --pack cross-compiles (no GPU needed): a Serial + CUDA Kokkos + Kokkos Kernels 3.4.1 for ARCH
# (default HOPPER90: H100/H200; AMPERE80 for an A100) from the patched source install-deps
# keeps, cached in ~/.cache/perfex/kokkos-3.4.1-cuda-<arch>; then perfex_tests and
# perfex_bench for CUDA in build-gpu-<arch>/; then fills the carry folder (default .gpu-carry,
# git-ignored) with ARCH, COMMIT and perfex-gpu.tar.xz: bin/ (the two binaries, stripped),
# lib/ (every shared library they load but the C library and the CUDA driver), golden/ (the
# repository's golden data, tests/data, and the PSF they were made with) and, with
# --with-data, data/ (../shared/data: the reference-data tests and the real PSF for the
# benchmarks). About 14 MB, 49 MB with the data; it prints the size.
#
# There it checks the GPU's compute capability (nvidia-smi) against ARCH (a Kokkos built for
# another architecture aborts at start-up), runs the tests, then the benchmarks (so a
# benchmark problem cannot hide the test results), and prints the benchmark table
# (scripts/bench_report.py) and a summary: patches/s of the patch solver and of the 500-fibre
# frame, the frame's time, and how a patch's time splits between spots, normal equations,
# band factor + blocks of H^-1 and the per-fibre eigen stage. Logs, bench.json and report.md
# go to --out (default: $OUT when set, else gpu-out/).
# Environment (GPU side): PERFEX_GPU_TEST_ARGS (Catch2 arguments, e.g. '~[slow]'),
# PERFEX_GPU_BENCH_FILTER (default 'cuda'), PERFEX_GPU_BENCH_ARGS (more benchmark options).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

carry=.gpu-carry arch=HOPPER90 out=${OUT:-} pack=0 with_data=0 run_tests=1 run_bench=1
while [ $# -gt 0 ]; do
  case $1 in
    --pack) pack=1 ;;
    --arch) arch=$2; shift ;;
    --with-data) with_data=1 ;;
    --carry) carry=$2; shift ;;
    --out) out=$2; shift ;;
    --no-tests) run_tests=0 ;;
    --no-bench) run_bench=0 ;;
    *) echo "gpu-run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

# Compute capability of each Kokkos architecture this script knows.
capability() {
  case $1 in
    VOLTA70) echo 7.0 ;; TURING75) echo 7.5 ;; AMPERE80) echo 8.0 ;; AMPERE86) echo 8.6 ;;
    ADA89) echo 8.9 ;; HOPPER90) echo 9.0 ;;
    *) echo "gpu-run.sh: unknown architecture $1" >&2; exit 2 ;;
  esac
}

# ---- --pack: here, where install-deps left the patched Kokkos source ----------------------
if [ "$pack" = 1 ]; then
  # shellcheck source=lib/kokkos.sh
  . scripts/lib/kokkos.sh
  capability "$arch" >/dev/null
  nvcc=$(find_nvcc)
  [ -n "$nvcc" ] || { echo "gpu-run.sh: nvcc not found (PATH, /usr/local/cuda/bin)" >&2; exit 1; }
  export PATH="$(dirname "$nvcc"):${PATH}"  # nvcc_wrapper calls the nvcc on PATH
  deps_dir=${PERFEX_DEPS_DIR:-${HOME}/.cache/perfex}
  patch_file="$root/scripts/patches/kokkos-3.4.1-cuda13.patch"
  [ -d "${deps_dir}/src/kokkos" ] \
    || { echo "gpu-run.sh: no Kokkos source in ${deps_dir}/src: run scripts/install-deps.sh first" >&2; exit 1; }
  patch_kokkos_source "${deps_dir}/src" "${deps_dir}/src-cuda" "$patch_file"
  src="${deps_dir}/src-cuda"
  lower=$(tr '[:upper:]' '[:lower:]' <<<"$arch")
  kokkos="${deps_dir}/kokkos-3.4.1-cuda-${lower}"
  jobs=${JOBS:-$(nproc)}
  build_kokkos "$kokkos" "$src" "patch $(cat "${src}/.perfex-patch") ${arch}" \
    "${src}/kokkos/bin/nvcc_wrapper" "$jobs" \
    -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON "-DKokkos_ARCH_${arch}=ON"

  build="build-gpu-${lower}"
  t0=$SECONDS
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos" \
        -DCMAKE_CXX_COMPILER="${kokkos}/bin/nvcc_wrapper" -DPERFEX_ENABLE_TESTS=ON \
        -DPERFEX_ENABLE_BENCHMARKS=ON -DPERFEX_ENABLE_TOOLS=OFF \
        -DPERFEX_ENABLE_HEADER_CHECK=OFF -DPERFEX_ENABLE_CONSUMER_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$jobs" --target perfex_tests perfex_bench
  echo "== perfex_tests and perfex_bench built for CUDA ${arch} in $((SECONDS - t0)) s"

  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "${stage}/bin" "${stage}/lib"
  for exe in "${build}/tests/perfex_tests" "${build}/bench/perfex_bench"; do
    cp "$exe" "${stage}/bin/"
    strip "${stage}/bin/$(basename "$exe")"
    # Every library the binary loads but the C runtime (the GPU machine's own) and the driver.
    ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' \
      | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libnvidia[^/]*)\.so' \
      | while read -r lib; do cp -L "$lib" "${stage}/lib/"; done
  done
  mkdir -p "${stage}/golden"
  cp tests/data/*.fits python/perfex/gpu_specter/test/data/psf-r0-00051060.fits "${stage}/golden/"
  if [ "$with_data" = 1 ]; then
    [ -d ../shared/data ] || { echo "gpu-run.sh: --with-data: ../shared/data is absent" >&2; exit 1; }
    mkdir -p "${stage}/data" && cp ../shared/data/*.fits* "${stage}/data/"
  fi
  # One compressed archive: about 12 MB (47 MB with the data) where the files are 44 (81).
  rm -rf "$carry" && mkdir -p "$carry"
  tar -C "$stage" -cf - . | xz -T"$jobs" -6 >"${carry}/perfex-gpu.tar.xz"
  echo "$arch" >"${carry}/ARCH"
  git rev-parse --short HEAD >"${carry}/COMMIT" 2>/dev/null || true
  echo "gpu-run.sh: packed $(du -sh "$carry" | cut -f1) into ${carry} (CUDA ${arch})"
  exit 0
fi

# ---- GPU side: only runs what --pack built -------------------------------------------------
for f in ARCH perfex-gpu.tar.xz; do
  [ -e "${carry}/$f" ] \
    || { echo "gpu-run.sh: ${carry}/$f missing: run 'scripts/gpu-run.sh --pack' where the dependencies are" >&2; exit 1; }
done
carry=$(cd "$carry" && pwd)
arch=$(cat "${carry}/ARCH")
out=${out:-gpu-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
xz -dc "${carry}/perfex-gpu.tar.xz" | tar -C "$run" -xf -
# The carried libraries for the carried binaries only (not for nvidia-smi or python3).
libs="${run}/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
if [ -d "${run}/data" ]; then export PERFEX_SHARED_DATA_DIR="${run}/data"; fi
export PERFEX_TEST_DATA_DIR="${run}/golden" PERFEX_TEST_PSF="${run}/golden/psf-r0-00051060.fits"
echo "== binaries of commit $(cat "${carry}/COMMIT" 2>/dev/null || echo '?') for CUDA ${arch}"

command -v nvidia-smi >/dev/null || { echo "gpu-run.sh: nvidia-smi not found: no GPU here?" >&2; exit 1; }
nvidia-smi -L
want=$(capability "$arch")
have=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' ')
if [ "$have" != "$want" ]; then
  echo "gpu-run.sh: the GPU's compute capability is ${have}, the binaries are for ${arch} (${want}):" \
       "pack again with --arch for this GPU" >&2
  exit 1
fi

status=0
if [ "$run_tests" = 1 ]; then
  echo "== tests on the GPU (perfex_tests --backend cuda ${PERFEX_GPU_TEST_ARGS:-})"
  t0=$SECONDS
  # shellcheck disable=SC2086
  LD_LIBRARY_PATH="$libs" "${run}/bin/perfex_tests" --backend cuda ${PERFEX_GPU_TEST_ARGS:-} 2>&1 | tee "${out}/tests.log" \
    || status=1
  echo "== tests: $([ $status = 0 ] && echo passed || echo FAILED) ($((SECONDS - t0)) s)"
fi
if [ "$run_bench" = 1 ]; then
  echo "== benchmarks (filter '${PERFEX_GPU_BENCH_FILTER:-cuda}'); JSON in ${out}/bench.json"
  # shellcheck disable=SC2086
  LD_LIBRARY_PATH="$libs" "${run}/bin/perfex_bench" --benchmark_filter="${PERFEX_GPU_BENCH_FILTER:-cuda}" \
    --benchmark_out="${out}/bench.json" --benchmark_out_format=json ${PERFEX_GPU_BENCH_ARGS:-} \
    >"${out}/bench.log" 2>&1 || { tail -n 30 "${out}/bench.log"; status=1; }
  if [ -s "${out}/bench.json" ] && command -v python3 >/dev/null; then
    python3 scripts/bench_report.py "${out}/bench.json" -o "${out}/report.md" && cat "${out}/report.md"
    python3 - "${out}/bench.json" <<'PY'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
def find(prefix, size=""):
    hits = [r for r in runs if r["name"].startswith(prefix) and size in r["name"]
            and r.get("run_type") != "aggregate"]
    return hits
def seconds(prefix, size=""):
    hits = find(prefix, size)
    return statistics.median(r["real_time"] * unit[r["time_unit"]] for r in hits) if hits else None
def counter(prefix, name, size=""):
    hits = find(prefix, size)
    return statistics.median(r[name] for r in hits if name in r) if hits else None
print("\n== summary (CUDA, medians)")
patch = seconds("extract/patch/cuda", "patches:10")
if patch:
    print(f"patch solver: {10 / patch:,.0f} patches/s (10 patches per launch: {patch * 1e3:.2f} ms)")
frame = seconds("extract/frame/cuda")
if frame:
    print(f"500-fibre frame: {frame:.3f} s, {counter('extract/frame/cuda', 'patches/s'):,.0f} patches/s, "
          f"{counter('extract/frame/cuda', 'solver_launches'):.0f} solver launches")
parts = [("spots (one bundle)", seconds("psf/spots/cuda")),
         ("normal equations, 10 patches", seconds("extract/normal_equations/cuda", "patches:10")),
         ("band factor + blocks of H^-1, x10", seconds("linalg/band_cholesky_inverse_blocks/portable/cuda", "batch:10")),
         ("per-fibre eigen C^-1/2, x50", seconds("linalg/inverse_sqrt/portable/cuda", "batch:50"))]
for name, t in parts:
    if t is not None:
        print(f"  {name:36s} {t * 1e3:9.3f} ms")
PY
  fi
fi
exit $status
