#!/usr/bin/env bash
# Installs what perfex needs on Debian 12 and builds Kokkos + Kokkos Kernels 3.4.1 (Serial +
# OpenMP, C++17) from Debian's own trilinos source package into a cache prefix outside the
# clone, so later clones and CI runs reuse it. Where nvcc is found (PATH or /usr/local/cuda/bin)
# it also builds a Serial + CUDA Kokkos (Ampere, sm_80) from a patched copy of the same source
# (scripts/patches/kokkos-3.4.1-cuda13.patch). Idempotent.
#
#   bash scripts/install-deps.sh [test|demo|wheel]      what the running command needs:
#     test   (default) everything: every Debian package the tests use, the Python environment,
#            the OpenMP Kokkos and, where nvcc is found, the CUDA Kokkos
#     demo   the Debian packages that build the tools and the Python package, the Python
#            environment (the demo's quick-look picture), the OpenMP Kokkos; no CUDA Kokkos
#     wheel  the Debian packages that build the Python package, and the sources of Kokkos and
#            CFITSIO, printed as "KOKKOS_SOURCE=..." and "CFITSIO_SOURCE=..."
#            (scripts/build-wheel.sh builds static libraries of its own from them); no Kokkos
#            build, no Python environment
#
# Environment:
#   PERFEX_DEPS_DIR   cache folder (default: ~/.cache/perfex)
#   PERFEX_CUDA=OFF   never build the CUDA Kokkos
#   Kokkos_ROOT / CMAKE_PREFIX_PATH   a user's own Kokkos (3.4 .. 4.x): nothing is built
#   PERFEX_PYTHON_ENV=OFF skip the Python environment from the package index (the Python package
#                         needs it: pybind11 >= 2.12)
# Then makes the Python environment (a virtual environment of python/requirements/dev.txt and
# docs.txt from the package index, in PERFEX_DEPS_DIR/venv) and prints "PERFEX_PYTHON=<its
# python>".
# Prints "KOKKOS_CUDA_PREFIX=..." when the CUDA Kokkos is there, for the test purpose the Kokkos
# source and CFITSIO archive the tests of the bundled build use ("KOKKOS_SOURCE=...",
# "CFITSIO_SOURCE=..."), and the Kokkos prefix to use as the last line of stdout
# ("KOKKOS_PREFIX=...").
set -euo pipefail

purpose=${1:-test}
case "$purpose" in
  test | demo | wheel) ;;
  *) echo "install-deps.sh: unknown purpose '$purpose' (test, demo or wheel)" >&2; exit 2 ;;
esac
deps_dir=${PERFEX_DEPS_DIR:-${HOME}/.cache/perfex}
mkdir -p "${deps_dir}"
log() { echo "[perfex-deps] $*" >&2; }

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

# ---- Debian packages --------------------------------------------------------------------
# The build (its configure needs Catch2 and Google Benchmark) and the Python package's.
packages=(g++ cmake make pkg-config catch2 libbenchmark-dev libcfitsio-dev liblapack-dev
          zlib1g-dev libblas-dev dpkg-dev xz-utils ca-certificates python3 patch
          python3-dev python3-venv)
case "$purpose" in
  test)  # the format check, the Python suite under Debian's numpy 1, MPI, the client checks
    packages+=(clang-format python3-numpy python3-pytest python3-setuptools python3-wheel
               openmpi-bin libopenmpi-dev python3-mpi4py python3-matplotlib python3-astropy
               python3-numba python3-scipy python3-fitsio) ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi

# ---- the Python environment from the package index ---------------------------------------
if [ "${PERFEX_PYTHON_ENV:-ON}" != "OFF" ] && [ "$purpose" != wheel ]; then
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  # shellcheck source=lib/python_env.sh
  . "${here}/lib/python_env.sh"
  venv=$(python_env "${deps_dir}" "${here}/../python/requirements/dev.txt" \
                    "${here}/../python/requirements/docs.txt") || exit 1
  echo "PERFEX_PYTHON=${venv}/bin/python"
fi

# ---- a user's own Kokkos wins (a wheel builds its own) -------------------------------------
if [ -n "${Kokkos_ROOT:-}" ] && [ "$purpose" != wheel ]; then
  log "using Kokkos_ROOT=${Kokkos_ROOT}; nothing to build"
  echo "KOKKOS_PREFIX=${Kokkos_ROOT}"
  exit 0
