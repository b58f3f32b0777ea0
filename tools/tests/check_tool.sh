#!/bin/sh
# Runs a command-line check: check_tool.sh EXIT-STATUS REGEX COMMAND [ARGS...]. Passes when the
# command exits with EXIT-STATUS and its output (stdout + stderr, lines joined by spaces)
# matches the extended REGEX. The output is shown either way.
expected=$1
regex=$2
shift 2
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
if [ "$status" -ne "$expected" ]; then
  echo "check_tool: exit status $status, expected $expected"
  exit 1
fi
if ! printf '%s\n' "$out" | tr '\n' ' ' | grep -Eq -- "$regex"; then
  echo "check_tool: output does not match: $regex"
  exit 1
fi
exit 0
