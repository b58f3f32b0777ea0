#!/usr/bin/env bash
# Installs everything perfex needs on Debian 12 and builds Kokkos + Kokkos Kernels 3.4.1
# (Serial + OpenMP, C++17) from Debian's own trilinos source package into a cache prefix
# outside the clone, so later clones and CI runs reuse it. Idempotent.
#
# Environment:
#   PERFEX_DEPS_DIR   cache folder (default: ~/.cache/perfex)
#   Kokkos_ROOT / CMAKE_PREFIX_PATH   a user's own Kokkos (3.4 .. 4.x): nothing is built
# Prints the Kokkos prefix to use as the last line of stdout ("KOKKOS_PREFIX=...").
set -euo pipefail

deps_dir=${PERFEX_DEPS_DIR:-${HOME}/.cache/perfex}
mkdir -p "${deps_dir}"
log() { echo "[perfex-deps] $*" >&2; }

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

# ---- Debian packages --------------------------------------------------------------------
packages=(g++ cmake make pkg-config catch2 libbenchmark-dev libcfitsio-dev liblapack-dev
          libblas-dev dpkg-dev xz-utils ca-certificates python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# ---- a user's own Kokkos wins -----------------------------------------------------------
if [ -n "${Kokkos_ROOT:-}" ]; then
  log "using Kokkos_ROOT=${Kokkos_ROOT}; nothing to build"
  echo "KOKKOS_PREFIX=${Kokkos_ROOT}"
  exit 0
fi
if [ -n "${CMAKE_PREFIX_PATH:-}" ]; then
  IFS=: read -ra prefixes <<<"${CMAKE_PREFIX_PATH}"
  for p in "${prefixes[@]}"; do
    if ls "$p"/lib*/cmake/Kokkos/KokkosConfig.cmake >/dev/null 2>&1; then
      log "using Kokkos from CMAKE_PREFIX_PATH entry $p; nothing to build"
      echo "KOKKOS_PREFIX=$p"
      exit 0
    fi
  done
fi

# ---- Debian's trilinos source, through a private apt configuration ---------------------
src_dir="${deps_dir}/src"
fetch_trilinos_source() {
  [ -d "${src_dir}/kokkos" ] && [ -d "${src_dir}/kokkos-kernels" ] && return 0
  local apt_dir="${deps_dir}/apt"
  mkdir -p "${apt_dir}/lists/partial" "${apt_dir}/archives/partial" "${apt_dir}/sources.list.d" "${apt_dir}/download"
  local codename
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME}")
  # deb-src entries with the same URIs and suites as the machine's Debian entries.
  python3 - "$codename" "${apt_dir}/sources.list" <<'PY' 2>/dev/null || \
  awk -v c="$codename" '$1=="deb"{ if ($3==c || $3 ~ "^"c"-") { $1="deb-src"; print } }' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null > "${apt_dir}/sources.list"
import glob, re, sys
codename, out = sys.argv[1], sys.argv[2]
lines = []
def keep(suite): return suite == codename or suite.startswith(codename + "-")
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try: text = open(path).read()
    except OSError: continue
    for line in text.splitlines():
        f = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
        if len(f) >= 4 and f[0] == "deb" and keep(f[2]):
            lines.append(" ".join(["deb-src"] + f[1:]))
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in open(path).read().split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line: continue
            k, v = line.split(":", 1); fields[k.strip().lower()] = v.split()
        if "deb" not in fields.get("types", []): continue
        for uri in fields.get("uris", []):
            for suite in fields.get("suites", []):
                if keep(suite):
                    lines.append(" ".join(["deb-src", uri, suite] + fields.get("components", ["main"])))
open(out, "w").write("\n".join(lines) + "\n")
PY
  [ -s "${apt_dir}/sources.list" ] || { log "no Debian apt source found to derive a deb-src entry from"; exit 1; }
  local apt_opts=(-o "Dir::Etc::SourceList=${apt_dir}/sources.list"
                  -o "Dir::Etc::SourceParts=${apt_dir}/sources.list.d"
                  -o "Dir::State::Lists=${apt_dir}/lists"
                  -o "Dir::Cache::Archives=${apt_dir}/archives"
                  -o "APT::Sandbox::User=root")
  log "downloading Debian's trilinos source package (deb-src derived from the apt sources)"
  apt-get "${apt_opts[@]}" update -qq >&2
  (cd "${apt_dir}/download" && apt-get "${apt_opts[@]}" source --download-only trilinos >&2)
  local orig
  orig=$(ls "${apt_dir}"/download/trilinos_*.orig.tar.* | head -n 1)
  log "extracting packages/kokkos and packages/kokkos-kernels from $(basename "$orig")"
  rm -rf "${src_dir}.tmp" && mkdir -p "${src_dir}.tmp"
  tar -xf "$orig" -C "${src_dir}.tmp" --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  local top
  top=$(ls -d "${src_dir}.tmp"/*/packages)
  mkdir -p "${src_dir}"
  rm -rf "${src_dir}/kokkos" "${src_dir}/kokkos-kernels"
  mv "$top/kokkos" "$top/kokkos-kernels" "${src_dir}/"
  rm -rf "${src_dir}.tmp"
}

# build_kokkos NAME KOKKOS_CMAKE_ARGS...  → installs into ${deps_dir}/NAME
build_kokkos() {
  local name=$1; shift
  local prefix="${deps_dir}/${name}"
  local stamp="${prefix}/.perfex-complete"
  if [ -f "$stamp" ]; then log "reusing ${prefix}"; return 0; fi
  fetch_trilinos_source
  local jobs
  jobs=$(nproc)
  local build="${deps_dir}/build-${name}"
  rm -rf "$build" "$prefix"
  log "building Kokkos 3.4.1 (${name}) into ${prefix}"
  cmake -S "${src_dir}/kokkos" -B "$build/kokkos" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_EXTENSIONS=OFF \
        -DKokkos_ENABLE_SERIAL=ON -DBUILD_SHARED_LIBS=ON "$@" >"$build.log" 2>&1 \
    || { tail -n 40 "$build.log" >&2; exit 1; }
  cmake --build "$build/kokkos" -j "$jobs" >>"$build.log" 2>&1 && cmake --install "$build/kokkos" >>"$build.log" 2>&1 \
    || { tail -n 40 "$build.log" >&2; exit 1; }
  log "installing Kokkos Kernels 3.4.1 (${name}) headers and CMake package"
  cmake -S "${src_dir}/kokkos-kernels" -B "$build/kk" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" -DCMAKE_CXX_EXTENSIONS=OFF \
        -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF \
        -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_OFFSET_INT=OFF \
        -DKokkosKernels_INST_OFFSET_SIZE_T=OFF -DKokkosKernels_INST_LAYOUTLEFT=OFF \
        -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF \
        -DKokkosKernels_INST_MEMSPACE_HOSTSPACE=OFF -DKokkosKernels_ENABLE_TESTS=OFF \
        -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_CUBLAS=OFF \
        -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF -DBUILD_SHARED_LIBS=ON >>"$build.log" 2>&1 \
    || { tail -n 40 "$build.log" >&2; exit 1; }
  cmake --build "$build/kk" -j "$jobs" >>"$build.log" 2>&1 && cmake --install "$build/kk" >>"$build.log" 2>&1 \
    || { tail -n 40 "$build.log" >&2; exit 1; }
  rm -rf "$build"
  touch "$stamp"
}

build_kokkos kokkos-3.4.1-openmp -DKokkos_ENABLE_OPENMP=ON

echo "KOKKOS_PREFIX=${deps_dir}/kokkos-3.4.1-openmp"
