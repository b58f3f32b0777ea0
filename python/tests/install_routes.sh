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
#   bundled       `pip install .` where no Kokkos can be found (no Kokkos_ROOT or
#                 CMAKE_PREFIX_PATH, HOME elsewhere): Kokkos and CFITSIO are built into the
#                 extension from the sources PERFEX_TEST_KOKKOS_SOURCE and
#                 PERFEX_TEST_CFITSIO_ARCHIVE (copied: the offline overrides), which are then
#                 deleted with the source copy and its build folders. The extension must load
#                 no Kokkos, CFITSIO or network library, and extract the reference bundle
#                 bitwise as the build tree's package does (PERFEX_REFERENCE_PYTHONPATH, with
#                 the reference data in PERFEX_SHARED_DATA).
# Kokkos_ROOT names the Kokkos to build against (desiinstall, branch). WORK is emptied first.
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
  bundled)
    cp -r "$PERFEX_TEST_KOKKOS_SOURCE" "$work/kokkos-source"
    cp "$PERFEX_TEST_CFITSIO_ARCHIVE" "$work/cfitsio.tar.gz"
    mkdir -p "$work/home"
    hidden=(env -u Kokkos_ROOT -u Kokkos_DIR -u CMAKE_PREFIX_PATH -u PERFEX_DEPS_DIR -u LD_LIBRARY_PATH
            HOME="$work/home" PIP_CACHE_DIR="${PIP_CACHE_DIR:-$HOME/.cache/pip}")
    "${hidden[@]}" "$base" -m venv "$work/env"
    t0=$SECONDS
    (cd "$work/src" && "${hidden[@]}" FETCHCONTENT_SOURCE_DIR_KOKKOS="$work/kokkos-source" \
       PERFEX_CFITSIO=bundled PERFEX_CFITSIO_ARCHIVE="$work/cfitsio.tar.gz" \
       "$work/env/bin/pip" install "${quiet[@]}" . numpy pytest astropy)  # the frames' script's
    echo "bundled route: pip install . built Kokkos, CFITSIO and the extension in $((SECONDS - t0)) s"
    rm -rf "$work/src" "$work/kokkos-source" "$work/cfitsio.tar.gz" "$work/home"
    python=$work/env/bin/python
    site=$("$python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
    module=$(ls "$site"/perfex/_perfex*.so)
    libraries=$(ldd "$module")
    echo "bundled route: the extension loads $(grep -c '=>' <<<"$libraries") shared objects:" \
         "$(awk '/=>/ { printf "%s ", $1 }' <<<"$libraries")"
    if grep -Ei 'not found|kokkos|cfitsio|curl|ssl|gnutls|krb5|ldap|gssapi' <<<"$libraries"; then
      echo "install_routes.sh: the bundled extension needs the libraries above" >&2
      exit 1
    fi
    ;;
  *)
    echo "install_routes.sh: unknown route $route" >&2
    exit 2
    ;;
esac

cd "$work"  # away from any source tree: the installed package must be the one imported
"$python" "$source/python/tests/installed_check.py" "$route route" "$site"
if [ "$route" = bundled ]; then
  # shellcheck source=../../scripts/lib/pythons.sh
  . "$source/scripts/lib/pythons.sh"
  if [ ! -f "${PERFEX_SHARED_DATA:-}/psf-r0-00051060.fits" ]; then
    echo "bundled route: frames not compared: no reference data in PERFEX_SHARED_DATA"
    exit 0
  fi
  frame_digests "$PERFEX_REFERENCE_PYTHON" "$source/python/tests" "$work/frames-reference.json" \
    "$PERFEX_REFERENCE_PYTHONPATH"
  frame_digests "$python" "$source/python/tests" "$work/frames.json"
  compare_digests "$work/frames-reference.json" "$work/frames.json"
fi
