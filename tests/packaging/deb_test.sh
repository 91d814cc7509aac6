#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The .deb: cpack builds it, its Depends (read off the binary by dpkg-shlibdeps) name the shared
# libraries the binary links and are all installed here, and `dpkg -i` into a test root lays out
# a binary that runs, its man page and the completions.
# Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out/pkg" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log"; fail "cpack"; }
deb=$(ls "$out"/pkg/qpatch_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for library in libc6 libstdc++6 libpcre2-8-0 libsimdjson; do
  grep -q "$library" <<<"$depends" || fail "Depends lacks $library: $depends"
done
for package in $(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/ //g'); do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    fail "Depends names $package, which is not installed here"
done
root=$out/root
mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info"
touch "$root/var/lib/dpkg/status"
# The test root has no libc of its own: its dependencies are this machine's, checked above.
dpkg --root="$root" --force-depends --log=/dev/null -i "$deb" >/dev/null 2>&1 || fail "dpkg -i"
for file in usr/bin/qpatch usr/share/man/man1/qpatch.1.gz usr/share/bash-completion/completions/qpatch \
  usr/share/zsh/vendor-completions/_qpatch usr/share/fish/vendor_completions.d/qpatch.fish \
  usr/share/doc/qpatch/copyright usr/share/doc/qpatch/changelog.gz; do
  [[ -f $root/$file ]] || fail "the .deb did not install $file"
done
"$root/usr/bin/qpatch" --version | grep -q '^qpatch ' || fail "the installed binary does not run"
dpkg --root="$root" -s qpatch | grep -q '^Status: install ok installed' || fail "dpkg -s"
# Debian's own package checker: no error and no warning (informational tags are allowed).
tags=$(lintian --allow-root --tag-display-limit 0 "$deb" 2>&1 | grep -E '^[EW]: ' || true)
[[ -z $tags ]] || fail "lintian: $tags"
