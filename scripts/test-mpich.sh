#!/usr/bin/env bash
# The MPI cases under MPICH, the MPI of Cray MPICH (NERSC's), beside the OpenMPI the rest of the
# test command uses: Debian's mpich and libmpich-dev (installed when missing; their mpirun and
# mpicc alternatives stay OpenMPI's, which Debian ranks higher), mpi4py built from its source
# on the package index against MPICH (`MPICC=mpicc.mpich pip install --no-binary=mpi4py
# mpi4py`, as NERSC builds it against cray-mpich with `MPICC="cc -shared"`) in a virtual
# environment of its own (numpy, pytest and astropy from the index, no system site packages),
# then
#   - mpi4py's library must say MPICH, and 2 ranks of mpirun.mpich must see each other;
#   - the MPI pytest cases below, launched by mpirun.mpich (PERFEX_MPIRUN, read by
#     python/tests/conftest.py's mpi_launcher), among them the frame of 2 ranks bitwise that
#     of one process (test_mpi.py::test_library_ranks_bitwise[2]), which must pass.
#
#   scripts/test-mpich.sh WORK [BUILD]
#
# WORK: emptied first. BUILD: a build tree whose package (BUILD/python) was built for Debian's
# python3: the environment imports it from there (PYTHONPATH); without BUILD, or when that
# package does not import, the source tree is pip-installed into the environment (Kokkos from
# Kokkos_ROOT, as scripts/test-pythons.sh does).
# mpi4py's wheel is built once per MPICH version and Python, the environment made once, both in
# PERFEX_DEPS_DIR (default ~/.cache/perfex): building mpi4py took 4.5-9 minutes on 2 busy cores.
# Exits 77 (after a message) where MPICH cannot be installed: not root and no sudo, or apt-get
# fails.
# Environment: PERFEX_MPICH_TESTS (pytest's selection, relative to python/tests; default below),
# PERFEX_SHARED_DATA, PERFEX_CLIENTS, PERFEX_DEPS_DIR, Kokkos_ROOT, PERFEX_BUILD_JOBS.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(realpath -m "$1")
build=${2:+$(cd "$2" && pwd)}
deps_dir=${PERFEX_DEPS_DIR:-${HOME}/.cache/perfex}
export PERFEX_SHARED_DATA=${PERFEX_SHARED_DATA:-$(cd "$root/.." && pwd)/shared/data}
export PERFEX_CLIENTS=${PERFEX_CLIENTS:-$(cd "$root/.." && pwd)/clients}
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false PYTHONDONTWRITEBYTECODE=1
export PERFEX_BUILD_JOBS=${PERFEX_BUILD_JOBS:-$(nproc)}
unset PYTHONPATH PERFEX_MPIRUN
# The cases: every MPI case of test_mpi.py (frames of 2-5 and 16 ranks bitwise one process's,
# the command line over ranks, exposures over rank groups, errors that cross ranks, waiting
# ranks that sleep), and the gpu_specter drop-in's of test_spex.py and test_reliability.py.
# Not test_clients.py's (desispec and the client checkouts) nor test_profiling.py's (CTest's
# region recorder): OpenMPI runs those.
default_tests="test_mpi.py test_spex.py test_reliability.py -m mpi"
read -ra tests <<<"${PERFEX_MPICH_TESTS:-$default_tests}"
bitwise="test_mpi.py::test_library_ranks_bitwise[2]"
pip_args=(--quiet --disable-pip-version-check)
t0=$SECONDS
say() { echo "== test-mpich: $*"; }
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)
rm -rf "$work"
mkdir -p "$work"

# ---- MPICH from Debian, beside OpenMPI ----------------------------------------------------
alternatives() { echo "mpirun -> $(readlink -f /usr/bin/mpirun 2>/dev/null || echo none)," \
                      "mpicc -> $(readlink -f /usr/bin/mpicc 2>/dev/null || echo none)"; }
before=$(alternatives)
if ! command -v mpirun.mpich >/dev/null || ! command -v mpicc.mpich >/dev/null; then
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null || ! sudo -n true 2>/dev/null; then
      say "SKIPPED: MPICH is not installed, and installing it needs root or sudo"
      exit 77
    fi
    sudo_cmd=(sudo -n)
  fi
  say "installing Debian's mpich and libmpich-dev"
  if ! { "${sudo_cmd[@]}" apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
           --no-install-recommends mpich libmpich-dev; } >"$work/apt.log" 2>&1; then
    tail -n 20 "$work/apt.log"
    say "SKIPPED: apt-get could not install mpich and libmpich-dev (log: $work/apt.log)"
    exit 77
  fi
  say "before MPICH: $before; after: $(alternatives)"
fi
mpich_version=$(dpkg-query -W -f='${Version}' libmpich-dev 2>/dev/null || mpichversion 2>/dev/null | head -n 1)

