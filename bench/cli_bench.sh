#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Whole-process timings on a 1T-parameter-class layout (Kimi-K2-like: 211,673 tensors over 64
# shards, 27 MB of header JSON, data as sparse holes), with same-run baselines:
#   floor   walk_headers: read 8 + N bytes per shard and walk every entry with simdjson on-demand
#   peer    bench/python_check.py: the same check in Python (struct + json + re)
#   start   qpatch --version
# Prints medians (hyperfine) and peak RSS (GNU time), then the ratios.
# Usage: bench/cli_bench.sh [BUILD_DIR]   (configure the build with -DQPATCH_BUILD_BENCH=ON)
set -euo pipefail
build=${1:-build-bench}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
if [[ ! -x "$build/walk_headers" && ! -x "$build/bench/walk_headers" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQPATCH_BUILD_BENCH=ON \
    -DQPATCH_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" >/dev/null
walk="$build/bench/walk_headers"
qpatch="$build/qpatch"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/qpatch-synth" kimi-k2-w4a16 "$work/kimi"
echo "layout: $(ls "$work/kimi"/*.safetensors | wc -l) shards, $(du -sh --apparent-size "$work/kimi" | cut -f1) apparent, $(du -sh "$work/kimi" | cut -f1) on disk"

hyperfine --warmup 3 --runs 15 --export-json "$work/times.json" --style basic \
  -n floor "$walk $work/kimi" \
  -n inspect "$qpatch inspect --summary $work/kimi" \
  -n check "$qpatch --check $work/kimi" \
  -n python "python3 $here/python_check.py $work/kimi" \
  -n start "$qpatch --version" -i >/dev/null

rss() {  # median peak RSS in KiB over 5 runs
  for _ in 1 2 3 4 5; do
    /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -n 1
  done | sort -n | sed -n 3p
}
header_kib=$(python3 - "$work/kimi" <<'PY'
import os, struct, sys
d = sys.argv[1]
print(sum(struct.unpack("<Q", open(os.path.join(d, f), "rb").read(8))[0]
          for f in os.listdir(d) if f.endswith(".safetensors")) // 1024)
PY
)
rss_floor=$(rss "$walk" "$work/kimi")
rss_inspect=$(rss "$qpatch" inspect --summary "$work/kimi")
rss_check=$(rss "$qpatch" --check "$work/kimi")
rss_python=$(rss python3 "$here/python_check.py" "$work/kimi")

python3 - "$work/times.json" "$header_kib" "$rss_floor" "$rss_inspect" "$rss_check" "$rss_python" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
median = {name: r["median"] * 1000 for name, r in results.items()}
header_kib, floor_rss, inspect_rss, check_rss, python_rss = map(int, sys.argv[2:])
print(f"| run | median ms | vs floor | peak RSS MiB | RSS / header bytes |")
print(f"|---|---:|---:|---:|---:|")
rows = [("floor (walk_headers)", "floor", floor_rss), ("qpatch inspect --summary", "inspect", inspect_rss),
        ("qpatch --check", "check", check_rss), ("python_check.py", "python", python_rss),
        ("qpatch --version", "start", None)]
for label, key, rss in rows:
    rss_text = f"{rss / 1024:.1f}" if rss else "-"
    ratio_text = f"{rss / header_kib:.2f}" if rss else "-"
    print(f"| {label} | {median[key]:.1f} | {median[key] / median['floor']:.2f}x | {rss_text} | {ratio_text} |")
print(f"\nheader bytes: {header_kib / 1024:.1f} MiB; python / check: {median['python'] / median['check']:.1f}x")
PY
