#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Download the files SOURCES lists, at their commits, into the trees the harness reads:
#   huggingface/transformers         -> $TRANSFORMERS_SRC/<path>
#   huggingface/optimum              -> $OPTIMUM_SRC/<path>
#   vllm-project/compressed-tensors  -> $CT_SRC/<path>
#   intel/auto-round                 -> $AUTO_ROUND_SRC/<path>
#   rows marked quark-src            -> $QUARK_SRC/<owner>+<repo>@<commit>/<path>
# Rows marked quark-src:<suffix> are excerpts (verbatim parts, saved as <path><suffix>) and rows whose commit is not a
# commit (UNKNOWN-...) were read through an index: the script says so; put those files there by hand.
# Rows whose commit is store:<id> cannot be downloaded (the store that held them names no commit): the script
# says so; put those files at $TRANSFORMERS_SRC/store/<id>/<path> by hand. Never run in CI (it needs the network).
set -eu
here=$(dirname "$0")
: "${TRANSFORMERS_SRC:?set TRANSFORMERS_SRC}"
: "${OPTIMUM_SRC:=$TRANSFORMERS_SRC/../optimum-src}"
: "${CT_SRC:=$TRANSFORMERS_SRC/../ct-src}"
: "${AUTO_ROUND_SRC:=$TRANSFORMERS_SRC/../auto-round-src/e98f1c12084f311a1f142f00423ae7a9e52a7c32}"
: "${QUARK_SRC:=$TRANSFORMERS_SRC/../tf-quark}"
grep -v '^#' "$here/SOURCES" | while read -r path repo commit mark; do
  [ -n "$path" ] || continue
  qdir=$QUARK_SRC/$(echo "$repo" | tr / +)@$commit
  case "$mark" in
    quark-src)
      case "$commit" in
        *[!0-9a-f]*|'') echo "skip $path: $repo $commit is no commit; place it at $qdir/$path" >&2
                        continue ;;
      esac
      mkdir -p "$(dirname "$qdir/$path")"
      curl -fsSL "https://raw.githubusercontent.com/$repo/$commit/$path" -o "$qdir/$path"
      echo "$repo $commit $path"
      continue ;;
    quark-src:*)
      echo "skip $path: an excerpt of $repo $commit; place it at $qdir/$path${mark#quark-src:}" >&2
      continue ;;
  esac
  case "$repo" in
    huggingface/transformers) root=$TRANSFORMERS_SRC ;;
    huggingface/optimum) root=$OPTIMUM_SRC ;;
    vllm-project/compressed-tensors) root=$CT_SRC ;;
    intel/auto-round) root=$AUTO_ROUND_SRC ;;
    *) echo "skip $path: $repo $commit (not a repository that can be downloaded)" >&2; continue ;;
  esac
  case "$commit" in
    store:*) echo "skip $path: $commit has no commit to download; place it at $root/store/${commit#store:}/$path" >&2
             continue ;;
  esac
  mkdir -p "$root/$(dirname "$path")"
  curl -fsSL "https://raw.githubusercontent.com/$repo/$commit/$path" -o "$root/$path"
  echo "$repo $commit $path"
done