# ---- mpi4py built against MPICH, in an environment of its own ----------------------------
# mpi4py's wheel is built once per MPICH and Python (DEPS/mpi4py-mpich-<hash>), the environment
# once per that and its package list (DEPS/venv-mpich-<hash>), so a change to the list does not
# build mpi4py again. astropy: the cases that read the reference frames and the drop-in's PSFs.
packages=("numpy>=2" pytest astropy)
abi_key=$({ echo "$mpich_version"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-12)
wheels=$deps_dir/mpi4py-mpich-$abi_key
key=$(echo "$abi_key ${packages[*]}" | sha256sum | cut -c1-12)
venv=$deps_dir/venv-mpich-$key
if [ ! -f "$venv/.perfex-complete" ]; then
  t1=$SECONDS
  say "making $venv: ${packages[*]} from the package index, mpi4py built against MPICH" \
      "(log: $venv.log)"
  rm -rf "$venv"
  # --no-cache-dir: pip's cache would hand this MPICH build of mpi4py to any later source build
  # of mpi4py, whatever its MPI (NERSC's recipe says so too); the wheel is kept in $wheels.
  if ! { "$python" -m venv "$venv" &&
         "$venv/bin/pip" install --disable-pip-version-check "${packages[@]}" &&
         { ls "$wheels"/mpi4py-*.whl >/dev/null 2>&1 ||
           MPICC=mpicc.mpich "$venv/bin/pip" wheel --disable-pip-version-check --no-cache-dir \
             --no-deps --no-binary=mpi4py -w "$wheels" mpi4py; } &&
         "$venv/bin/pip" install --disable-pip-version-check --no-index --find-links "$wheels" mpi4py
       } >"$venv.log" 2>&1; then
    tail -n 30 "$venv.log"
    say "FAILED: could not make the environment (log: $venv.log)"
    rm -rf "$venv"
    exit 1
  fi
  echo "$key" >"$venv/.perfex-complete"
  say "environment ready in $((SECONDS - t1)) s"
fi
vpython=$venv/bin/python
library=$("$vpython" -c 'import mpi4py; mpi4py.rc.initialize = False
from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])')
[[ $library == *MPICH* ]] || { say "FAILED: mpi4py in $venv is built against '$library', not MPICH"; exit 1; }
say "mpi4py $("$vpython" -c 'import mpi4py; print(mpi4py.__version__)'): $library"

# ---- perfex: the build tree's package, else pip install . ---------------------------------
if [ -n "$build" ] && PYTHONPATH=$build/python "$vpython" -c 'import sys, perfex
assert perfex.__file__.startswith(sys.argv[1]), perfex.__file__
perfex.initialize(1)' "$build/python" >"$work/import.log" 2>&1; then
  export PYTHONPATH=$build/python
  [ ! -x "$build/tools/perfex-extract" ] || export PERFEX_EXTRACT_EXE="$build/tools/perfex-extract"
  say "perfex: the build tree's package ($build/python)"
else
  [ -z "$build" ] || { cat "$work/import.log"; say "the build tree's package does not import here: pip install ."; }
  mkdir -p "$work/src"
  (cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - --) \
    | tar -xf - -C "$work/src"
  t1=$SECONDS
  # Into WORK/site, not the environment, which later runs reuse.
  say "perfex: pip install . into $work/site (log: $work/pip.log)"
  "$venv/bin/pip" install "${pip_args[@]}" --no-deps --target "$work/site" "$work/src" >"$work/pip.log" 2>&1 \
    || { tail -n 40 "$work/pip.log"; say "FAILED: pip install ."; exit 1; }
  export PYTHONPATH=$work/site
  say "perfex installed in $((SECONDS - t1)) s"
fi

# ---- the MPI cases, launched by mpirun.mpich ---------------------------------------------
# Rank 0 prints the ranks that took part in a sum over COMM_WORLD.
size=$(cd "$work" && mpirun.mpich -n 2 "$vpython" -c 'from mpi4py import MPI
import perfex
n = MPI.COMM_WORLD.allreduce(1)
if MPI.COMM_WORLD.rank == 0: print(n)')
[ "$size" = 2 ] || { say "FAILED: 2 ranks of mpirun.mpich do not see each other (got: $size)"; exit 1; }
export PERFEX_MPIRUN=mpirun.mpich
t1=$SECONDS
say "pytest ${tests[*]} (PERFEX_MPIRUN=$PERFEX_MPIRUN)"
ok=1
# --rootdir=.: the selection's test ids are relative to python/tests.
(cd "$root/python/tests" && "$vpython" -m pytest -q -rs -p no:cacheprovider --rootdir=. \
   --junitxml="$work/junit.xml" "${tests[@]}") || ok=0
# The 2-rank frame against one process's must have run, not been skipped.
result=$("$vpython" - "$work/junit.xml" "$bitwise" <<'PY'
import sys, xml.etree.ElementTree as ET
name = sys.argv[2].split("::")[-1]
cases = [c for c in ET.parse(sys.argv[1]).iter("testcase") if c.get("name") == name]
if not cases:
    print("not run")
elif any(c.find(k) is not None for c in cases for k in ("failure", "error")):
    print("FAILED")
elif cases[0].find("skipped") is not None:
    print("skipped: " + cases[0].find("skipped").get("message", ""))
else:
    print("passed")
PY
)
say "the frame of 2 MPICH ranks bitwise one process's ($bitwise): $result"
# Only the reference data's absence may skip it (as in scripts/test-pythons.sh).
[ "$result" = passed ] || [[ $result == "skipped: reference data"* ]] || ok=0
[ "$before" = "$(alternatives)" ] || say "note: the system's alternatives changed: $before; now $(alternatives)"
say "$([ "$ok" = 1 ] && echo passed || echo FAILED): pytest $((SECONDS - t1)) s, the stage $((SECONDS - t0)) s"
[ "$ok" = 1 ]
