#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Download the SGLang files listed in SOURCES, each at its commit, into DIR (default
# $SGLANG_SRC), mirroring SGLang's paths. Needs network; never run in CI.
set -eu
dir=${1:-${SGLANG_SRC:?give DIR or set SGLANG_SRC}}
here=$(cd "$(dirname "$0")" && pwd)
# Each line: PATH COMMIT [DEST] (DEST: where the copy goes when two commits of PATH are kept).
grep -v '^#' "$here/SOURCES" | while read -r path commit dest; do
  [ -n "$path" ] || continue
  case "$commit" in
    store:*) echo "skipped $path: no commit known ($commit); see SOURCES" >&2; continue ;;
  esac
  dest=${dest:-$path}
  mkdir -p "$dir/$(dirname "$dest")"
  curl -fsSL "https://raw.githubusercontent.com/sgl-project/sglang/$commit/$path" -o "$dir/$dest"
  echo "$commit $path"
done