fi
if [ -n "${CMAKE_PREFIX_PATH:-}" ] && [ "$purpose" != wheel ]; then
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
# download_debian_source PACKAGE → the path of Debian's PACKAGE_*.orig.tar.* (downloaded once).
download_debian_source() {
  local package=$1 apt_dir="${deps_dir}/apt" orig
  orig=$(ls "${apt_dir}/download/${package}"_*.orig.tar.* 2>/dev/null | head -n 1 || true)
  if [ -n "$orig" ]; then echo "$orig"; return 0; fi
  mkdir -p "${apt_dir}/lists/partial" "${apt_dir}/archives/partial" "${apt_dir}/sources.list.d" \
           "${apt_dir}/download"
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
                    components = fields.get("components", ["main"])
                    lines.append(" ".join(["deb-src", uri, suite] + components))
open(out, "w").write("\n".join(lines) + "\n")
PY
  [ -s "${apt_dir}/sources.list" ] \
    || { log "no Debian apt source found to derive a deb-src entry from"; exit 1; }
  local apt_opts=(-o "Dir::Etc::SourceList=${apt_dir}/sources.list"
                  -o "Dir::Etc::SourceParts=${apt_dir}/sources.list.d"
                  -o "Dir::State::Lists=${apt_dir}/lists"
                  -o "Dir::Cache::Archives=${apt_dir}/archives"
                  -o "APT::Sandbox::User=root")
  log "downloading Debian's ${package} source package (deb-src derived from the apt sources)"
  apt-get "${apt_opts[@]}" update -qq >&2
  # Only the upstream tarball is used: a missing Debian part is not an error.
  (cd "${apt_dir}/download" && apt-get "${apt_opts[@]}" source --download-only "$package" >&2) \
    || log "apt-get source ${package} did not download everything"
  ls "${apt_dir}/download/${package}"_*.orig.tar.* | head -n 1
}

fetch_trilinos_source() {
  [ -d "${src_dir}/kokkos" ] && [ -d "${src_dir}/kokkos-kernels" ] && return 0
  local orig
  orig=$(download_debian_source trilinos)
  log "extracting packages/kokkos and packages/kokkos-kernels from $(basename "$orig")"
  rm -rf "${src_dir}.tmp" && mkdir -p "${src_dir}.tmp"
  tar -xf "$orig" -C "${src_dir}.tmp" --wildcards \
      '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  local top
  top=$(ls -d "${src_dir}.tmp"/*/packages)
  mkdir -p "${src_dir}"
  rm -rf "${src_dir}/kokkos" "${src_dir}/kokkos-kernels"
  mv "$top/kokkos" "$top/kokkos-kernels" "${src_dir}/"
  rm -rf "${src_dir}.tmp"
}

if [ "$purpose" = wheel ]; then
  fetch_trilinos_source
  echo "CFITSIO_SOURCE=$(download_debian_source cfitsio)"
  echo "KOKKOS_SOURCE=${src_dir}"
  exit 0
fi

# shellcheck source=lib/kokkos.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/kokkos.sh"
jobs=$(nproc)

openmp_prefix="${deps_dir}/kokkos-3.4.1-openmp"
if ! kokkos_built "$openmp_prefix" ""; then
  fetch_trilinos_source
  build_kokkos "$openmp_prefix" "$src_dir" "" "" "$jobs" -DKokkos_ENABLE_OPENMP=ON || exit 1
fi

# ---- CUDA: Serial + CUDA Kokkos (Ampere) from a patched copy of the source ----------------
nvcc=$(find_nvcc)
if [ "${PERFEX_CUDA:-ON}" != "OFF" ] && [ "$purpose" = test ] && [ -n "$nvcc" ]; then
  # nvcc_wrapper calls the nvcc on PATH.
  export PATH="$(dirname "$nvcc"):${PATH}"
  patch_file="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/patches/kokkos-3.4.1-cuda13.patch"
  cuda_src="${deps_dir}/src-cuda"
  cuda_prefix="${deps_dir}/kokkos-3.4.1-cuda"
  key="patch $(sha256sum "$patch_file" | cut -c1-16)"
  if ! kokkos_built "$cuda_prefix" "$key"; then
    fetch_trilinos_source
    patch_kokkos_source "$src_dir" "$cuda_src" "$patch_file"
    build_kokkos "$cuda_prefix" "$cuda_src" "$key" "${cuda_src}/kokkos/bin/nvcc_wrapper" "$jobs" \
      -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_AMPERE80=ON || exit 1
  fi
  echo "KOKKOS_CUDA_PREFIX=${cuda_prefix}"
fi

# The offline sources of the tests of a Kokkos and CFITSIO built with perfex (cmake/bundled.cmake).
if [ "$purpose" = test ]; then
  fetch_trilinos_source
  echo "KOKKOS_SOURCE=${src_dir}/kokkos"
  echo "CFITSIO_SOURCE=$(download_debian_source cfitsio)"
fi
echo "KOKKOS_PREFIX=${openmp_prefix}"
