#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `qpatch inspect` under a real pseudo-terminal of 80 columns (script(1), bsdutils): the table
# fits, names are cut from the left, and -v (like a pipe) gets every column whole.
# Usage: tty_inspect_test.sh QPATCH BUILD_DIR EXPECTED_STDOUT
set -eu
qpatch=$1
cd "$2"
expected=$3
sample=sample/qwen3.5-27b-w4a16-mtp
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tty() { # run "$@" on an 80-column pseudo-terminal; its output without the terminal's CRs
  NO_COLOR=1 script -qec "stty cols 80 rows 24; $*" /dev/null | tr -d '\r'
}
tty "$qpatch" inspect --only "'^mtp\\.'" "$sample" >"$out/mtp"
diff -u "$expected" "$out/mtp"
tty "$qpatch" inspect "$sample" >"$out/all"
widest=$(LC_ALL=C.UTF-8 wc -L <"$out/all")
[ "$widest" -le 80 ] || { echo "inspect is $widest columns wide on an 80-column terminal"; exit 1; }
grep -q '^…el\.visual\.blocks\.0\.mlp\.linear_fc1  dense BF16  ' "$out/all" ||
  { echo "a long module name is not cut from the left"; exit 1; }
tty "$qpatch" inspect -v --only "'^mtp\\.fc\$'" "$sample" >"$out/verbose"
grep -q '^mtp.fc  *linear  *-  *dense BF16 \[5120, 10240\]  *quant!  *dense  *—  *model_extra_tensors.safetensors$' "$out/verbose" ||
  { echo "inspect -v on a terminal is not whole:"; cat "$out/verbose"; exit 1; }
