#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peer baseline: what a careful script does today (struct + json + re) for the same check as
`qpatch --check` on a compressed-tensors checkpoint: read every shard header, group tensors into
modules, tell dense from packed, and test each dense linear against ignore (exact or re.match)
and targets (name, re.match, or the "Linear" class). Exit 1 when a dense linear would be
quantized. It validates far less than qpatch does."""
import json
import os
import re
import struct
import sys

COMPANIONS = re.compile(r"\.(weight_packed|weight_scale|weight_shape|weight_zero_point|qweight|"
                        r"qzeros|scales|g_idx|weight_scale_inv|input_scale)$")


def main(directory):
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)["quantization_config"]
    ignore = config.get("ignore", [])
    targets = [t for g in config.get("config_groups", {}).values() for t in g.get("targets", [])]
    modules = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        for tensor, entry in header.items():
            if tensor == "__metadata__":
                continue
            module, _, param = tensor.rpartition(".")
            info = modules.setdefault(module, {"packed": False, "weight": None})
            if COMPANIONS.search(tensor):
                info["packed"] = True
            elif param == "weight":
                info["weight"] = entry
    regexes = [re.compile(e[3:]) for e in ignore if e.startswith("re:")]
    exact = set(e for e in ignore if not e.startswith("re:"))
    wrong = 0
    for module, info in modules.items():
        weight = info["weight"]
        if info["packed"] or weight is None or len(weight["shape"]) != 2:
            continue
        if module in exact or any(r.match(module) for r in regexes):
            continue
        if any(t == module or (t.startswith("re:") and re.match(t[3:], module)) or t == "Linear"
               for t in targets) and not module.endswith("embed_tokens") and module != "lm_head":
            wrong += 1
    print(f"{len(modules)} modules, {wrong} dense linears quantized by the config")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
