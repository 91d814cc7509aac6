#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential harness: qpatch's verdicts against SGLang's own matching code.

The driver of tools/vllm_diff (Runner, run_methods, the case generators) with SGLang's engine
model (sglang_model.py): for seeded random (layout, config) pairs of each method it writes a
small Qwen3.5 checkpoint, asks qpatch (`--check --json --engine sglang@DATE`) what SGLang does
with each module, runs SGLang's functions (from a source tree fetched by fetch_sources.sh) on
the same files, and counts detection, fix-then-clean, confined and idempotent per method.

  tools/sglang_diff/fetch_sources.sh /tmp/sglang-src
  SGLANG_SRC=/tmp/sglang-src tools/sglang_diff/sglang_diff.py --qpatch build/qpatch \
      --era after-18926 --cases 2000

Eras (--era): before-18926 (qpatch sglang@2026-02-09), before-21019 (sglang@2026-03-01),
before-23471 (sglang@2026-04-01) and before-23471-fp8 (sglang@2026-04-05), with the target's
entries renamed by Qwen3-VL's inherited mapper (see sglang_model.MAPPER_UNTIL),
after-18926 (sglang@2026-08-31), and
after-18926+35887 (the unmerged #35887; qpatch judges it only among all versions, so the
driver runs `--engine sglang` and keeps the findings that apply to the #35887 version).
"""
from __future__ import annotations

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "vllm_diff"))

from sglang_model import ERAS, SglangEngine  # noqa: E402
from vllm_diff import case_arguments, run_harness  # noqa: E402

# The --engine value qpatch judges each era by (src/engine/sglang/history.cpp: #18926 from
# 2026-02-17, the newest modelled day 2026-08-31; #35887 is a variant of the newest, judged
# only when no day is pinned: tests/engine/versions_test.cpp "2026-02-17+#35887").
QPATCH_ENGINE = {"before-18926": "sglang@2026-02-09", "before-21019": "sglang@2026-03-01",
                 "before-23471": "sglang@2026-04-01", "before-23471-fp8": "sglang@2026-04-05",
                 "after-18926": "sglang@2026-08-31",
                 "after-18926+35887": "sglang"}
METHODS = ["compressed-tensors", "gptq", "awq", "auto-round", "fp8", "modelopt", "modelopt-mixed",
           "bitsandbytes", "quark"]


# The SGLang versions VersionFilter tells apart, as (the day qpatch judges them as, whether
# #35887 is applied): A the era before #18926, B the newest, B+ the newest with #35887.
_VERSIONS = {"A": ("2026-02-09", False), "B": ("2026-08-31", False), "B+": ("2026-08-31", True)}


def _part_holds(part: str, day: str, variant: bool) -> bool:
    """One part of versions.cpp subset_text: "before D", "from D", "D1..D2" (each maybe with
    "(releases)"), "without #35887" after a "from" part or alone, "with #35887"."""
    part = re.sub(r"\s*\([^)]*\)", "", part).strip()
    without = "without #35887" in part
    part = part.replace("without #35887", "").strip()
    if part == "with #35887":
        return variant
    if without and variant:
        return False
    if not part:
        return True
    if part.startswith("before "):
        return day < part.removeprefix("before ")
    if part.startswith("from "):
        return day >= part.removeprefix("from ")
    if ".." in part:
        first, last = part.split("..", 1)
        return first <= day <= last
    return True  # unknown wording: keep it (a disagreement then shows)


def _versions_of(text: str) -> set[str]:
    """The SGLang versions a finding's `versions` entry names."""
    t = text.removeprefix("SGLang").strip().removeprefix("main").strip()
    parts = [p.strip() for p in t.split(",")] if t else [""]
    return {name for name, (day, variant) in _VERSIONS.items()
            if any(_part_holds(p, day, variant) for p in parts)}


class VersionFilter:
    """Keeps the findings of one SGLang version when qpatch judged them all."""

    def __init__(self, version: str):
        self.version = version

    def __call__(self, finding: dict) -> bool:
        versions = finding.get("versions") or []
        return not versions or any(self.version in _versions_of(v) for v in versions)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sglang-src", default=os.environ.get("SGLANG_SRC"),
                    help="SGLang source tree from fetch_sources.sh (default $SGLANG_SRC)")
    case_arguments(ap)
    ap.add_argument("--era", choices=sorted(ERAS), default="after-18926",
                    help="SGLang's naming: before/after #18926, or after it with #35887")
    ap.add_argument("--qpatch-engine", default=None,
                    help="--engine qpatch judges and fixes for (default: the era's, "
                         f"{QPATCH_ENGINE})")
    ap.add_argument("--fix-engine", default=None,
                    help="--engine for the patch SGLang then judges (all: the one patch for "
                         "every engine; default the --qpatch-engine value)")
    args = ap.parse_args()
    if not args.sglang_src:
        ap.error("give --sglang-src or set SGLANG_SRC")
    engine = SglangEngine(args.sglang_src, args.era)
    qpatch_engine = args.qpatch_engine or QPATCH_ENGINE[args.era]
    if qpatch_engine == "sglang":
        # qpatch judges every SGLang version at once: compare the era's findings only.
        engine.keeps_finding = VersionFilter({"before-18926": "A", "after-18926": "B",
                                              "after-18926+35887": "B+"}[args.era])
    methods = args.method or METHODS
    print(f"SGLang source {args.sglang_src} (files and commits: tools/sglang_diff/SOURCES); "
          f"era {args.era}; qpatch {args.qpatch} --engine {qpatch_engine}; "
          f"seeds {args.seed}..{args.seed + args.cases - 1}")
    return run_harness(engine, args, methods, qpatch_engine, args.fix_engine)


if __name__ == "__main__":
    sys.exit(main())
