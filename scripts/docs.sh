#!/usr/bin/env bash
# Builds the API reference (docs/api: Sphinx with numpydoc) into BUILD/docs/api/html, warnings
# as errors and every cross-reference resolved (sphinx-build -W --keep-going -n). The Python
# pages are autodoc's, from the docstrings of the package BUILD/python holds (the extension
# built by the test command or check.sh), imported by the build's Python (its CMake cache's
# Python3_EXECUTABLE: install-deps' environment, python/requirements/docs.txt); the C++ page is
# written by hand, and each function signature it declares must appear in include/perfex as
# written there. A stage of scripts/test.sh; seconds.
#
#   bash scripts/docs.sh [BUILD]        BUILD: a configured and built build folder (default: build)
#
# Environment: PERFEX_DOCS_PYTHON (a Python with Sphinx and numpydoc, instead of the build's).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-build}
python=${PERFEX_DOCS_PYTHON:-$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)}
if [ -z "$python" ] || ! ls "$build"/python/perfex/_perfex*.so >/dev/null 2>&1; then
  echo "docs: no built Python package in $build/python (build the target perfex_python first)" >&2
  exit 1
fi
if ! "$python" -c "import sphinx, numpydoc" 2>/dev/null; then
  echo "docs: $python has no Sphinx or numpydoc: run scripts/install-deps.sh" \
       "(python/requirements/docs.txt), or set PERFEX_DOCS_PYTHON" >&2
  exit 1
fi

# The C++ page's signatures, copied from the headers, must still be the headers' (whitespace
# aside): a changed signature fails here instead of documenting what no longer exists.
"$python" - docs/api/cpp.rst include/perfex <<'PY'
import pathlib, re, sys
page, include = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
def flat(text):
    return re.sub(r"\s+", " ", re.sub(r"\s*([<>(),&*])\s*", r"\1", text))
headers = flat(" ".join(p.read_text() for p in sorted(include.rglob("*.hpp"))))
missing = [s for s in re.findall(r"^\.\. cpp:function:: (.+)$", page.read_text(), re.M)
           if flat(s) not in headers]
for s in missing:
    print(f"docs: {page}: not a signature of {include}: {s}", file=sys.stderr)
sys.exit(1 if missing else 0)
PY

out="$build/docs/api"
rm -rf "$out"
PYTHONPATH="$(cd "$build" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
  "$python" -m sphinx -W --keep-going -n -q -b html -d "$out/doctrees" docs/api "$out/html"
echo "docs: the API reference is in $out/html/index.html" \
     "($(find "$out/html" -name '*.html' ! -name 'genindex.html' ! -name 'search.html' ! -name 'py-modindex.html' | wc -l) pages)"
