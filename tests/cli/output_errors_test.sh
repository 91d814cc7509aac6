#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Output that cannot be written is an error, never a success: `> /dev/full` (ENOSPC on every
# write) gives exit 4 and a message naming standard output, for a report, a diff and a table.
# Usage: output_errors_test.sh QPATCH BUILD_DIR
set -eu
qpatch=$1
cd "$2"
sample=sample/qwen3.5-27b-w4a16-mtp
err=$(mktemp)
trap 'rm -f "$err"' EXIT
expect_full() { # expect_full ARGS...: exit 4 and the message, with stdout on /dev/full
  set +e
  NO_COLOR=1 "$qpatch" "$@" >/dev/full 2>"$err"
  code=$?
  set -e
  [ "$code" -eq 4 ] || { echo "qpatch $* > /dev/full: exit $code, not 4"; cat "$err"; exit 1; }
  tail -n 1 "$err" | grep -qx 'qpatch: error: standard output: No space left on device: what qpatch printed is incomplete' ||
    { echo "qpatch $* > /dev/full: no message naming standard output:"; cat "$err"; exit 1; }
}
expect_full inspect "$sample"
expect_full --dry-run "$sample"
expect_full --check --json "$sample"
# Nothing printed, nothing lost: --check -q writes no byte to stdout.
set +e
"$qpatch" --check -q "$sample" >/dev/full 2>"$err"
code=$?
set -e
[ "$code" -eq 1 ] || { echo "--check -q > /dev/full: exit $code, not 1"; exit 1; }
