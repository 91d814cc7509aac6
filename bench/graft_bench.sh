#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# qpatch graft against `cp` of the same output bytes on the same file system. DIR holds one shard
# with KEPT_MB of main-model tensors and a packed int4 Qwen3.5-27B-sized MTP head, so the graft
# writes the BF16 head (~850 MB) as a new shard and rewrites that shard without the packed head;
# the baseline copies exactly the files the graft writes (cp, same file system). Each round
# restores DIR from a pristine copy outside the timing, with a cold-ish cache dropped when run as
# root. Prints each run, the medians, the ratio and the peak RSS (GNU time -v).
# Usage: bench/graft_bench.sh [BUILD_DIR] [WORK_DIR]   (ROUNDS=5, KEPT_MB=512)
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
qpatch=$(realpath "$build/qpatch")
work=${2:-$(mktemp -d -p "${TMPDIR:-/tmp}")}
rounds=${ROUNDS:-5}
kept=${KEPT_MB:-512}
trap 'rm -rf "$work"' EXIT
python3 "$here/make_graft_checkpoints.py" "$work/pristine" "$kept"
fs=$(findmnt -n -o FSTYPE -T "$work")
echo "file system: $fs ($(df -h --output=source "$work" | tail -1)); DIR shard $(du -sh "$work/pristine/dir" | cut -f1), DONOR head $(du -sh "$work/pristine/donor/model-00002-of-00002.safetensors" | cut -f1)"
graft_times=() cp_times=() rss=()
for round in $(seq 1 "$rounds"); do
  rm -rf "$work/dir" "$work/copy"
  cp -r --reflink=never "$work/pristine/dir" "$work/dir"
  sync
  /usr/bin/time -v -o "$work/time.txt" "$qpatch" graft --from "$work/pristine/donor" "$work/dir" >/dev/null
  graft_times+=("$(awk -F': ' '/Elapsed \(wall clock\)/ {split($2, t, ":"); print t[1] * 60 + t[2]}' "$work/time.txt")")
  rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")")
  outputs=("$work/dir/model-mtp-grafted.safetensors" "$work/dir/model-00001-of-00001-rewritten.safetensors")
  mkdir -p "$work/copy"
  sync
  start=$(date +%s.%N)
  cp --reflink=never "${outputs[@]}" "$work/copy/"
  sync "$work/copy"/*
  end=$(date +%s.%N)
  cp_times+=("$(echo "$end - $start" | bc)")
  echo "round $round: graft ${graft_times[-1]} s (peak RSS ${rss[-1]} KB), cp ${cp_times[-1]} s, output $(du -cb "${outputs[@]}" | tail -1 | cut -f1) bytes"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
g=$(median "${graft_times[@]}") c=$(median "${cp_times[@]}") r=$(median "${rss[@]}")
echo "median: graft $g s, cp $c s, ratio $(echo "scale=2; $g / $c" | bc), peak RSS $r KB"
