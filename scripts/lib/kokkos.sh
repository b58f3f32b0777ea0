# Sourced by install-deps.sh, gpu-run.sh and build-kokkos.sh: builds Kokkos + Kokkos Kernels
# from a source folder holding kokkos/ and kokkos-kernels/ (Debian's trilinos source with
# 3.4.1, a copy of it carried to a machine without network, or a user's newer checkouts).

kokkos_log() { echo "[perfex-deps] $*" >&2; }

# kokkos_built PREFIX KEY: whether PREFIX holds a complete build made with KEY.
kokkos_built() {
  [ -f "$1/.perfex-complete" ] && [ "$(cat "$1/.perfex-complete")" = "$2" ]
}

# build_kokkos PREFIX SRC KEY CXX JOBS KOKKOS_CMAKE_ARGS...  → installs into PREFIX, compiled
# by CXX (empty: CMake's default) with JOBS parallel jobs; KEY (written into the stamp) names
# what the build depends on beyond PREFIX, so a changed patch rebuilds. Kokkos Kernels is
# installed with explicit instantiation off: perfex only uses its header-only batched
# routines. Shared libraries, or with KOKKOS_LINK=static in the caller's environment static
# ones compiled with -fPIC (to be linked into a Python extension: the wheel's).
# KOKKOS_KERNELS_CMAKE_ARGS (an array, optional) is added to Kokkos Kernels' own
# configuration; the KOKKOS_CMAKE_ARGS come after the defaults, so they override them.
build_kokkos() {
  local prefix=$1 src=$2 key=$3 cxx=$4 jobs=$5; shift 5
  if kokkos_built "$prefix" "$key"; then kokkos_log "reusing ${prefix}"; return 0; fi
  local cxx_args=() link_args=(-DBUILD_SHARED_LIBS=ON)
  [ -z "$cxx" ] || cxx_args=(-DCMAKE_CXX_COMPILER="$cxx")
  [ "${KOKKOS_LINK:-shared}" != static ] \
    || link_args=(-DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
  local build="${prefix}.build" logf="${prefix}.log" t0=$SECONDS version
  version=$(kokkos_source_version "${src}/kokkos")
  rm -rf "$build" "$prefix"
  kokkos_log "building Kokkos ${version} into ${prefix} (log: ${logf})"
  cmake -S "${src}/kokkos" -B "$build/kokkos" -DCMAKE_BUILD_TYPE=Release "${cxx_args[@]}" \
        -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF \
        -DKokkos_ENABLE_SERIAL=ON "${link_args[@]}" "$@" >"$logf" 2>&1 \
    || { tail -n 40 "$logf" >&2; return 1; }
  { cmake --build "$build/kokkos" -j "$jobs" && cmake --install "$build/kokkos"; } >>"$logf" 2>&1 \
    || { tail -n 40 "$logf" >&2; return 1; }
  kokkos_log "installing Kokkos Kernels $(kokkos_source_version "${src}/kokkos-kernels") headers and CMake package into ${prefix}"
  cmake -S "${src}/kokkos-kernels" -B "$build/kk" -DCMAKE_BUILD_TYPE=Release "${cxx_args[@]}" \
        -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" -DCMAKE_CXX_EXTENSIONS=OFF \
        -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF \
        -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_OFFSET_INT=OFF \
        -DKokkosKernels_INST_OFFSET_SIZE_T=OFF -DKokkosKernels_INST_LAYOUTLEFT=OFF \
        -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF \
        -DKokkosKernels_INST_MEMSPACE_HOSTSPACE=OFF -DKokkosKernels_ENABLE_TESTS=OFF \
        -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_CUBLAS=OFF \
        -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF "${link_args[@]}" \
        ${KOKKOS_KERNELS_CMAKE_ARGS[@]+"${KOKKOS_KERNELS_CMAKE_ARGS[@]}"} >>"$logf" 2>&1 \
    || { tail -n 40 "$logf" >&2; return 1; }
  { cmake --build "$build/kk" -j "$jobs" && cmake --install "$build/kk"; } >>"$logf" 2>&1 \
    || { tail -n 40 "$logf" >&2; return 1; }
  rm -rf "$build"
  kokkos_log "built ${prefix} in $((SECONDS - t0)) s"
  printf '%s' "$key" >"${prefix}/.perfex-complete"
}

# kokkos_source_version DIR: the version a Kokkos or Kokkos Kernels source folder declares in
# its top CMakeLists.txt (e.g. 4.6.01), or "(unknown version)".
kokkos_source_version() {
  local v=()
  mapfile -t v < <(sed -n -E \
    's/^ *set *\( *Kokkos(Kernels)?_VERSION_(MAJOR|MINOR|PATCH) +([0-9]+) *\).*/\3/Ip' \
    "$1/CMakeLists.txt" 2>/dev/null | head -n 3)
  if [ ${#v[@]} -eq 3 ]; then
    printf '%d.%d.%02d\n' "$((10#${v[0]}))" "$((10#${v[1]}))" "$((10#${v[2]}))"
  else
    echo "(unknown version)"
  fi
}

# find_nvcc: path of nvcc (PATH, then /usr/local/cuda/bin), or nothing.
find_nvcc() {
  command -v nvcc 2>/dev/null \
    || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; } || true
}

# patch_kokkos_source SRC DEST PATCH: DEST/{kokkos,kokkos-kernels} = SRC's with PATCH applied
# to kokkos (redone only when the patch changed; DEST/.perfex-patch holds its checksum).
patch_kokkos_source() {
  local src=$1 dest=$2 patch_file=$3 sum
  sum=$(sha256sum "$patch_file" | cut -c1-16)
  [ "$(cat "${dest}/.perfex-patch" 2>/dev/null)" = "$sum" ] && return 0
  kokkos_log "patching a copy of the Kokkos source ($(basename "$patch_file"))"
  rm -rf "$dest" && mkdir -p "$dest"
  cp -r "${src}/kokkos" "${src}/kokkos-kernels" "$dest/"
  patch -s -p1 -d "${dest}/kokkos" <"$patch_file"
  printf '%s' "$sum" >"${dest}/.perfex-patch"
}
