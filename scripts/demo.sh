#!/usr/bin/env bash
# The project's main job: installs what it needs (first run only: `install-deps.sh demo`, without
# the test command's extra packages and CUDA Kokkos), builds the command-line tools (Release,
# in build/), and runs perfex-demo: a synthetic DESI-like exposure is simulated
# with known spectra, extracted with the perfex-extract code path, and the extracted frame is
# checked against the truth (pull RMS 1.00 +- 0.05; non-zero exit status otherwise). Where the
# Python package is built (pybind11, matplotlib), a quick-look picture of the frame is written
# next to it (frame.png: the pulls' histogram beside a few spectra with errors, chi2pix and the
# masked bins). The set-up's and the build's output go to a log file (named on the first line);
# the demo's own lines, its result and what to try next are printed.
#
#   bash scripts/demo.sh [perfex-demo options]     e.g. --nspec 100 --backend serial --threads 4
#
# Environment: PERFEX_BUILD_DIR (default build), PERFEX_JOBS (default: number of cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${PERFEX_BUILD_DIR:-build}
jobs=${PERFEX_JOBS:-$(nproc)}
mkdir -p "$build"
buildlog=$build/demo-build.log
: >"$buildlog"
echo "== perfex demo: set-up and build (their output: $buildlog)" >&2
# The log's last lines when a step fails: the error is among them.
failed() {
  echo "demo.sh: $1 failed; the end of $buildlog:" >&2
  tail -n 30 "$buildlog" >&2
  exit 1
}
bash scripts/install-deps.sh demo >>"$buildlog" 2>&1 || failed "scripts/install-deps.sh demo"
kokkos_prefix=$(sed -n 's/^KOKKOS_PREFIX=//p' "$buildlog" | tail -n 1)
if [ -z "${kokkos_prefix}" ]; then
  echo "demo.sh: scripts/install-deps.sh did not report a Kokkos prefix (see $buildlog)" >&2
  exit 1
fi
{
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="${kokkos_prefix}" &&
    cmake --build "$build" -j "$jobs" --target perfex-demo perfex-extract
} >>"$buildlog" 2>&1 || failed "building the tools in $build"
python=""
if grep -q perfex_python <<<"$(cmake --build "$build" --target help)"; then
  cmake --build "$build" -j "$jobs" --target perfex_python >>"$buildlog" 2>&1 ||
    failed "building the Python package in $build"
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
  echo "== perfex demo: quick-look picture $outdir/frame.png (the pulls beside the spectra)" >&2
  PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" "$python" -m perfex.plot "$outdir/frame.fits" \
    --pulls "$outdir/pulls.npy" -o "$outdir/frame.png" >/dev/null || status=$?
fi
if [ $status -eq 0 ]; then
  echo "== perfex demo: PASS: the extracted spectra match the truth (the pull RMS above); files in $outdir"
else
  echo "== perfex demo: FAIL (exit status $status): see the lines above"
fi
cat <<EOF
Next:
  look at $outdir/frame.png (the spectra, chi2pix, the masked bins and the pulls' histogram)
  extract a frame of your own:  $build/tools/perfex-extract -i preproc.fits -p psf.fits -o frame.fits
  from Python:                  PYTHONPATH=$build/python python3 -c 'import perfex; help(perfex.extract_frame)'
  run the tests:                bash scripts/test.sh   (docs/development.md)
  the guides:                   docs/cli.md, docs/python.md, docs/library.md, docs/hpc.md
EOF
exit $status
