#!/usr/bin/env bash
# Formats the tree: the C++ sources with .clang-format (Debian's clang-format 14), the Python
# sources with ruff (lint fixes and its formatter, configured in pyproject.toml); with --check,
# lists the files that differ or the lint findings and fails (scripts/test.sh runs the check).
# ruff: $PERFEX_RUFF, else ruff on PATH, else the one of scripts/install-deps.sh's Python
# environment ($PERFEX_DEPS_DIR/venv, default ~/.cache/perfex/venv).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files '*.hpp' '*.cpp' 2>/dev/null \
                     || find include tests bench tools python -name '*.[hc]pp')
ruff=${PERFEX_RUFF:-$(command -v ruff || echo "${PERFEX_DEPS_DIR:-${HOME}/.cache/perfex}/venv/bin/ruff")}
if [ ! -x "$ruff" ]; then
  echo "format: ruff not found ($ruff): run scripts/install-deps.sh, or set PERFEX_RUFF" >&2
  exit 1
fi
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: these files differ from .clang-format (run bash scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files follow .clang-format"
  if ! "$ruff" format --check --quiet . || ! "$ruff" check --quiet .; then
    echo "format: the Python sources differ from ruff's format or have lint findings" \
         "(run bash scripts/format.sh; fix what ruff check still reports)" >&2
    exit 1
  fi
  echo "format: the Python sources follow ruff ($("$ruff" --version))"
else
  clang-format -i "${files[@]}"
  "$ruff" check --fix --quiet . || true
  "$ruff" format --quiet .
fi
