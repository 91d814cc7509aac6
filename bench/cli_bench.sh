#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Whole-process timings on a 1T-parameter-class layout (Kimi-K2-like: 211,673 tensors over 64
# shards, 27 MB of header JSON, data as sparse holes), with same-run baselines:
#   floor   walk_headers: read 8 + N bytes per shard and walk every entry with simdjson on-demand
#   peer    bench/python_check.py: the same check in Python (struct + json + re)
#   start   qpatch --version
# Prints medians (hyperfine, in interleaved rounds) and peak RSS (GNU time), then the ratios.
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

# Rounds of 3 runs of every command, one command after the other: this shared machine drifts
# between fast and slow phases over tens of seconds, and 15 runs of one command and then 15 of
# the next compared one phase with another. A ratio is taken within each round, then the median.
rounds=${ROUNDS:-7}
for round in $(seq 1 "$rounds"); do
  hyperfine --warmup 1 --runs 3 --export-json "$work/round-$round.json" --style none \
    -n floor "$walk $work/kimi" \
    -n inspect "$qpatch inspect --summary $work/kimi" \
    -n check "$qpatch --check $work/kimi" \
    -n python "python3 $here/python_check.py $work/kimi" \
    -n start "$qpatch --version" -i >/dev/null
done

rss() {  # median peak RSS in KiB over 5 runs
  for _ in 1 2 3 4 5; do
    # `--check` exits 1 on this layout (it needs a patch for vLLM 0.20 and older): the peak is
    # what is read here, not the status, which pipefail would otherwise turn into an exit.
    { /usr/bin/time -f %M "$@" 2>&1 >/dev/null || true; } | tail -n 1
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

python3 - "$work" "$rounds" "$header_kib" "$rss_floor" "$rss_inspect" "$rss_check" "$rss_python" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
header_kib, floor_rss, inspect_rss, check_rss, python_rss = map(int, sys.argv[3:])
times, ratios = {}, {}
for round_ in range(1, rounds + 1):
    results = {r["command"]: r for r in json.load(open(f"{work}/round-{round_}.json"))["results"]}
    for name, r in results.items():
        times.setdefault(name, []).extend(t * 1000 for t in r["times"])
    ratios.setdefault("python/check", []).append(results["python"]["median"] / results["check"]["median"])
    for name in results:
        ratios.setdefault(name, []).append(results[name]["median"] / results["floor"]["median"])
median = {name: statistics.median(values) for name, values in times.items()}
ratio = {name: statistics.median(values) for name, values in ratios.items()}
print(f"{rounds} rounds x 3 runs; medians of all runs; ratios: median over rounds of the ratio within a round")
print(f"| run | median ms | vs floor | peak RSS MiB | RSS / header bytes |")
print(f"|---|---:|---:|---:|---:|")
rows = [("floor (walk_headers)", "floor", floor_rss), ("qpatch inspect --summary", "inspect", inspect_rss),
        ("qpatch --check", "check", check_rss), ("python_check.py", "python", python_rss),
        ("qpatch --version", "start", None)]
for label, key, rss in rows:
    rss_text = f"{rss / 1024:.1f}" if rss else "-"
    ratio_text = f"{rss / header_kib:.2f}" if rss else "-"
    print(f"| {label} | {median[key]:.1f} | {ratio[key]:.2f}x | {rss_text} | {ratio_text} |")
spread = sorted(ratios["check"])
print(f"\nheader bytes: {header_kib / 1024:.1f} MiB; python / check: {ratio['python/check']:.1f}x"
      f" (rounds: {min(ratios['python/check']):.1f}x to {max(ratios['python/check']):.1f}x);"
      f" check / floor by round: {spread[0]:.2f}x to {spread[-1]:.2f}x")
PY
