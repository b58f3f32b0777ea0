#!/usr/bin/env bash
# CTest python.install_route.*: the Python package installed the ways users install it, each
# from a fresh copy of the source tree (its tracked and untracked, not ignored files: what a
# clone of it holds, no build folders), then imported from where it went and extracting.
#
#   install_routes.sh ROUTE WORK SOURCE BASE-PYTHON
#
# ROUTE:
#   desiinstall   desiInstall's tagged install: `pip install --no-deps --no-build-isolation
#                 --prefix=DIR .` in the copy, from an environment holding only what desiconda
#                 lists for it (setuptools, cmake, numpy) plus pybind11 from the index.
#   branch        desiInstall's branch install: etc/perfex_compile.sh PYTHON in the copy (the
#                 same environment as desiinstall), then python/ on PYTHONPATH.
# Kokkos_ROOT names the Kokkos to build against. WORK is emptied first.
set -euo pipefail
route=$1 work=$2 source=$3 base=$4
unset PYTHONPATH  # only what the route installed
rm -rf "$work"
mkdir -p "$work/src"
(cd "$source" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - --) \
  | tar -xf - -C "$work/src"
export PERFEX_BUILD_JOBS=${PERFEX_BUILD_JOBS:-2}
quiet=(--quiet --disable-pip-version-check)

desiconda_env() {  # the environment desiInstall runs pip from
  "$base" -m venv "$work/env"
  "$work/env/bin/pip" install "${quiet[@]}" --upgrade setuptools cmake numpy "pybind11>=2.12"
}

case "$route" in
  desiinstall)
    desiconda_env
    (cd "$work/src" && "$work/env/bin/python" -m pip install --no-deps --disable-pip-version-check \
       --ignore-installed --no-warn-script-location --no-build-isolation --quiet \
       --prefix="$work/prefix" .)
    python=$work/env/bin/python site=$work/prefix
    export PYTHONPATH
    PYTHONPATH=$("$python" -c 'import sys, sysconfig; print(sysconfig.get_path("platlib", "posix_prefix", vars={"base": sys.argv[1], "platbase": sys.argv[1]}))' "$site")
    ;;
  branch)
    desiconda_env
    mv "$work/src" "$work/prefix"  # desiInstall copies the branch into the install folder
    (cd "$work/prefix" && etc/perfex_compile.sh "$work/env/bin/python")
    python=$work/env/bin/python site=$work/prefix/python
    export PYTHONPATH=$site
    ;;
  *)
    echo "install_routes.sh: unknown route $route" >&2
    exit 2
    ;;
esac

cd "$work"  # away from any source tree: the installed package must be the one imported
"$python" "$source/python/tests/installed_check.py" "$route route" "$site"
