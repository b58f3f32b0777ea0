#!/usr/bin/env bash
# Whole-process benchmarks: perfex-extract as a user runs it, timed as a process (wall time, CPU
# time and peak RSS from /usr/bin/time), in alternated runs so that a shared machine's load falls
# on both sides alike; the load average is printed beside every run.
#
#   bash scripts/bench_process.sh [--pairs N] [--before BUILD] [--gpu-specter PYTHON]
#                                 [--bundle] [--frame] [--out DIR]
#
#   --bundle            the 25-fibre bundle (fibres 0-24, 5760-6760 A, one thread) on the
#                       shared simulated image ../shared/data/sim-r0-b0-1.fits.gz, unpacked once
#                       (so that perfex reads only the pixels it needs, as from a preproc file)
#                       (default)
#   --frame             the 500-fibre r frame (5760-7620 A, 2 threads) on a simulated image of
#                       500 fibres through the shared PSF, made once by perfex-bench-image
#   --pairs N           runs of each side (default 5)
#   --before BUILD      a build folder of other code (its tools/perfex-extract) run in turn with
#                       this one: before/after per run and their ratio
#   --gpu-specter PY    a Python with gpu_specter's dependencies (numpy, scipy, astropy, numba,
#                       fitsio): gpu_specter's CPU path (bin/spex of $PERFEX_CLIENTS/gpu_specter,
#                       default ../clients) on the bundle, one thread, in turn with perfex
#   --out DIR           frames, the frame image and the log (default <build>/bench/process)
# Environment: PERFEX_BUILD_DIR (default build), Kokkos_ROOT (else scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

pairs=5 before= gs_python= bundle=0 frame=0 out=
build=${PERFEX_BUILD_DIR:-build}
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) pairs=$2; shift ;;
    --before) before=$2; shift ;;
    --gpu-specter) gs_python=$2; shift ;;
    --bundle) bundle=1 ;;
    --frame) frame=1 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "bench_process.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$bundle$frame" = 00 ] && bundle=1
out=${out:-$build/bench/process}
data=$(cd "$root/.." && pwd)/shared/data
clients=${PERFEX_CLIENTS:-$(cd "$root/.." && pwd)/clients}
psf=$data/psf-r0-00051060.fits
for f in "$psf" "$data/sim-r0-b0-1.fits.gz"; do
  [ -f "$f" ] || { echo "bench_process.sh: $f not found (the project's shared data)" >&2; exit 2; }
done
if [ -n "$before" ] && [ ! -x "$before/tools/perfex-extract" ]; then
  echo "bench_process.sh: --before $before: no tools/perfex-extract there" >&2; exit 2
fi
if [ -n "$gs_python" ] && [ ! -f "$clients/gpu_specter/bin/spex" ]; then
  echo "bench_process.sh: --gpu-specter: $clients/gpu_specter/bin/spex not found (PERFEX_CLIENTS)" >&2
  exit 2
fi

# ---- build ---------------------------------------------------------------------------------
if [ -n "${Kokkos_ROOT:-}" ]; then
  kokkos_prefix=$Kokkos_ROOT
else
  kokkos_prefix=$(bash scripts/install-deps.sh | sed -n 's/^KOKKOS_PREFIX=//p' | tail -n 1)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="${kokkos_prefix}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target perfex-extract perfex-bench-image
mkdir -p "$out"
log=$out/process.log
: >"$log"

# run <label> <command...>: one timed process; appends "label seconds peak_KB load cpu_seconds"
# to the log (cpu: user + system time of the process and its threads, which a loaded machine
# stretches less than the wall time).
run() {
  local label=$1
  shift
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "%e %M %U %S" -o "$out/time.txt" "$@" >"$out/last-run.txt" 2>&1 || {
    echo "bench_process.sh: $label failed:" >&2
    tail -n 20 "$out/last-run.txt" >&2
    exit 1
  }
  read -r secs kb user sys <"$out/time.txt"
  echo "$label $secs $kb $load $(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')" | tee -a "$log" >&2
}

# compare <tag> <args...>: perfex-extract with these arguments, this build and --before in turn.
compare() {
  local tag=$1
  shift
  for i in $(seq "$pairs"); do
    run "$tag/after" "$build/tools/perfex-extract" "$@" -o "$out/$tag-after.fits"
    if [ -n "$before" ]; then
      run "$tag/before" "$before/tools/perfex-extract" "$@" -o "$out/$tag-before.fits"
    fi
    if [ "$tag" = bundle ] && [ -n "$gs_python" ]; then
      rm -f "$out/bundle-gpu_specter.fits"
      run "bundle/gpu_specter" env OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        MKL_NUM_THREADS=1 PYTHONPATH="$clients/gpu_specter/py" "$gs_python" \
        "$clients/gpu_specter/bin/spex" -i "$bundle_image" -p "$psf" \
        -o "$out/bundle-gpu_specter.fits" -w 5760,6760,0.8 -s 0 -n 25
    fi
  done
}

export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
echo "== $(uname -n), $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(date -u +%FT%TZ)" | tee -a "$log" >&2
if [ "$bundle" = 1 ]; then
  bundle_image=$out/sim-r0-b0-1.fits
  [ -f "$bundle_image" ] || gunzip -c "$data/sim-r0-b0-1.fits.gz" >"$bundle_image"
  compare bundle -i "$bundle_image" -p "$psf" -w 5760,6760,0.8 -s 0 -n 25 --threads 1
fi
if [ "$frame" = 1 ]; then
  image=$out/frame-500-image.fits
  [ -f "$image" ] || "$build/bench/perfex-bench-image" "$psf" "$image" 5760 7620 0 500 >&2
  compare frame -i "$image" -p "$psf" -w 5760,7620,0.8 -s 0 -n 500 --threads 2
fi

# Medians per label, and per pair the ratios against this build.
python3 - "$log" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    if line.startswith("=="):
        continue
    label, secs, kb, load, cpu = line.split()
    runs.setdefault(label, []).append((float(secs), int(kb), float(load), float(cpu)))
print("| run | median wall | range | median CPU | peak RSS | load (1 min) | runs |")
print("|---|---:|---:|---:|---:|---:|---:|")
for label, r in runs.items():
    s = [x[0] for x in r]
    print(f"| {label} | {statistics.median(s):.2f} s | {min(s):.2f}-{max(s):.2f} s | "
          f"{statistics.median(x[3] for x in r):.2f} s | "
          f"{max(x[1] for x in r) / 1024:.0f} MB | {min(x[2] for x in r):.2f}-{max(x[2] for x in r):.2f} | {len(r)} |")
for tag in ("bundle", "frame"):
    for what, i in (("wall", 0), ("CPU", 3)):
        after = [x[i] for x in runs.get(f"{tag}/after", [])]
        for other in ("before", "gpu_specter"):
            o = [x[i] for x in runs.get(f"{tag}/{other}", [])]
            if after and o:
                ratios = [b / a for a, b in zip(after, o)]
                print(f"{tag}: {other} / after ({what}), pair by pair: " + ", ".join(f"{x:.2f}" for x in ratios)
                      + f" (median {statistics.median(ratios):.2f})")
EOF
