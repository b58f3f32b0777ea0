#!/usr/bin/env bash
# The benchmark command: builds perfex_bench (Release) if needed, runs the suite on every
# enabled backend — Serial, OpenMP with 1 thread and with all threads — writes the JSON of
# each run and prints a markdown table comparing backends and paths (also written to
# <build>/bench/report.md).
#
#   bash scripts/bench.sh [--quick | --full] [--threads N] [--filter REGEX] [--out DIR]
#
#   (default)     every stage and its linalg parts at patch sizes, 5 repetitions
#   --quick       the pipeline stages only (no linalg parts, no frame), 3 short repetitions
#   --full        the default set plus the 500-fibre frame (minutes per backend)
#   --threads N   the "all threads" OpenMP run uses N threads (default: nproc)
#   --filter RE   only benchmarks whose stage matches RE (e.g. 'extract/bundle')
#   --out DIR     where the JSON files and report.md go (default: <build>/bench)
# Environment: PERFEX_BUILD_DIR (default build), Kokkos_ROOT (else scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

mode=standard
threads=$(nproc)
filter=
build=${PERFEX_BUILD_DIR:-build}
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --threads) threads=$2; shift ;;
    --filter) filter=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-$build/bench}

# ---- build ---------------------------------------------------------------------------------
if [ -n "${Kokkos_ROOT:-}" ]; then
  kokkos_prefix=$Kokkos_ROOT
else
  kokkos_prefix=$(bash scripts/install-deps.sh | sed -n 's/^KOKKOS_PREFIX=//p' | tail -n 1)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="${kokkos_prefix}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target perfex_bench
bench="$build/bench/perfex_bench"

# ---- which benchmarks ----------------------------------------------------------------------
# Names are <stage>[/<path>]/<backend>[/<args>]; a run selects stages and backends.
case "$mode" in
  quick) stages='peak/fma|psf/spots|extract/(normal_equations|patch|bundle)|linalg/(band_cholesky_inverse_blocks|inverse_sqrt)/[a-z]+'
         run_args=(--benchmark_repetitions=3 --benchmark_min_time=0.05) ;;
  standard) stages='peak/fma|psf/spots|extract/(normal_equations|patch|bundle)|linalg/[a-z_]+/[a-z]+'
         run_args=(--benchmark_repetitions=5 --benchmark_min_time=0.2) ;;
  full) stages='peak/fma|psf/spots|extract/(normal_equations|patch|bundle|frame)|linalg/[a-z_]+/[a-z]+'
         run_args=(--benchmark_repetitions=5 --benchmark_min_time=0.2) ;;
esac
[ -n "$filter" ] && stages="(${filter})[a-z_/]*"

mkdir -p "$out"
rm -f "$out"/results-*.json
# LAPACK runs one matrix per thread: a threaded BLAS underneath would oversubscribe the cores.
export OPENBLAS_NUM_THREADS=1 OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}

run() {  # run <OMP threads> <backend regex>
  local n=$1 backends=$2
  echo "== perfex_bench: OMP_NUM_THREADS=$n, backends $backends, $mode set" >&2
  OMP_NUM_THREADS=$n "$bench" --benchmark_filter="^(${stages})/(${backends})(/|$)" "${run_args[@]}" \
    --benchmark_out="$out/results-threads$n.json" --benchmark_out_format=json \
    --benchmark_display_aggregates_only=true
}
run 1 '[a-z]+'
if [ "$threads" -gt 1 ]; then run "$threads" openmp; fi

python3 scripts/bench_report.py "$out"/results-*.json -o "$out/report.md"
echo "== report written to $out/report.md (JSON: $out/results-threads*.json)" >&2
