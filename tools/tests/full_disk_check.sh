#!/bin/sh
# Outputs that must change together, on a nearly full disk: full_disk_check.sh SIZE COMMAND.
# Runs the shell command COMMAND with $OUT a fresh file system of SIZE (tmpfs, in a mount
# namespace of its own, gone with it) that holds an old f.fits and m.fits. Passes when COMMAND
# fails (the disk fills up), names "No space left on device", leaves both old files as they were
# and leaves no other file behind. Exits 77 (skipped) where no file system can be mounted.
size=$1
command=$2
if [ -z "${PERFEX_FULL_DISK_INSIDE:-}" ]; then
  if ! unshare -m true 2>/dev/null; then
    echo "full_disk_check: skipped: cannot make a mount namespace (unshare -m needs root)"
    exit 77
  fi
  PERFEX_FULL_DISK_INSIDE=1 exec unshare -m --propagation private sh "$0" "$@"
fi
OUT=$(mktemp -d) || exit 1
export OUT
if ! mount -t tmpfs -o "size=$size" tmpfs "$OUT" 2>/dev/null; then
  echo "full_disk_check: skipped: cannot mount a tmpfs"
  exit 77
fi
printf 'old frame\n' > "$OUT/f.fits"
printf 'old model\n' > "$OUT/m.fits"
out=$(sh -c "$command" 2>&1)
status=$?
printf '%s\n' "$out"
fail() { echo "full_disk_check: $*"; exit 1; }
[ "$status" -ne 0 ] || fail "the command succeeded on a full disk (exit 0)"
printf '%s' "$out" | grep -q "No space left on device" || fail "no 'No space left on device' in the output"
[ "$(cat "$OUT/f.fits")" = "old frame" ] || fail "f.fits was replaced"
[ "$(cat "$OUT/m.fits")" = "old model" ] || fail "m.fits was replaced"
left=$(ls -A "$OUT" | grep -v -x -e f.fits -e m.fits)
[ -z "$left" ] || fail "files left behind: $left"
echo "full_disk_check: exit $status, f.fits and m.fits unchanged, nothing left behind"
exit 0
