#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A checkpoint directory this user cannot write (a shared model store): the patch stops before
# any write with exit 4, a message that names the directory and the commands that write nothing,
# and every byte as it was. As root (CI) the run drops to uid/gid 65534 with setpriv, since root
# writes anywhere.
# Usage: read_only_dir_test.sh QPATCH BUILD_DIR
set -eu
qpatch=$1
build=$2
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$build/sample/qwen3.5-27b-w4a16-mtp" "$work/ck"
run=""
if [ "$(id -u)" -eq 0 ]; then
  chown -R 65534:65534 "$work/ck"
  chmod 755 "$work"
  run="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
chmod a-w "$work/ck"
before=$(cd "$work/ck" && ls -lA --time-style=full-iso | sha256sum)
set +e
NO_COLOR=1 $run "$qpatch" "$work/ck" >"$work/out" 2>"$work/err"
code=$?
set -e
[ "$code" -eq 4 ] || { echo "exit $code, not 4"; cat "$work/err"; exit 1; }
expected="qpatch: error: $work/ck/.qpatch: cannot create .qpatch: Permission denied (the checkpoint directory is not writable here: --dry-run prints the patch and --check judges, writing nothing); nothing was changed"
head -n 1 "$work/err" | grep -qxF "$expected" || { echo "message:"; cat "$work/err"; echo "expected: $expected"; exit 1; }
after=$(cd "$work/ck" && ls -lA --time-style=full-iso | sha256sum)
[ "$before" = "$after" ] || { echo "the directory changed"; exit 1; }
# --check on the same directory judges it, writing nothing.
set +e
$run "$qpatch" --check -q "$work/ck"
code=$?
set -e
[ "$code" -eq 1 ] || { echo "--check: exit $code, not 1"; exit 1; }
echo ok
