#!/usr/bin/env bash
# The project's main job: installs the dependencies (first run only), builds the command-line
# tools (Release, in build/), and runs perfex-demo: a synthetic DESI-like exposure is simulated
# with known spectra, extracted with the perfex-extract code path, and the extracted frame is
# checked against the truth (pull RMS 1.00 +- 0.05; non-zero exit status otherwise).
#
#   bash scripts/demo.sh [perfex-demo options]     e.g. --nspec 100 --backend serial --threads 4
#
# Environment: PERFEX_BUILD_DIR (default build), PERFEX_JOBS (default: number of cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
kokkos_prefix=$(bash scripts/install-deps.sh | sed -n 's/^KOKKOS_PREFIX=//p' | tail -n 1)
if [ -z "${kokkos_prefix}" ]; then
  echo "demo.sh: scripts/install-deps.sh did not report a Kokkos prefix" >&2
  exit 1
fi
build=${PERFEX_BUILD_DIR:-build}
jobs=${PERFEX_JOBS:-$(nproc)}

echo "== perfex demo: building the tools in ${build} (Kokkos at ${kokkos_prefix})" >&2
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="${kokkos_prefix}" >/dev/null
cmake --build "$build" -j "$jobs" --target perfex-demo perfex-extract
if [ ! -x "$build/tools/perfex-demo" ]; then
  echo "demo.sh: perfex-demo was not built (CFITSIO missing?)" >&2
  exit 1
fi

echo "== perfex demo: running perfex-demo $*" >&2
export OMP_PROC_BIND=${OMP_PROC_BIND:-false}
exec "$build/tools/perfex-demo" "$@"
