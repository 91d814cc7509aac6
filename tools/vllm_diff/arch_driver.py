# SPDX-License-Identifier: Apache-2.0
"""The driver the per-architecture harnesses share (dsv4_diff.py, kimi_k3_diff.py).

Per seed a harness builds one case: the config.json it writes, the tensors, and `judge`, which
runs vLLM's own code on a quantization_config and returns what breaks. The driver writes the
checkpoint, asks qpatch (`--check`), lets it patch (`-q`), asks vLLM's code about the patched
config and qpatch again, and patches once more. Per case:
  detection   qpatch --check exits non-zero exactly when the engine's code finds a problem;
  fix-clean   after qpatch's patch, the engine's code finds none, or qpatch still reports one;
  confined    the patch edits only the keys the harness names (its skip lists);
  idempotent  a second run writes nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import typing

import layout

Judge = typing.Callable[[dict], list]
BuildCase = typing.Callable[[random.Random], tuple]  # -> (config.json dict, tensors, Judge)


def qpatch(binary: str, args: list[str], directory: str) -> int:
    return subprocess.run([binary, *args, directory], capture_output=True, text=True).returncode


def run_case(build: BuildCase, binary: str, engine: str, seed: int, work: str,
             list_keys: tuple[str, ...]):
    config, tensors, judge = build(random.Random(seed))
    directory = os.path.join(work, str(seed))
    text = json.dumps(config, indent=2) + "\n"
    layout.write_checkpoint(directory, tensors, {"config.json": text})
    broken = bool(judge(config["quantization_config"]))
    flags = ["--engine", engine]
    detected = qpatch(binary, ["--check", *flags], directory) != 0
    qpatch(binary, ["-q", *flags], directory)
    with open(os.path.join(directory, "config.json")) as f:
        after_text = f.read()
    after = json.loads(after_text)["quantization_config"]
    still = qpatch(binary, ["--check", *flags], directory) != 0
    broken_after = bool(judge(after))
    qpatch(binary, ["-q", *flags], directory)
    with open(os.path.join(directory, "config.json")) as f:
        again = f.read()

    def rest(quant: dict) -> dict:
        return {k: v for k, v in quant.items() if k not in list_keys}

    return {"detection": detected == broken,
            "fix-then-clean": still == broken_after,
            "confined": rest(after) == rest(config["quantization_config"]),
            "idempotent": again == after_text}, (broken, broken_after)


def main(label: str, description: str, make_build: typing.Callable[..., BuildCase],
         list_keys: tuple[str, ...], engine: str = "vllm",
         extra: typing.Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """`engine` names the source flag (--vllm-src / $VLLM_SRC, --sglang-src / $SGLANG_SRC);
    `extra` adds a harness's own options, whose values make_build gets after the source."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(f"--{engine}-src", dest="src",
                        default=os.environ.get(f"{engine.upper()}_SRC"))
    parser.add_argument("--qpatch", required=True)
    parser.add_argument("--qpatch-engine", default="vllm@2026-08-17" if engine == "vllm" else None)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    if extra:
        extra(parser)
    args = parser.parse_args()
    if not args.src:
        parser.error(f"give --{engine}-src or set {engine.upper()}_SRC")
    options = {k: v for k, v in vars(args).items()
               if k not in ("src", "qpatch", "qpatch_engine", "cases", "seed")}
    build = make_build(args.src, **options)
    if args.qpatch_engine is None:
        args.qpatch_engine = build.qpatch_engine
    totals = {"detection": 0, "fix-then-clean": 0, "confined": 0, "idempotent": 0}
    failed, broken = [], [0, 0]
    with tempfile.TemporaryDirectory() as work:
        for seed in range(args.seed, args.seed + args.cases):
            result, (before, after) = run_case(build, args.qpatch, args.qpatch_engine, seed,
                                               work, list_keys)
            broken[0] += before
            broken[1] += after
            for measure, ok in result.items():
                totals[measure] += ok
            if not all(result.values()):
                failed.append((seed, [m for m, ok in result.items() if not ok]))
    engine_label = {"vllm": "vLLM", "sglang": "SGLang"}.get(engine, engine)
    print(f"{label}: {args.cases} cases; " +
          ", ".join(f"{m} {n}/{args.cases}" for m, n in totals.items()) +
          f"; broken for {engine_label}'s code before the patch {broken[0]}, after it {broken[1]}")
    for seed, measures in failed[:20]:
        print(f"  seed {seed}: {', '.join(measures)}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit("a driver: run dsv4_diff.py or kimi_k3_diff.py")
