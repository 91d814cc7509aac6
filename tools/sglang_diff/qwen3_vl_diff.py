#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential harness for Qwen3-VL checkpoints: qpatch against SGLang's own matching code.

The checkpoints and configs of tools/vllm_diff/qwen3_vl_diff.py (Qwen3VLForConditionalGeneration,
Qwen3VLMoeForConditionalGeneration and Qwen2_5_VLForConditionalGeneration, compressed-tensors
W4A16, FP8 block or AWQ), judged by SGLang's functions from the source tree
sglang_model.py loads, for one era (--era, sglang_model.ERAS): the era's from_config (no packed
mapping: Qwen3-VL's classes declare none, Qwen2.5-VL's gate_up_proj only), the target's quant config
renamed by Qwen3-VL's hf_to_sglang_mapper (its own classes keep it on every platform and past
#23471; Quark's hook from #19425, FP8's from #21280), and get_quant_method for every layer the
class builds, under the names it builds them as (traced by hand in
docs/research/sglang-qwen3vl-classes.md and src/engine/sglang/naming.cpp qwen3_vl_row: that table
is what this harness does not execute). The measures are arch_driver.py's.

  SGLANG_SRC=/path/to/sglang tools/sglang_diff/qwen3_vl_diff.py --qpatch build/qpatch \\
      --era after-18926 --cases 300
"""
from __future__ import annotations

import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "vllm_diff"))

import arch_driver  # noqa: E402
import qwen3_vl_diff as vl  # noqa: E402
from sglang_diff import QPATCH_ENGINE  # noqa: E402
from sglang_model import (ERAS, ColumnParallelLinear, FusedMoE, Layer,  # noqa: E402
                          MergedColumnParallelLinear, ParallelLMHead, QKVParallelLinear,
                          ReplicatedLinear, RowParallelLinear, SglangEngine, SglangRaised,
                          _RAISES)

# The vLLM harness's tables name vLLM's stand-in classes: SGLang's namesakes answer here (its
# get_quant_method's isinstance checks refuse the others).
SGLANG_CLASS = {c.__name__: c for c in (QKVParallelLinear, MergedColumnParallelLinear,
                                        ColumnParallelLinear, RowParallelLinear,
                                        ReplicatedLinear)}


def sglang_table(table):
    """(checkpoint module, built layer, class) rows with SGLang's classes."""
    return [(ck, built, SGLANG_CLASS[cls.__name__]) for ck, built, cls in table]


ATTN = sglang_table(vl.ATTN)
MLP = sglang_table(vl.MLP)
# qwen3_moe.py Qwen3MoeSparseMoeBlock: the experts one FusedMoE at mlp.experts, the router
# `gate` a ReplicatedLinear with quant_config=None (every method but modelslim, #30768).
MOE_MLP = [("mlp.gate", "mlp.gate", ReplicatedLinear), ("mlp.experts", "mlp.experts", FusedMoE)]
# qwen3_vl.py Qwen3_VisionTransformer: VisionAttention names its fused projection qkv_proj
# (load_weights: attn.qkv. -> attn.qkv_proj.); the rest as vLLM names them.
VISION = [(ck, ck.replace("attn.qkv", "attn.qkv_proj"), SGLANG_CLASS[cls.__name__])
          for ck, cls in vl.VISION]


def modules(era, arch: str):
    if vl.architecture(arch) in vl.QWEN2_FAMILY:
        return qwen25_modules(arch)
    """(checkpoint module, SGLang layer, class) of every linear `arch` builds in `era`: the
    text model at era.text_prefix, the vision tower at era.vision_prefix (with the quant config
    only before #18926), lm_head at "lm_head" (Qwen3VLMoeForConditionalGeneration has no
    __init__ of its own)."""
    out = [("lm_head", "lm_head", ParallelLMHead)]
    out += [(f"model.visual.{ck}", f"{era.vision_prefix}{built}", cls) for ck, built, cls in VISION]
    for n in range(vl.LAYERS):
        out += [(f"model.language_model.layers.{n}.{ck}", f"{era.text_prefix}layers.{n}.{built}",
                 cls) for ck, built, cls in ATTN + (MLP if arch == vl.DENSE else MOE_MLP)]
    return out


def qwen25_modules(arch: str):
    """qwen2_5_vl.py and qwen2_vl.py @b98d4721 (unchanged through 2026): Qwen2Model at "model" (layers
    model.layers.N whatever the checkpoint's naming), the vision tower at "visual" with the
    quant config, its attention's fused projection qkv_proj, lm_head at "lm_head"."""
    out = [("lm_head", "lm_head", ParallelLMHead)]
    vision = sglang_table(vl.VISION25 if vl.architecture(arch) == vl.QWEN25 else vl.VISION2)
    out += [(vl.vision_prefix(arch) + ck, "visual." + built.replace("attn.qkv", "attn.qkv_proj"),
             cls) for ck, built, cls in vision]
    for n in range(vl.LAYERS):
        out += [(f"{vl.checkpoint_layers(arch)}{n}.{ck}", f"model.layers.{n}.{built}", cls)
                for ck, built, cls in ATTN + MLP]
    return out


