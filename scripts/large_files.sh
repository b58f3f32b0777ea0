#!/usr/bin/env bash
# The large-file check: no file over 500 KiB in the repository (the given files, else every
# tracked one), but the test data listed below, which the tests need whole. pre-commit runs it on
# the files of each commit, scripts/check.sh on the tree. A new large input belongs in the
# shared data (../shared/data), or, where a plain clone's tests need it, in this list.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
limit=$((500 * 1024))
allowed=(
  tests/data/preproc-r0-small.fits                        # the golden preproc image (1.4 MB)
  python/perfex/gpu_specter/test/data/psf-r0-00051060.fits  # the real DESI PSF (1.0 MB)
)
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files); fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  size=$(stat -c %s "$f")
  [ "$size" -gt "$limit" ] || continue
  printf '%s\n' "${allowed[@]}" | grep -qxF "$f" || bad+=("$f ($((size / 1024)) KiB)")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "large files: over $((limit / 1024)) KiB (see scripts/large_files.sh):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "large files: none of ${#files[@]} files over $((limit / 1024)) KiB but the test data listed"
