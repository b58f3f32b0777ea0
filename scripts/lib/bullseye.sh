# shellcheck shell=bash
# Sourced by build-wheel.sh (--glibc231): a Debian 11 root (bullseye: glibc 2.31, GCC 10,
# CMake 3.18, Python 3.9), the glibc of NERSC's Perlmutter (SLES 15), made once with
# debootstrap into a cache folder, and commands run in it with chroot. Needs root (uid 0).

bullseye_log() { echo "== bullseye: $*" >&2; }

# debian_mirror → the Debian archive this machine's apt uses for its own release (derived from
# apt's configuration: the repository names no mirror of its own).
debian_mirror() {
  local codename
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  # shellcheck disable=SC2016  # apt's format, not the shell's
  apt-get indextargets --format '$(REPO_URI)' "Release: $codename" | head -n 1
}

# bullseye_root ROOT: a minimal bullseye under ROOT (debootstrap, a few minutes; reused later).
bullseye_root() {
  local root=$1 mirror t0=$SECONDS
  [ ! -f "$root/.perfex-complete" ] || return 0
  [ "$(id -u)" -eq 0 ] || { bullseye_log "making and entering a Debian root needs root (chroot)"; return 1; }
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
  fi
  mirror=$(debian_mirror)
  [ -n "$mirror" ] || { bullseye_log "no Debian archive found in apt's configuration"; return 1; }
  bullseye_log "debootstrap bullseye into $root from $mirror (log: $root.log)"
  rm -rf "$root.tmp"
  debootstrap --variant=minbase bullseye "$root.tmp" "$mirror" >"$root.log" 2>&1 \
    || { tail -n 20 "$root.log" >&2; return 1; }
  mv "$root.tmp" "$root"
  echo bullseye >"$root/.perfex-complete"
  bullseye_log "root made in $((SECONDS - t0)) s"
}

# bullseye_enter ROOT: /proc and /dev mounted in ROOT (until bullseye_leave), name resolution
# for apt and pip.
bullseye_enter() {
  mountpoint -q "$1/proc" || mount -t proc proc "$1/proc"
  mountpoint -q "$1/dev" || mount --bind /dev "$1/dev"
  cp /etc/resolv.conf "$1/etc/resolv.conf"
  # This machine's trusted certificates (a TLS-inspecting proxy's, say), for pip in the root.
  mkdir -p "$1/etc/ssl" && cp -L /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/host-certificates.crt"
}

# bullseye_leave ROOT: undoes bullseye_enter's mounts (and any bind mount under ROOT/perfex).
bullseye_leave() {
  local m
  for m in "$1/perfex/data" "$1/dev" "$1/proc"; do
    ! mountpoint -q "$m" || umount "$m"
  done
}

# bullseye_run ROOT [NAME=VALUE...] COMMAND...: COMMAND in ROOT with a clean environment.
bullseye_run() {
  local root=$1; shift
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PIP_CERT=/etc/ssl/host-certificates.crt \
    SSL_CERT_FILE=/etc/ssl/host-certificates.crt "$@"
}

# bullseye_python ROOT PREFIX PATCHELF: a copy of this machine's pyenv Python at PREFIX, at the
# same path in ROOT (its paths stay true), for the build only: Debian 11 has no Python but 3.9,
# and this machine's need glibc 2.35, so the copy's interpreter is this machine's loader and
# libraries (ROOT/opt/host-libs, set with PATCHELF). It drives pip, setup.py and CMake's
# queries; the root's GCC 10 compiles and links the extension against glibc 2.31.
bullseye_python() {
  local root=$1 prefix=$2 patchelf=$3 python lib
  [ ! -f "$root$prefix/.perfex-complete" ] || return 0
  python=$prefix/bin/python$(basename "$prefix" | cut -d. -f1,2)  # pyenv's X.Y.Z: bin/pythonX.Y
  rm -rf "$root$prefix" && mkdir -p "$root$prefix" "$root/opt/host-libs"
  tar -C "$prefix" --exclude='./lib/python3.*/test' -cf - . | tar -C "$root$prefix" -xf -
  # The loader and every library the interpreter and its modules load, but its own.
  for lib in $( { ldd "$python"; for m in "$prefix"/lib/python3.*/lib-dynload/*.so; do ldd "$m"; done; } |
                awk '/=> \//{print $3} /^\t\/[^ ]*ld-linux/{print $1}' | grep -v "^$prefix/" | sort -u); do
    cp -L "$lib" "$root/opt/host-libs/"
  done
  "$patchelf" --set-interpreter /opt/host-libs/ld-linux-x86-64.so.2 "$root$python"
  # RPATH, not RUNPATH: a library's own RUNPATH (libpython's) would hide the interpreter's.
  for lib in "$root$python" "$root$prefix"/lib/libpython3*.so.* "$root$prefix"/lib/python3.*/lib-dynload/*.so; do
    "$patchelf" --force-rpath --set-rpath "/opt/host-libs:$prefix/lib" "$lib"
  done
  touch "$root$prefix/.perfex-complete"
}
