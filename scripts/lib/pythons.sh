# Sourced by test-pythons.sh and build-wheel.sh: the machine's Pythons, and the frames an
# installed perfex extracts under each, compared bitwise (python/tests/test_numpy_majors.py's
# frames: the reference bundle clean and masked through the API, the masked one through the
# gpu_specter drop-in, a 500-fibre frame; sha256 of every array).

pythons_pyenv_root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
pythons_frames=(bundle bundle-masked bundle-masked-drop-in frame-500)

# find_python X.Y → an interpreter of Python X.Y: Debian's, pyenv's newest X.Y.*, PATH's.
find_python() {
  local candidate
  for candidate in "/usr/bin/python$1" \
                   $(ls -d "$pythons_pyenv_root/versions/$1".*/bin/"python$1" 2>/dev/null | sort -rV) \
                   "$(command -v "python$1" 2>/dev/null || true)"; do
    if [ -x "$candidate" ] && "$candidate" -c \
         "import sys; sys.exit('{}.{}'.format(*sys.version_info) != '$1')" 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

# describe_python PYTHON → "Python 3.13.0, numpy 2.5.5, mpi4py 4.1.2" as PYTHON imports them.
describe_python() {
  "$1" -c 'import importlib, platform
def version(name):
    try:
        return importlib.import_module(name).__version__
    except ImportError:
        return "absent"
print("Python {}, numpy {}, mpi4py {}".format(platform.python_version(), version("numpy"), version("mpi4py")))'
}

# frame_digests PYTHON TESTS OUT [PYTHONPATH]: the frames' digests (JSON) into OUT, extracted
# by the perfex PYTHON imports (TESTS: python/tests; data: $PERFEX_SHARED_DATA).
frame_digests() {
  PYTHONPATH=${4:-} "$1" "$2/test_numpy_majors.py" "$PERFEX_SHARED_DATA" "${pythons_frames[@]}" >"$3"
}

# compare_digests REFERENCE OUT: whether OUT's frames are bitwise REFERENCE's (says which differ).
compare_digests() {
  python3 - "$1" "$2" <<'PY'
import json, sys
reference, frames = (json.load(open(p)) for p in sys.argv[1:])
names = [n for n in reference if n != "numpy"]
differ = [f"{n}.{a}" for n in names for a in reference[n] if frames.get(n, {}).get(a) != reference[n][a]]
if differ:
    sys.exit(f"frames differ from the reference's (numpy {reference['numpy']}): {', '.join(differ)}")
print(f"frames bitwise those of the reference (numpy {reference['numpy']}): {', '.join(names)}")
PY
}

# reference_digests WORK SOURCE BUILD OUT: the frames of the source build under Debian's
# python3 with its numpy (OUT): BUILD/python when BUILD is a build tree with the package for
# that Python, else `pip install SOURCE` into WORK/venv-debian (which sees Debian's numpy).
# Sets reference_python and reference_what.
reference_digests() {
  local work=$1 source=$2 build=$3 out=$4 debian=/usr/bin/python3 module path=""
  module=$(ls "$build"/python/perfex/_perfex.*.so 2>/dev/null | head -n 1 || true)
  if [ -n "$module" ] && [ "$("$debian" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" \
                          = ".$(basename "$module" | cut -d. -f2-)" ]; then
    reference_python=$debian path=$build/python
    reference_what="the build tree's package ($build/python) under $debian"
  else
    "$debian" -m venv --system-site-packages "$work/venv-debian"
    # Debian 11's pip 20.3 (build-wheel.sh --glibc231) lets the system's setuptools 52 into the
    # isolated build, which reads no [project] table: a newer pip from the index; and pytest
    # and astropy (test_numpy_majors.py and the drop-in's frame) where Debian's are not there.
    # shellcheck disable=SC2046  # the missing ones
    "$work/venv-debian/bin/pip" install --quiet --disable-pip-version-check --upgrade 'pip>=23' \
      $(for m in pytest astropy; do "$work/venv-debian/bin/python" -c "import $m" 2>/dev/null || echo "$m"; done) \
      >"$work/pip-debian.log" 2>&1 || { tail -n 20 "$work/pip-debian.log" >&2; return 1; }
    "$work/venv-debian/bin/pip" install --quiet --disable-pip-version-check "$source" \
      >>"$work/pip-debian.log" 2>&1 || { tail -n 40 "$work/pip-debian.log" >&2; return 1; }
    reference_python=$work/venv-debian/bin/python
    reference_what="pip install . under $debian, with Debian's numpy"
  fi
  frame_digests "$reference_python" "$source/python/tests" "$out" "$path"
}
