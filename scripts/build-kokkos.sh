#!/usr/bin/env bash
# Builds a Kokkos + Kokkos Kernels of your choice (Serial + OpenMP) from source folders you
# already have, for building perfex against a newer Kokkos than install-deps' 3.4.1. Nothing
# is downloaded: SRC holds kokkos/ and kokkos-kernels/ (your clones or release archives, any
# version from 4.0 on; Kokkos Kernels of a version that accepts that Kokkos).
#
#   bash scripts/build-kokkos.sh SRC PREFIX [CMAKE_ARGS...]
#
# Defaults: C++20, code deprecated in Kokkos 4 off (-DKokkos_ENABLE_DEPRECATED_CODE_4=OFF),
# Kokkos Kernels' batched, BLAS and LAPACK components with no explicit instantiation (perfex
# uses only its header-only batched routines). CMAKE_ARGS go to Kokkos' configuration after
# these defaults, so they override them (e.g. -DCMAKE_CXX_STANDARD=17). The build is then
# probed (cmake/kokkos_probe); where the compiler miscompiles Kokkos' mdspan View (GCC 12),
# it is built again with the View implementation before it (Kokkos_ENABLE_IMPL_VIEW_LEGACY).
# Then configure perfex with the same C++ standard:
#
#   cmake -S . -B build-new -DKokkos_ROOT=PREFIX -DCMAKE_CXX_STANDARD=20
#
# Environment: JOBS (parallel jobs, default: the core count), CXX (the compiler).
# docs/library.md ("Kokkos versions") lists the versions tried and their results.
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
src=$(cd "$1" && pwd) prefix=$2
shift 2
for d in kokkos kokkos-kernels; do
  [ -f "${src}/${d}/CMakeLists.txt" ] \
    || { echo "build-kokkos.sh: ${src}/${d}/CMakeLists.txt not found (SRC must hold kokkos/ and kokkos-kernels/)" >&2; exit 2; }
done
mkdir -p "$(dirname "$prefix")"
prefix="$(cd "$(dirname "$prefix")" && pwd)/$(basename "$prefix")"

# shellcheck source=lib/kokkos.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/kokkos.sh"
# shellcheck disable=SC2034  # read by build_kokkos
KOKKOS_KERNELS_CMAKE_ARGS=(-DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF
  -DKokkosKernels_ENABLE_COMPONENT_BATCHED=ON -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON
  -DKokkosKernels_ENABLE_COMPONENT_LAPACK=ON)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# key ARGS...: what a build depends on besides PREFIX (the sources' versions, the arguments).
key() {
  echo "$(kokkos_source_version "${src}/kokkos") $(kokkos_source_version "${src}/kokkos-kernels") $*"
}

# build ARGS...: the build with ARGS after the defaults (a changed request rebuilds).
build() {
  build_kokkos "$prefix" "$src" "$(key "$@")" "${CXX:-}" "${JOBS:-$(nproc)}" "${launcher[@]}" \
    -DKokkos_ENABLE_OPENMP=ON -DCMAKE_CXX_STANDARD=20 -DKokkos_ENABLE_DEPRECATED_CODE_4=OFF "$@"
}

# probe: whether Views built against PREFIX are sound (cmake/kokkos_probe, the check perfex's
# configuration runs too); its log in PREFIX.probe.log.
probe() {
  local dir="${prefix}.probe" cxx_args=()
  [ -z "${CXX:-}" ] || cxx_args=(-DCMAKE_CXX_COMPILER="$CXX")
  rm -rf "$dir"
  { cmake -S "${here}/../cmake/kokkos_probe" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
      -DKokkos_ROOT="$prefix" "${cxx_args[@]}" && cmake --build "$dir" \
      && OMP_PROC_BIND=false "${dir}/kokkos_probe"; } >"${prefix}.probe.log" 2>&1
  local status=$?
  rm -rf "$dir"
  return $status
}

legacy=-DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON
# A build of the same request that fell back to the older View already (below) is reused.
if kokkos_built "$prefix" "$(key "$@" "$legacy")"; then set -- "$@" "$legacy"; fi
build "$@" || exit 1
if ! probe; then
  # GCC 12 miscompiles the mdspan View (Kokkos 4.7 and its development snapshots): the View
  # implementation before it is still there, and perfex's frames are the same with either.
  if [[ " $* " == *IMPL_VIEW_LEGACY* ]] \
    || ! grep -q IMPL_VIEW_LEGACY "${src}/kokkos/cmake/kokkos_enable_options.cmake"; then
    kokkos_log "the Kokkos in ${prefix} makes unsound Views with this compiler (the probe's log: ${prefix}.probe.log); perfex refuses it"
    exit 1
  fi
  kokkos_log "this compiler miscompiles Kokkos' mdspan View (a default-constructed View crashes; GCC 12): rebuilding with ${legacy}"
  build "$@" "$legacy" || exit 1
  probe || { kokkos_log "the probe still fails (${prefix}.probe.log)"; exit 1; }
fi
echo "KOKKOS_PREFIX=${prefix}"
