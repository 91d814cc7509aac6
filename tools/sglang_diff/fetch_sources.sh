#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Download the SGLang files listed in SOURCES, each at its commit, into DIR (default
# $SGLANG_SRC), mirroring SGLang's paths. Needs network; never run in CI.
set -eu
dir=${1:-${SGLANG_SRC:?give DIR or set SGLANG_SRC}}
here=$(cd "$(dirname "$0")" && pwd)
grep -v '^#' "$here/SOURCES" | while read -r path commit; do
  [ -n "$path" ] || continue
  case "$commit" in
    store:*) echo "skipped $path: no commit known ($commit); see SOURCES" >&2; continue ;;
  esac
  mkdir -p "$dir/$(dirname "$path")"
  curl -fsSL "https://raw.githubusercontent.com/sgl-project/sglang/$commit/$path" -o "$dir/$path"
  echo "$commit $path"
done
