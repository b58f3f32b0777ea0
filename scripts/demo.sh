#!/usr/bin/env bash
# The project's main job: installs what it needs (first run only: `install-deps.sh demo`, without
# the test command's extra packages and CUDA Kokkos), builds the command-line tools (Release,
# in build/), and runs perfex-demo: a synthetic DESI-like exposure is simulated
# with known spectra, extracted with the perfex-extract code path, and the extracted frame is
# checked against the truth (pull RMS 1.00 +- 0.05; non-zero exit status otherwise). Where the
# Python package is built (pybind11, matplotlib), a quick-look picture of the frame is written
# next to it (frame.png: a few spectra with errors, chi2pix and the masked bins).
#
#   bash scripts/demo.sh [perfex-demo options]     e.g. --nspec 100 --backend serial --threads 4
#
# Environment: PERFEX_BUILD_DIR (default build), PERFEX_JOBS (default: number of cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
kokkos_prefix=$(bash scripts/install-deps.sh demo | sed -n 's/^KOKKOS_PREFIX=//p' | tail -n 1)
if [ -z "${kokkos_prefix}" ]; then
  echo "demo.sh: scripts/install-deps.sh did not report a Kokkos prefix" >&2
  exit 1
fi
build=${PERFEX_BUILD_DIR:-build}
jobs=${PERFEX_JOBS:-$(nproc)}

echo "== perfex demo: building the tools in ${build} (Kokkos at ${kokkos_prefix})" >&2
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="${kokkos_prefix}" >/dev/null
cmake --build "$build" -j "$jobs" --target perfex-demo perfex-extract
python=""
targets=$(cmake --build "$build" --target help)
if grep -q perfex_python <<<"$targets"; then
  cmake --build "$build" -j "$jobs" --target perfex_python
  python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
fi
if [ ! -x "$build/tools/perfex-demo" ]; then
  echo "demo.sh: perfex-demo was not built (CFITSIO missing?)" >&2
  exit 1
fi

echo "== perfex demo: running perfex-demo $*" >&2
export OMP_PROC_BIND=${OMP_PROC_BIND:-false}
status=0
start=$(date +%s)
"$build/tools/perfex-demo" "$@" || status=$?

outdir=perfex-demo-out
for ((i = 1; i <= $#; ++i)); do
  case "${!i}" in
    --outdir=*) outdir=${!i#--outdir=} ;;
    --outdir) j=$((i + 1)); outdir=${!j:-} ;;
  esac
done
if [ -n "$python" ] && [ -f "$outdir/frame.fits" ] && [ "$(stat -c %Y "$outdir/frame.fits")" -ge "$start" ] &&
   "$python" -c "import matplotlib" 2>/dev/null; then
  echo "== perfex demo: quick-look picture $outdir/frame.png" >&2
  PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" "$python" -m perfex.plot "$outdir/frame.fits" \
    -o "$outdir/frame.png" >/dev/null || status=$?
fi
exit $status
