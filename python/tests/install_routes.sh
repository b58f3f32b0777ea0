#!/usr/bin/env bash
# CTest python.install_route.*: the Python package installed the ways users install it, each
# from a fresh copy of the source tree (its tracked and untracked, not ignored files: what a
# clone of it holds, no build folders), then imported from where it went and extracting.
#
#   install_routes.sh ROUTE WORK SOURCE BASE-PYTHON
#
# ROUTE:
#   pip           python3 -m venv v && v/bin/pip install SOURCE: build isolation, setuptools and
#                 pybind11 from the package index, numpy as the package's dependency; Kokkos
#                 from install-deps' cache (PERFEX_DEPS_DIR) when Kokkos_ROOT is that cache's.
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
  pip)
    [ -z "${Kokkos_ROOT:-}" ] || Kokkos_ROOT=$(cd "$Kokkos_ROOT" && pwd -P)
    if [ -n "${Kokkos_ROOT:-}" ] && [ "$(basename "$Kokkos_ROOT")" = kokkos-3.4.1-openmp ] \
       && [ -f "$Kokkos_ROOT/.perfex-complete" ]; then
      export PERFEX_DEPS_DIR
      PERFEX_DEPS_DIR=$(dirname "$Kokkos_ROOT")
      unset Kokkos_ROOT  # the default: install-deps' cache
    fi
    "$base" -m venv "$work/v"
    "$work/v/bin/pip" install "${quiet[@]}" "$work/src"
    python=$work/v/bin/python site=$work/v
    ;;
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
# The installed package extracts with its own data: the PSF it carries for gpu_specter's tests.
"$python" - "$route" "$site" <<'PY'
import os, sys
import numpy
import perfex
route, site = sys.argv[1:3]
package = os.path.dirname(perfex.__file__)
assert package.startswith(site), (package, site)
assert os.path.exists(os.path.join(package, "py.typed")), "py.typed not installed"
perfex.initialize(1)
psf = perfex.read_psf(os.path.join(package, "gpu_specter", "test", "data", "psf-r0-00051060.fits"))
light = numpy.full((psf.npix_y, psf.npix_x), 10.0)
frame = perfex.extract_frame(light, numpy.full_like(light, 0.1), psf, wavelength="5760,5800,0.8",
                             specmin=0, nspec=5, psferr=0.01, progress=False)
assert frame.npatches == 10 and frame.failed_patches == 0 and numpy.all(frame.ivar > 0), frame
print(f"install_routes: perfex {perfex.__version__} ({route} route) from {package} with numpy "
      f"{numpy.__version__} extracted {frame}")
PY
