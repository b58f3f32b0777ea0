#!/usr/bin/env bash
# The Python package on every Python this machine has (3.10 to 3.13: Debian's python3 and
# pyenv's builds under $(pyenv root)/versions, else pythonX.Y on PATH), as a user installs it:
# for each, a clean virtual environment and `pip install .` from one copy of the source tree
# (the same copy for every Python in turn; build isolation, setuptools and pybind11 from the
# package index; Kokkos from Kokkos_ROOT), then
#   - the installed package imported from the environment, extracting with its own data
#     (python/tests/installed_check.py);
#   - a smoke extraction: the frames of tests/test_numpy_majors.py (the reference bundle clean
#     and masked through the API, the masked one through the gpu_specter drop-in, a 500-fibre
#     frame), bitwise identical to those of Debian's python3 with its numpy 1.x (sha256 of
#     every array);
#   - the drop-in's tests (test_gpu_specter.py), one MPI case on 2 ranks
#     (mpi4py from the package index: skipped with a message where it does not install), and
#     on 3.13, DESI's Python (below), desispec's test_extract.py with both drop-ins;
#   - after the last install, every environment still imports its own extension.
# A Python that is missing is skipped with a message; any failure fails the script.
#
#   scripts/test-pythons.sh WORK [BUILD]
#
# WORK: emptied first. BUILD: a build tree whose package (BUILD/python) was built for Debian's
# python3: the reference frames come from it (CTest's suites run it); without BUILD, the
# reference is pip-installed too, in an environment that sees Debian's numpy.
# numpy: desispec's pin (< 2.3) on 3.10, the newest 2.x elsewhere. desispec 0.70.0 and desiutil
# (python/requirements/dev.txt's pins) are installed on 3.13, for desispec's test_extract.py
# with both drop-ins (CTest's python.api runs it on the build's Python; skipped with a message
# where perfex.specter does not import).
# Environment: PERFEX_PYTHONS (default "3.10 3.11 3.12 3.13"), PERFEX_PYTHONS_FULL (versions
# that run the whole Python suite instead: e.g. "3.13"), Kokkos_ROOT (setup.py),
# PERFEX_SHARED_DATA, PERFEX_CLIENTS, PERFEX_BUILD_JOBS. pip's cache keeps the wheels it downloads or builds, so later runs install without building them again.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(realpath -m "$1")
build=${2:+$(cd "$2" && pwd)}
versions=${PERFEX_PYTHONS:-3.10 3.11 3.12 3.13}
full=" ${PERFEX_PYTHONS_FULL:-} "
desispec_versions=" 3.13 "
export PERFEX_SHARED_DATA=${PERFEX_SHARED_DATA:-$(cd "$root/.." && pwd)/shared/data}
export PERFEX_CLIENTS=${PERFEX_CLIENTS:-$(cd "$root/.." && pwd)/clients}
export OMP_NUM_THREADS=2 OMP_PROC_BIND=false PYTHONDONTWRITEBYTECODE=1
export PERFEX_BUILD_JOBS=${PERFEX_BUILD_JOBS:-$(nproc)}
unset PYTHONPATH
[ -z "$build" ] || [ ! -x "$build/tools/perfex-extract" ] || export PERFEX_EXTRACT_EXE="$build/tools/perfex-extract"
tests=(test_gpu_specter.py "test_mpi.py::test_library_ranks_bitwise[2]"
       test_clients.py::test_desispec_test_extract_with_drop_ins)
pip_args=(--quiet --disable-pip-version-check)
t0=$SECONDS
# shellcheck source=lib/pythons.sh
. "$root/scripts/lib/pythons.sh"

say() { echo "== test-pythons: $*"; }
rm -rf "$work"
mkdir -p "$work/src" "$work/logs"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - --) \
  | tar -xf - -C "$work/src"
tests_dir=$work/src/python/tests

# ---- the reference: Debian's python3 with its numpy 1.x ------------------------------------
debian_version=$(/usr/bin/python3 -c 'import sys; print("{}.{}".format(*sys.version_info))')
reference=$work/frames-reference.json
if [ ! -f "$PERFEX_SHARED_DATA/psf-r0-00051060.fits" ]; then
  say "the reference data is not in $PERFEX_SHARED_DATA (PERFEX_SHARED_DATA): frames not compared"
  reference=""
  reference_python=""
else
  say "reference frames: the source build under Debian's python3"
  reference_digests "$work" "$work/src" "$build" "$reference"
  say "reference frames: $(describe_python "$reference_python"), $reference_what"
