#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential harness: qpatch's verdicts against transformers' own quantization code (from_pretrained).

The driver is tools/vllm_diff's, unchanged (Runner, run_methods, the cases of cases.py, the layout of layout.py);
only the engine differs: transformers_model.TransformersEngine, which runs transformers' quantizers (and optimum's
GPTQ, compressed-tensors' matching, auto_round's and amd-quark's conversions) from source trees on a hand-modelled
Qwen3.5 module tree. qpatch is asked with `--engine transformers` (--check --json for its verdicts, then the fix,
then again for idempotence).

  TRANSFORMERS_SRC=/work/research/transformers-src tools/transformers_diff/transformers_diff.py \\
      --optimum-src /work/research/optimum-src/v2.1.0 \\
      --ct-src /work/research/ct-src/ac8e2ba82f4e0d5eaa40069f8fc642738f124cd4 \\
      --auto-round-src /work/research/auto-round-src/e98f1c12084f311a1f142f00423ae7a9e52a7c32 \\
      --quark-src /work/src/tf-quark --qpatch /tmp/qpatch-base --cases 2000

The source trees are laid out like their repositories (SOURCES lists every file and the commit it is read at;
fetch_sources.sh downloads them). Cases the harness cannot judge from the source it has are counted apart as
"not judged" (auto-round without --auto-round-src: the conversion is the auto_round library's; quark without
--quark-src: the conversion is amd-quark's _map_to_quark; Qwen3_5ForCausalLM over
model.language_model.* keys: no key renaming for qwen3_5 in the conversion_mapping.py read).
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "vllm_diff"))
sys.path.insert(0, HERE)

from cases import GENERATORS  # noqa: E402
from transformers_model import TransformersEngine  # noqa: E402
from vllm_diff import case_arguments, run_harness  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--transformers-src", default=os.environ.get("TRANSFORMERS_SRC"),
                    help="transformers source tree laid out as the repository, the files of SOURCES "
                         "(default $TRANSFORMERS_SRC)")
    ap.add_argument("--optimum-src", default=os.environ.get("OPTIMUM_SRC"),
                    help="optimum source tree (optimum/gptq/); without it GPTQ is not judged")
    ap.add_argument("--ct-src", default=os.environ.get("CT_SRC"),
                    help="compressed-tensors source tree (src/compressed_tensors/); without it "
                         "compressed-tensors is not judged")
    ap.add_argument("--auto-round-src", default=os.environ.get("AUTO_ROUND_SRC"),
                    help="intel/auto-round source tree (auto_round/), v0.14.2 = e98f1c1; without it "
                         "auto-round is not judged")
    ap.add_argument("--quark-src", default=os.environ.get("QUARK_SRC"),
                    help="tree of transformers' quantizer_quark.py (10cc83c) and amd-quark's _map_to_quark / "
                         "get_layer_quant_config, laid out <owner>+<repo>@<commit>/<path> (SOURCES); without it "
                         "quark is not judged")
    case_arguments(ap)
    ap.add_argument("--fix-engine", default="transformers",
                    help="--engine for the patch whose result transformers judges (all: the one patch that "
                         "must satisfy every engine)")
    ap.add_argument("--qpatch-engine", default="transformers",
                    help="--engine qpatch judges for (vllm: compare transformers' verdicts with qpatch's vLLM "
                         "rules, for a method qpatch does not judge for transformers yet)")
    args = ap.parse_args()
    if not args.transformers_src:
        ap.error("give --transformers-src or set TRANSFORMERS_SRC")
    engine = TransformersEngine(args.transformers_src, args.optimum_src, args.ct_src, args.auto_round_src,
                                args.quark_src)
    methods = args.method or list(GENERATORS)
    print(f"transformers source {args.transformers_src} (files and commits: tools/transformers_diff/SOURCES); "
          f"optimum {args.optimum_src}; compressed-tensors {args.ct_src}; auto-round {args.auto_round_src}; "
          f"quark {args.quark_src}; "
          f"qpatch {args.qpatch} "
          f"--engine {args.qpatch_engine}; seeds {args.seed}..{args.seed + args.cases - 1}")
    return run_harness(engine, args, methods, args.qpatch_engine, args.fix_engine)


if __name__ == "__main__":
    sys.exit(main())
