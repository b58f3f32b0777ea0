#!/usr/bin/env bash
# CTest python.stubs: the extension's type stubs (python/perfex/_perfex/*.pyi) are what
# pybind11-stubgen makes of the built module. Regenerates them into WORK and compares; with
# --update, writes them into the source tree instead (after changing the bindings).
#
#   stubs.sh PYTHON BUILD-PACKAGE-DIR WORK [--update]     (exit 77: pybind11-stubgen absent)
set -euo pipefail
python=$1 package=$2 work=$3 mode=${4:-}
stubs=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/perfex/_perfex
if ! "$python" -c "import pybind11_stubgen" 2>/dev/null; then
  echo "stubs: SKIPPED: pybind11-stubgen is not installed for $python (python/requirements/dev.txt)"
  exit 77
fi
rm -rf "$work"
PYTHONPATH=$package "$python" -m pybind11_stubgen --exit-code -o "$work" perfex._perfex
if [ "$mode" = --update ]; then
  rm -f "$stubs"/*.pyi
  mkdir -p "$stubs"
  cp "$work"/perfex/_perfex/*.pyi "$stubs/"
  echo "stubs: wrote $(ls "$stubs" | tr '\n' ' ')into $stubs"
  exit 0
fi
if ! diff -ru "$stubs" "$work/perfex/_perfex"; then
  echo "stubs: python/perfex/_perfex/*.pyi differ from the extension's (after changing the" \
       "bindings: bash python/tests/stubs.sh $python $package $work --update)" >&2
  exit 1
fi
echo "stubs: $(ls "$stubs" | wc -l) stub files match the extension"