# The packed_modules_mapping each class gives its quant config: Qwen3-VL's and Qwen2-VL's none,
# Qwen2.5-VL's gate_up_proj only (qwen2_5_vl.py @b98d4721).
PACKED = {vl.QWEN25: {"gate_up_proj": ["gate_proj", "up_proj"]}}


def built_with_quant_config(name: str, era, arch: str) -> bool:
    if name.startswith(("model.visual.", "visual.")):
        return era.vision_quant or vl.architecture(arch) in vl.QWEN2_FAMILY
    return not name.endswith("mlp.gate")


def ct_experts_quantized(engine: SglangEngine, cfg, prefix: str) -> bool:
    """A FusedMoE under compressed-tensors as every 2026 SGLang judges it (the stored
    compressed_tensors.py @b553569 is older: it tests the FusedMoE's own name): 
    compressed_tensors_moe.py @107958a48 CompressedTensorsMoEMethod.get_moe_method (b98d4721:
    CompressedTensorsConfig.get_moe_scheme, the same steps) adds "FusedMoE" to the target map
    beside "Linear" and asks get_scheme_dict (should_ignore_layer, then find_matched_target)
    about expert 0's gate/up/down_proj, which must agree; None is dense."""
    if "Linear" in cfg.target_scheme_map and "FusedMoE" not in cfg.target_scheme_map:
        cfg.target_scheme_map["FusedMoE"] = cfg.target_scheme_map["Linear"]
    layer = FusedMoE(prefix)
    dicts = []
    for name in (prefix + ".0.gate_proj", prefix + ".0.up_proj", prefix + ".0.down_proj"):
        if engine.stand["should_ignore_layer"](name, ignore=cfg.ignore,
                                               fused_mapping=cfg.packed_modules_mapping):
            dicts.append(None)
            continue
        target = engine.stand["find_matched_target"](
            layer_name=name, module=layer, targets=cfg.target_scheme_map.keys(),
            fused_mapping=cfg.packed_modules_mapping)
        dicts.append(cfg.target_scheme_map[target])
    if not all(d == dicts[0] for d in dicts):
        raise ValueError("All MoE projections need to have same quantization scheme but found "
                         "multiple")
    return dicts[0] is not None


class Sglang:
    def __init__(self, root: str, era: str):
        self.engine = SglangEngine(root, era)
        self.era = ERAS[era]

    def problems(self, arch: str, storage: dict[str, bool], config: dict) -> list[str]:
        try:
            cfg = self.engine.quant_config(config, PACKED.get(vl.architecture(arch), {}))
            self.engine._apply_mapper(cfg, own_class=True)
        except SglangRaised as e:
            return [f"config raises: {e}"]
        except _RAISES as e:
            return [f"config raises: {e}"]
        built: dict[str, object] = {}
        out = []
        for name, prefix, cls in modules(self.era, arch):
            if prefix not in built:
                layer = Layer("target", prefix, cls, [name],
                              built_with_quant_config(name, self.era, arch))
                if cls is FusedMoE and cfg is not None and cfg.get_name() == "compressed_tensors":
                    try:
                        quantized = ct_experts_quantized(self.engine, cfg, prefix)
                        built[prefix] = "quantized" if quantized else "dense"
                    except _RAISES as e:
                        built[prefix] = SglangRaised(str(e))
                else:
                    built[prefix] = self.engine._decide(cfg, layer)
            state = built[prefix]
            if isinstance(state, Exception):
                out.append(f"{prefix}: raises {state}")
            elif (state == "quantized") != storage[name]:
                out.append(f"{name}: stored {'quantized' if storage[name] else 'BF16'}, built "
                           f"{state}")
        return out


def make_build(root: str, era: str):
    sglang = Sglang(root, era)

    def build(rng: random.Random):
        arch = rng.choice([vl.DENSE, vl.MOE, vl.QWEN25, vl.QWEN25_OLD, vl.QWEN2])
        method = rng.choice(["compressed-tensors", "fp8", "awq"])
        # Storage and lists as for vLLM, with entries also drawn from SGLang's layer names.
        storage, quant = vl.make_case(rng, arch, method, modules(sglang.era, arch))
        config = vl.config_json(arch, quant)
        return (config, vl.tensors(arch, storage, method),
                lambda q: sglang.problems(arch, storage, dict(config, quantization_config=q)))

    build.qpatch_engine = QPATCH_ENGINE[era]
    return build


def options(parser):
    parser.add_argument("--era", choices=sorted(e for e in ERAS if "35887" not in e),
                        default="after-18926")


if __name__ == "__main__":
    sys.exit(arch_driver.main("Qwen3-VL / Qwen2-VL / Qwen2.5-VL under SGLang", __doc__.splitlines()[0], make_build,
                              ("ignore", "ignored_layers", "modules_to_not_convert"),
                              engine="sglang", extra=options))