fi

# ---- each Python ----------------------------------------------------------------------------
passed=() failed=() skipped=() installed=()
for version in $versions; do
  python=$(find_python "$version") || {
    say "SKIPPED Python $version: not found (/usr/bin/python$version, $pythons_pyenv_root/versions/$version.*, PATH)"
    skipped+=("$version (not found)")
    continue
  }
  t1=$SECONDS
  if [ "$version" = "$debian_version" ] && [ -n "$reference_python" ]; then
    python=$reference_python
    say "Python $version: Debian's python3, the reference"
    ok=1
  else
    venv=$work/venv-$version
    case $version in
      3.10) numpy="numpy>=2.2,<2.3" ;;  # desispec's pin (numba)
      *) numpy="numpy>=2" ;;
    esac
    say "Python $version ($python): a clean virtual environment, pip install . ($numpy)"
    "$python" -m venv "$venv"
    log=$work/logs/pip-$version.log
    if ! "$venv/bin/pip" install "${pip_args[@]}" "$work/src[specter]" "$numpy" pytest >"$log" 2>&1; then
      tail -n 40 "$log"
      say "FAILED Python $version: pip install . (log: $log)"
      failed+=("$version (pip install)")
      continue
    fi
    installed+=("$venv")
    (cd "$work" && "$venv/bin/python" "$tests_dir/installed_check.py" "pip install . on $version" "$venv") \
      || { say "FAILED Python $version: the installed package (python/tests/installed_check.py)"; failed+=("$version (installed)"); continue; }
    "$venv/bin/pip" install "${pip_args[@]}" mpi4py >>"$log" 2>&1 \
      || say "Python $version: mpi4py did not install from the package index: its MPI case skips"
    if [[ $desispec_versions == *" $version "* ]]; then
      if specter_error=$("$venv/bin/python" -c "import perfex.specter" 2>&1); then
        mapfile -t desi < <(grep -E '^(desispec|desiutil)==' "$root/python/requirements/dev.txt")
        "$venv/bin/pip" install "${pip_args[@]}" "${desi[@]}" "$numpy" >>"$log" 2>&1 \
          || say "Python $version: ${desi[*]} did not install: desispec's test_extract.py skips"
      else
        say "Python $version: desispec's test_extract.py with both drop-ins skipped: perfex.specter" \
            "does not import ($(tail -n 1 <<<"$specter_error"))"
      fi
    fi
    python=$venv/bin/python
    say "Python $version: $(describe_python "$python")"
    ok=1
    selection=("${tests[@]}")
    [[ $full != *" $version "* ]] || selection=(.)
    (cd "$tests_dir" && "$python" -m pytest -q -rs -p no:cacheprovider "${selection[@]}") || ok=0
  fi
  if [ -n "$reference" ] && [ "$python" != "$reference_python" ]; then
    if frame_digests "$python" "$tests_dir" "$work/frames-$version.json" &&
       result=$(compare_digests "$reference" "$work/frames-$version.json" 2>&1); then
      say "Python $version: $result"
    else
      say "FAILED Python $version: ${result:-the smoke extraction failed}"
      ok=0
    fi
  fi
  if [ "$ok" = 1 ]; then passed+=("$version"); else failed+=("$version"); fi
  say "Python $version: $([ "$ok" = 1 ] && echo passed || echo FAILED) ($((SECONDS - t1)) s)"
done

# ---- one copy, several Pythons in turn: each environment imports its own extension ---------
for venv in "${installed[@]}"; do
  (cd "$work" && "$venv/bin/python" -c '
import sys, sysconfig, perfex._perfex as m
assert m.__file__.startswith(sys.prefix) and m.__file__.endswith(sysconfig.get_config_var("EXT_SUFFIX")), m.__file__
perfex = sys.modules["perfex"]; perfex.initialize(1)') \
    || { say "FAILED: $venv no longer imports its extension after the later installs"; failed+=("$venv"); }
done
[ ${#installed[@]} -lt 2 ] || say "one source copy installed for ${#installed[@]} Pythons in turn" \
  "(build folders: $(ls "$work/src/build-pip" | grep -v setuptools | tr '\n' ' ')): each imports its own extension"

say "passed: ${passed[*]:-none}; skipped: ${skipped[*]:-none}; failed: ${failed[*]:-none} ($((SECONDS - t0)) s)"
[ ${#failed[@]} -eq 0 ]
