# SPDX-License-Identifier: Apache-2.0
"""What SGLang builds from a Qwen3.5 checkpoint, and how its own quantization code decides each
layer. The decisions are SGLang's functions, read from a source tree (see SOURCES and
fetch_sources.sh) by vllm_source.VllmSource and run unchanged: each method's
QuantizationConfig subclass (from_config, override_quantization_method, get_quant_method) and
the helpers they call (compressed_tensors/utils.py should_ignore_layer, find_matched_target;
quantization/utils/utils.py get_linear_quant_method, get_dynamic_override, override_config;
awq/awq.py is_layer_skipped_awq; quark/utils.py should_ignore_layer and
check_equal_or_regex_match, Quark's own copies).

Only the naming around them is modelled by hand (the prefix each layer is built at, its class,
the packed_modules_mapping its quant config gets, which layers get quant_config=None, the MTP
draft); each point cites the SGLang file, class and commit it comes from. SGLang's repository
could not be read at one commit (the source index holds each path at scattered commits,
docs/research/sglang-harness.md), so the two naming eras are data here, not read from a tree.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vllm_diff"))

import vllm_source  # noqa: E402
from vllm_source import Marker, VllmSource  # noqa: E402
# compressed-tensors' QuantizationArgs, reduced as for vLLM (the same pydantic model).
from vllm_model import _QuantizationArgs, _present  # noqa: E402

vllm_source.FAKE_ROOTS.update({"sglang", "sgl_kernel", "pydantic", "numpy"})

Q = "python/sglang/srt/layers/quantization/"


# -- stand-ins: layer classes for isinstance() and class-name targets --------------------------
# layers/linear.py: LinearBase and its subclasses (SGLang keeps vLLM's class names, which
# compressed-tensors' find_matched_target compares with `module.__class__.__name__`).
class LinearBase:
    def __init__(self, prefix: str = ""):
        self.prefix = prefix
        self.scheme = None


class ColumnParallelLinear(LinearBase): ...
class MergedColumnParallelLinear(ColumnParallelLinear): ...
class QKVParallelLinear(ColumnParallelLinear): ...
class RowParallelLinear(LinearBase): ...
class ReplicatedLinear(LinearBase): ...


# layers/vocab_parallel_embedding.py: ParallelLMHead(VocabParallelEmbedding), not a LinearBase.
class VocabParallelEmbedding:
    def __init__(self, prefix: str = ""):
        self.prefix = prefix
        self.scheme = None


class ParallelLMHead(VocabParallelEmbedding): ...


class FusedMoE:  # layers/moe/fused_moe_triton (Qwen3-VL-MoE's experts in qwen3_vl_diff.py)
    # Read by fp8.py get_quant_method when it builds UnquantizedFusedMoEMethod (kernel choice).
    use_triton_kernels = False
    use_flashinfer_trtllm_moe = False

    def __init__(self, prefix: str = ""):
        self.prefix = prefix


class RadixAttention:  # layers/radix_attention.py: isinstance() targets only (fp8, modelopt)
    pass


class _Envs:
    """sglang.srt.environ.envs: every variable unset (SGLANG_FP8_IGNORED_LAYERS,
    SGLANG_FLASHINFER_NVFP4_PER_TOKEN_ACTIVATION, ...)."""

    class _Var:
        def get(self):
            return None

        def is_set(self):
            return False

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._Var()


class Unquantized:
    """Base of the stand-ins for SGLang's unquantized methods (quantization/unquant.py)."""

    def __init__(self, *args, **kwargs):
        pass


class UnquantizedLinearMethod(Unquantized): ...
class UnquantizedEmbeddingMethod(Unquantized): ...
class UnquantizedFusedMoEMethod(Unquantized): ...


class _ScalarTypes:
    """sgl_kernel.scalar_type.scalar_types: names compared by identity only."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return name


_SCALAR = _ScalarTypes()
# marlin_utils.py check_marlin_supported / verify_marlin_supported: the quant types and group
# sizes Marlin takes on a CUDA GPU of capability >= 8.0 (what qpatch assumes): with zero points
# uint4 (AWQ), without uint4b8 and uint8b128 (GPTQ); group sizes -1, 32, 64, 128. A stand-in
# for marlin_utils.py @653d854 (query_marlin_supported_quant_types, _check_marlin_supported,
# read: the sets are these), which imports sgl_kernel at module level.
_MARLIN_GROUPS = [-1, 32, 64, 128]


def _check_marlin_supported(quant_type, group_size, has_zp=False, *args, **kwargs):
    types = ["uint4"] if has_zp else ["uint4b8", "uint8b128"]
    return quant_type in types and group_size in _MARLIN_GROUPS


def _verify_marlin_supported(quant_type, group_size, has_zp=False):
    if not _check_marlin_supported(quant_type, group_size, has_zp):
        raise ValueError(f"Marlin does not support weight_bits = {quant_type}, "
                         f"group_size = {group_size}, has_zp = {has_zp}")


def _stand_ins() -> dict:
    ns = {c.__name__: c for c in (LinearBase, ColumnParallelLinear, MergedColumnParallelLinear,
                                  QKVParallelLinear, RowParallelLinear, ReplicatedLinear,
                                  VocabParallelEmbedding, ParallelLMHead, FusedMoE,
                                  RadixAttention,
                                  UnquantizedLinearMethod, UnquantizedEmbeddingMethod,
                                  UnquantizedFusedMoEMethod)}
    # The platform: a CUDA GPU (awq.py _is_cuda/_is_hip/_is_npu/_is_xpu).
    ns.update(_is_cuda=True, _is_hip=False, _is_npu=False, _is_xpu=False,
              # auto_round/routing.py's module flags and the predicates fp8.py calls at
              # get_quant_method time (sglang.srt.utils is_npu ...): a CUDA GPU.
              _is_cpu=False, _is_cpu_amx_available=False, _is_musa=False,
              is_npu=lambda: False, is_cpu=lambda: False, is_hip=lambda: False,
              is_cuda=lambda: True, is_xpu=lambda: False, envs=_Envs(),
              # configs/model_config.py @001adf56: REQUANTIZATION_METHODS = ["quark_mxfp4"]
              # (base_config.py _modelopt_override_quantization_method imports it).
              REQUANTIZATION_METHODS=["quark_mxfp4"],
              scalar_types=_SCALAR, check_marlin_supported=_check_marlin_supported,
              verify_marlin_supported=_verify_marlin_supported,
              check_marlin_supports_layer=lambda layer, group_size: True,
              check_moe_marlin_supports_layer=lambda layer, group_size: True,
              QuantizationArgs=_QuantizationArgs)
    return ns


@dataclasses.dataclass
class Layer:
    """One layer SGLang builds: `prefix` is the name it asks the quant config about."""
    model: str            # "target" or "draft"
    prefix: str
    cls: type
    modules: list[str]    # checkpoint modules loaded into it (shards in order)
    quant_config: bool = True  # False: built with quant_config=None (or a plain nn.Linear)


# qwen3_5_mtp.py @008b79d _mtp_quant_config's Quark branch (sgl-project/sglang#23146, the fix of
# #23113; qpatch dates it 2026-04-20, src/engine/sglang/history.cpp): eras judged as this day
# or later have it.
QUARK_MTP_GATE_FROM = "2026-04-20"
# configs/model_config.py _parse_modelopt_quant_config's MIXED_PRECISION branch, read in upstream
# history (fork mirrors carrying sgl-project/sglang main to b98d4721, 2026-08-22): always
# "w4afp8" before #20407 (75a7879fd, 2026-03-14); then "modelopt_mixed" for Nemotron-H only;
# from #27906 (b1942fc3e, 2026-07-05) "modelopt_mixed" when a quantized_layers entry's quant_algo
# is NVFP4 or W4A16_NVFP4. The copy this harness was first written from (@001adf56, not placed in
# main's history: none of the mirrors holds it) reads any non-empty quantized_layers as
# modelopt_mixed; the harness follows the dated history.
MIXED_NEMOTRON_ONLY_FROM = "2026-03-14"
# compressed_tensors/utils.py check_equal_or_regex_match at f69af7b7a (#32736, 2026-07-29, read in
# upstream history; SOURCES stores it beside the older utils.py): a plain ignore entry matches
# the layer name or a dotted suffix of it, where it was a case-insensitive substring.
CT_SUFFIX_FROM = "2026-07-29"
# quantization/utils.py is_layer_skipped on main, read in upstream history (SOURCES stores each
# copy under its own name): `ignored in prefix` from #14251 (2025-12-04) until #23467
# (4323fce82, 2026-04-22), then _module_path_match with _FALLBACK_FUSED_SHARDS (b98d4721's copy:
# also #23973's shorter fallback and #26287's trailing dots). The harness's eras fall on 02-09,
# 03-01, 04-01 (the substring copy) and 08-31 (b98d4721's). The 2025 utils/utils.py @c5bef61 it
# first ran (`prefix in ignored_layers`) is no 2026 main.
SKIPPED_MODULE_PATH_FROM = "2026-04-22"
UTILS_SUBSTRING = Q + "utils.4323fce82p.py"
UTILS_MODULE_PATH = Q + "utils.b98d4721.py"
# fp8.py before #18742 (0e8697781, 2026-03-01): no packed mapping, a FusedMoE always FP8.
FP8_MAPPED_FROM = "2026-03-01"
FP8_UNMAPPED = Q + "fp8.0e8697781p.py"
CT_UTILS_32736 = "python/sglang/srt/layers/quantization/compressed_tensors/utils.f69af7b7a.py"
MIXED_BY_NVFP4_LAYER_FROM = "2026-07-05"
# modelopt_quant.py before #18546 (33c33a7d, 2026-02-21; its parent e239f8aa85f7f2e9ad9831ec6bec3cb5ec96d1cd): each config class's
# own is_layer_excluded (FP8: substrings; NVFP4: the whole name) and every FusedMoE quantized.
MODELOPT_UNIFIED_FROM = "2026-02-21"
MODELOPT_PER_CLASS = Q + "modelopt_quant.33c33a7dp.py"


# Qwen3-VL's hf_to_sglang_mapper, which the Qwen3.5 VLM classes inherit from their first commit
# (27c44765, 2026-02-10) until #23471 (9814cc89, 2026-04-28; gfx95 and NPU earlier, not judged
# here): model_loader/loader.py _get_quantization_config calls the target's
# quant_config.apply_weight_name_mapper(hf_to_sglang_mapper); the MTP draft's class
# (Qwen3_5ForCausalLMMTP) has none (docs/research/sglang-qwen3vl-mapper.md). Executed from
# upstream copies of that span (SOURCES): WeightsMapper (models/utils.py @7c7b2a8c), the mapper
# literal (qwen3_vl.py @7c7b2a8c), and each config's apply_weight_name_mapper:
# compressed_tensors.py and modelopt_quant.py @7c7b2a8c, quark.py and fp8.py @712b01d8 (Quark's
# from #19425, 2026-02-26; FP8's from #21280, 2026-04-03).
MAPPER_UNTIL = "2026-04-28"
QUARK_MAPPER_FROM = "2026-02-26"
FP8_MAPPER_FROM = "2026-04-03"
MAPPER_SOURCES = {
    "utils": "python/sglang/srt/models/utils.7c7b2a8c.py",
    "qwen3_vl": "python/sglang/srt/models/qwen3_vl.7c7b2a8c.py",
    "compressed-tensors": (Q + "compressed_tensors/compressed_tensors.7c7b2a8c.py",
                           "CompressedTensorsConfig"),
    "modelopt": (Q + "modelopt_quant.7c7b2a8c.py", "ModelOptQuantConfig"),
    "modelopt_mixed": (Q + "modelopt_quant.7c7b2a8c.py", "ModelOptMixedPrecisionConfig"),
    "quark": (Q + "quark/quark.712b01d8.py", "QuarkConfig"),
    "fp8": (Q + "fp8.712b01d8.py", "Fp8Config"),
}


def _class_member(path: str, cls: str, member: str):
    """The ast node of `member` (a method or a class attribute) of class `cls` in `path`."""
    import ast
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == member:
                    return item
                if (isinstance(item, ast.Assign) and len(item.targets) == 1
                        and getattr(item.targets[0], "id", None) == member):
                    return item
    raise SglangUnmodelled(f"{path}: no {cls}.{member}")


def _exec_nodes(path: str, nodes, ns: dict) -> dict:
    import ast
    exec(compile(ast.Module(body=list(nodes), type_ignores=[]), path, "exec"), ns)
    return ns


def load_qwen3_vl_mapper(root: str):
    """(WeightsMapper instance, {config name: apply_weight_name_mapper function}) as the span's
    sources define them."""
    import ast
    from dataclasses import dataclass, field  # noqa: F401  (the class body's names)
    from typing import Any, List, Mapping, Optional  # noqa: F401
    utils = os.path.join(root, MAPPER_SOURCES["utils"])
    with open(utils) as f:
        tree = ast.parse(f.read(), utils)
    nodes = [n for n in tree.body
             if (isinstance(n, ast.ClassDef) and n.name == "WeightsMapper")
             or (isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "WeightsMapping")]
    ns = _exec_nodes(utils, nodes, {"dataclass": dataclass, "field": field, "Any": Any,
                                    "Mapping": Mapping, "Optional": Optional,
                                    "Iterable": list, "torch": None,
                                    "__name__": __name__})
    vl = os.path.join(root, MAPPER_SOURCES["qwen3_vl"])
    assign = _class_member(vl, "Qwen3VLForConditionalGeneration", "hf_to_sglang_mapper")
    mapper = _exec_nodes(vl, [assign], dict(ns))["hf_to_sglang_mapper"]
    fns = {}
    for name in ("compressed-tensors", "modelopt", "quark", "fp8"):
        rel, cls = MAPPER_SOURCES[name]
        path = os.path.join(root, rel)
        fns[name] = _exec_nodes(path, [_class_member(path, cls, "apply_weight_name_mapper")],
                                {"List": List})["apply_weight_name_mapper"]
    # ModelOptMixedPrecisionConfig.apply_weight_name_mapper calls
    # super().apply_weight_name_mapper(...): ModelOptQuantConfig's, bound here by name.
    rel, cls = MAPPER_SOURCES["modelopt_mixed"]
    path = os.path.join(root, rel)
    node = _class_member(path, cls, "apply_weight_name_mapper")
    src = ast.unparse(node).replace("super().apply_weight_name_mapper(",
                                    "_modelopt_base_apply(self, ")
    mixed_ns = {"_modelopt_base_apply": fns["modelopt"], "List": List}
    exec(compile(src, path, "exec"), mixed_ns)
    fns["modelopt_mixed"] = mixed_ns["apply_weight_name_mapper"]
    return mapper, fns


# -- naming ------------------------------------------------------------------------------------
# The two eras qpatch names (src/engine/sglang/history.cpp): before sgl-project/sglang#18926
# ("[Qwen3.5] Support block-wise FP8 quantization and model adaptation", opened 2026-02-17) and
# after it; and, after it, the MTP draft with the unmerged #35887.
@dataclasses.dataclass(frozen=True)
class Era:
    name: str
    text_prefix: str        # where Qwen3VLForConditionalGeneration builds the text model
    vision_prefix: str      # where it builds the vision tower
    vision_quant: bool      # the vision tower gets the quant config
    gdn_fused: bool         # Qwen3_5GatedDeltaNet builds in_proj_qkvz / in_proj_ba
    packed: dict            # the target class's packed_modules_mapping
    draft_prefix: str       # Qwen3_5ForCausalLMMTP's inner model
    draft_packed: dict      # the draft class's packed_modules_mapping
    date: str = ""          # the day qpatch judges the era as (sglang_diff.py QPATCH_ENGINE)


_TEXT_PACKED = {"qkv_proj": ["q_proj", "k_proj", "v_proj"],
                "gate_up_proj": ["gate_proj", "up_proj"],
                "in_proj_qkvz": ["in_proj_qkv", "in_proj_z"],
                "in_proj_ba": ["in_proj_b", "in_proj_a"]}

ERAS = {
    # Before #18926. qwen3_5.py @cf4465f3a8beb6ce66ed09cfe1c4b4d1fc952f60 (the first Qwen3.5
    # file): Qwen3_5GatedDeltaNet.__init__ builds in_proj_qkv (MergedColumnParallelLinear),
    # in_proj_z, in_proj_b, in_proj_a (ColumnParallelLinear) at add_prefix("in_proj_qkv",
    # prefix) etc., conv1d with quant_config=None; no class declares packed_modules_mapping, so
    # model_loader/loader.py _get_quantization_config gives {}; EntryClass is the two VLM
    # classes only. qwen3_vl.py @2409eacc3cd5681e0608210c755be3988a45614f
    # Qwen3VLForConditionalGeneration.__init__: `self.visual = ...(quant_config=quant_config,
    # prefix=add_prefix("visual", prefix))`, `self.model = language_model_cls(...,
    # prefix=add_prefix("model", prefix))`; VisionAttention's fused projection is qkv_proj
    # (load_weights: attn.qkv. -> attn.qkv_proj.). The draft's inner model: #18489's
    # Qwen3_5MultiTokenPredictor (the first SGLang MTP file; the public index's only copy of
    # that class) builds it at add_prefix("mtp", prefix), fc a plain nn.Linear
    # (docs/research/sglang-versions.md section 6; #18926's "prefix from model to mtp" text had
    # suggested "model").
    "before-18926": Era("before-18926", "model.", "visual.", True, False, {}, "mtp.", {},
                        date="2026-02-09"),
    # From #18926 until #21019 (2026-03-23): sammysun0711/sglang@07d9ce3e (after #18937)
    # Qwen3_5GatedDeltaNet.__init__ builds in_proj_qkv (MergedColumnParallelLinear), in_proj_z,
    # in_proj_b, in_proj_a apart; no class declares packed_modules_mapping. From #21019 until
    # #23471 (2026-04-28, CUDA): xbfs/sglang@c72ed544 fuses in_proj_qkvz / in_proj_ba, still with
    # no packed_modules_mapping. Every era before #23471 (these two and before-18926) has the
    # target's quant config renamed by Qwen3-VL's hf_to_sglang_mapper (MAPPER_UNTIL,
    # SglangEngine._apply_mapper); before-23471-fp8 is the same era on 2026-04-05, after #21280
    # gave Fp8Config the hook.
    "before-21019": Era("before-21019", "model.language_model.", "model.visual.", False, False,
                        {}, "mtp.", {}, date="2026-03-01"),
    "before-23471": Era("before-23471", "model.language_model.", "model.visual.", False, True,
                        {}, "mtp.", {}, date="2026-04-01"),
    "before-23471-fp8": Era("before-23471-fp8", "model.language_model.", "model.visual.", False,
                            True, {}, "mtp.", {}, date="2026-04-05"),
    # From #18926 on. qwen3_vl.py (xbfs/sglang@c72ed544bf29e9bc75a2960a40215364f774bce3,
    # sgl-project copies of later files agree) Qwen3VLForConditionalGeneration.__init__:
    # `self.model = language_model_cls(..., prefix=add_prefix("model.language_model",
    # prefix))`, the vision tower `quant_config=None, prefix=add_prefix("model.visual",
    # prefix)`. qwen3_5.py @005fa711897e800d45bc46e72e02ab730fca3b31: GDN in_proj_qkvz /
    # in_proj_ba (MergedColumnParallelLinear), conv1d quant_config=None;
    # Qwen3_5ForConditionalGeneration.packed_modules_mapping =
    # Qwen3_5ForCausalLM.packed_modules_mapping (_TEXT_PACKED) and hf_to_sglang_mapper = None.
    # qwen3_5_mtp.py @008b79d2358b08adf9b6c879625030f890c8c4e2 Qwen3_5ForCausalLMMTP:
    # `self.model = Qwen3_5ForCausalLM(config, quant_config, prefix=add_prefix("mtp",
    # prefix), is_nextn=True)`, declares no packed_modules_mapping (sglang#35797).
    "after-18926": Era("after-18926", "model.language_model.", "model.visual.", False, True,
                       _TEXT_PACKED, "mtp.", {}, date="2026-08-31"),
    # sgl-project/sglang#35887 (open): Qwen3_5ForCausalLMMTP.packed_modules_mapping =
    # Qwen3_5ForCausalLM.packed_modules_mapping.
    "after-18926+35887": Era("after-18926+35887", "model.language_model.", "model.visual.",
                             False, True, _TEXT_PACKED, "mtp.", _TEXT_PACKED,
                             date="2026-08-31"),
}


def _decoder_layer(model, ck, built, layer_type, present, era, quant=True, attn_quant=None):
    """Qwen3_5LinearDecoderLayer / Qwen3_5AttentionDecoderLayer (qwen3_5.py): `linear_attn`
    (Qwen3_5GatedDeltaNet) or `self_attn` (QKVParallelLinear qkv_proj, RowParallelLinear
    o_proj), then `mlp` (Qwen2MoeMLP: MergedColumnParallelLinear gate_up_proj,
    RowParallelLinear down_proj) at add_prefix("mlp", prefix.replace(".linear_attn", "")).
    `attn_quant`: whether the attention / GDN projections get the quant config. qwen3_5.py
    @005fa71 Qwen3_5LinearDecoderLayer.__init__ (`linear_attn_quant_config = (None if
    quant_config and quant_config.get_name() == "modelopt_fp4" else quant_config)`, passed to
    Qwen3_5GatedDeltaNet: in_proj_qkvz, in_proj_ba and out_proj) and
    Qwen3_5AttentionDecoderLayer.__init__ (`attn_quant_config`, the same test, for qkv_proj
    and o_proj); the mlp keeps quant_config. The same gate is in qwen3_5.py @cf4465f
    (docs/research/sglang-versions.md section 1)."""
    aq = quant if attn_quant is None else (quant and attn_quant)
    if layer_type == "linear_attention" and era.gdn_fused:
        parts = [("linear_attn.in_proj_qkvz", MergedColumnParallelLinear,
                  ["linear_attn.in_proj_qkv", "linear_attn.in_proj_z"], aq),
                 ("linear_attn.in_proj_ba", MergedColumnParallelLinear,
                  ["linear_attn.in_proj_b", "linear_attn.in_proj_a"], aq)]
    elif layer_type == "linear_attention":
        parts = [("linear_attn.in_proj_qkv", MergedColumnParallelLinear,
                  ["linear_attn.in_proj_qkv"], aq),
                 ("linear_attn.in_proj_z", ColumnParallelLinear, ["linear_attn.in_proj_z"], aq),
                 ("linear_attn.in_proj_b", ColumnParallelLinear, ["linear_attn.in_proj_b"], aq),
                 ("linear_attn.in_proj_a", ColumnParallelLinear, ["linear_attn.in_proj_a"], aq)]
    else:
        parts = [("self_attn.qkv_proj", QKVParallelLinear,
                  ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"], aq)]
    if layer_type == "linear_attention":
        parts += [("linear_attn.conv1d", ColumnParallelLinear, ["linear_attn.conv1d"], False),
                  ("linear_attn.out_proj", RowParallelLinear, ["linear_attn.out_proj"], aq)]
    else:
        parts += [("self_attn.o_proj", RowParallelLinear, ["self_attn.o_proj"], aq)]
    parts += [("mlp.gate_up_proj", MergedColumnParallelLinear,
               ["mlp.gate_proj", "mlp.up_proj"], quant),
              ("mlp.down_proj", RowParallelLinear, ["mlp.down_proj"], quant)]
    out = []
    for name, cls, shards, q in parts:
        modules = [f"{ck}.{s}" for s in shards if present(f"{ck}.{s}")]
        if modules:
            out.append(Layer(model, f"{built}.{name}", cls, modules, q))
    return out


def _vision_layers(present, era) -> list[Layer]:
    """Qwen3_VisionTransformer (qwen3_vl.py): blocks.{i}.attn (VisionAttention: QKVParallelLinear
    qkv_proj, RowParallelLinear proj), blocks.{i}.mlp (ColumnParallelLinear linear_fc1,
    RowParallelLinear linear_fc2), merger (the same two)."""
    parts = [("blocks.0.attn.qkv_proj", "blocks.0.attn.qkv", QKVParallelLinear),
             ("blocks.0.attn.proj", "blocks.0.attn.proj", RowParallelLinear),
             ("blocks.0.mlp.linear_fc1", "blocks.0.mlp.linear_fc1", ColumnParallelLinear),
             ("blocks.0.mlp.linear_fc2", "blocks.0.mlp.linear_fc2", RowParallelLinear),
             ("merger.linear_fc1", "merger.linear_fc1", ColumnParallelLinear),
             ("merger.linear_fc2", "merger.linear_fc2", RowParallelLinear)]
    return [Layer("target", f"{era.vision_prefix}{built}", cls, [f"model.visual.{ck}"],
                  era.vision_quant)
            for built, ck, cls in parts if present(f"model.visual.{ck}")]


def target_layers(ck_prefix, layer_types, present, era, attn_quant=True) -> list[Layer]:
    """model_loader/loader.py _initialize_model builds every class with prefix "".
    Qwen3_5ForCausalLM.__init__ (qwen3_5.py): embed_tokens a VocabParallelEmbedding without
    quant_config; layers make_layers(..., prefix=f"{prefix}.layers") -> "{prefix}.layers.{i}".
    Qwen3VLForConditionalGeneration: ParallelLMHead(..., quant_config=quant_config,
    prefix=add_prefix("lm_head", prefix)) -> "lm_head" (tie_word_embeddings is false here)."""
    out = _vision_layers(present, era)
    built_model = era.text_prefix.rstrip(".")
    for i, layer_type in enumerate(layer_types):
        out += _decoder_layer("target", f"{ck_prefix}layers.{i}", f"{built_model}.layers.{i}",
                              layer_type, present, era, attn_quant=attn_quant)
    if present("lm_head"):
        out.append(Layer("target", "lm_head", ParallelLMHead, ["lm_head"]))
    return out


def draft_layers(mtp_layers, present, era, attn_quant=True) -> list[Layer]:
    """configs/model_config.py rewrites architectures[0] of the draft to Qwen3_5ForCausalLMMTP
    (is_draft_model), so the draft is a model class of its own with a quant config of its own,
    built by the loader from the same quantization_config with that class's
    packed_modules_mapping. qwen3_5_mtp.py @008b79d Qwen3_5ForCausalLMMTP.__init__: `self.fc =
    nn.Linear(2 * hidden, hidden, bias=False)` (a plain torch Linear: no quant method asked,
    always dense); the inner Qwen3_5ForCausalLM at add_prefix("mtp", "") with
    num_hidden_layers=1 and full_attention_interval=1 (its one layer is attention); lm_head a
    ParallelLMHead with the draft's quant config at add_prefix("lm_head", "") (the
    checkpoint's lm_head is loaded into it). _mtp_quant_config drops the config for
    modelopt_mixed, serialized modelopt_fp4, NPU (not here) and, from #23146, quark with an
    exclude entry starting with "mtp." (SglangEngine._mtp_quant_config)."""
    out = []
    if present("mtp.fc"):
        out.append(Layer("draft", "mtp.fc", ReplicatedLinear, ["mtp.fc"], quant_config=False))
    built = era.draft_prefix.rstrip(".")
    for i in range(mtp_layers):
        out += _decoder_layer("draft", f"mtp.layers.{i}", f"{built}.layers.{i}",
                              "full_attention", present, era, attn_quant=attn_quant)
    if present("lm_head"):
        out.append(Layer("draft", "lm_head", ParallelLMHead, ["lm_head"]))
    return out


class SglangRaised(Exception):
    pass


class SglangUnmodelled(Exception):
    """A case this harness cannot judge (its verdict would be a guess)."""


_RAISES = (ValueError, TypeError, KeyError, AssertionError, NotImplementedError)


class SglangEngine:
    name = "sglang"
    Unmodelled = SglangUnmodelled

    # quant_method -> the config classes model_config.py _verify_quantization ends with on a
    # CUDA GPU: an override class first (GPTQMarlinConfig / AWQMarlinConfig answer
    # override_quantization_method for a config Marlin takes), else the plain class.
    METHODS = {
        "compressed-tensors": [(Q + "compressed_tensors/compressed_tensors.py",
                                "CompressedTensorsConfig")],
        "gptq": [(Q + "gptq/gptq.py", "GPTQMarlinConfig"), (Q + "gptq/gptq.py", "GPTQConfig")],
        "awq": [(Q + "awq/awq.py", "AWQMarlinConfig"), (Q + "awq/awq.py", "AWQConfig")],
    }
    # The methods whose class is picked by the registry walk below (layers/quantization/
    # __init__.py BASE_QUANTIZATION_METHODS): registry name -> (file, class, extra top-level
    # names executed with it).
    REGISTRY = {
        "fp8": (Q + "fp8.py", "Fp8Config", ()),
        "modelopt": (Q + "modelopt_quant.py", "ModelOptFp8Config", ()),
        "modelopt_fp8": (Q + "modelopt_quant.py", "ModelOptFp8Config", ()),
        "modelopt_fp4": (Q + "modelopt_quant.py", "ModelOptFp4Config", ()),
        "modelopt_mixed": (Q + "modelopt_quant.py", "ModelOptMixedPrecisionConfig", ()),
        "bitsandbytes": (Q + "bitsandbytes.py", "BitsAndBytesConfig",
                         ("is_layer_skipped_bnb",)),
        "auto-round": (Q + "auto_round/auto_round.py", "AutoRoundConfig", ()),
    }
    # Loaded apart (_load_quark): quark/utils.py's helpers share compressed_tensors/utils.py's
    # names, so Quark's own copies go in Quark's namespace only.
    QUARK = (Q + "quark/quark.py", "QuarkConfig")
    QUARK_UTILS = (Q + "quark/utils.py", ("deep_compare", "should_ignore_layer",
                                          "check_equal_or_regex_match",
                                          "_is_equal_or_regex_match"))
    # BASE_QUANTIZATION_METHODS' order (quantization/__init__.py; read in two 2026 copies, no
    # sgl-project commit named: fp8, mxfp8, blockwise_int8, modelopt, modelopt_fp8,
    # modelopt_fp4, nvfp4_online, modelopt_mixed, w8a8_int8, w8a8_fp8, awq, awq_marlin,
    # bitsandbytes, gguf, gptq, gptq_marlin, moe_wna16, compressed-tensors, w4afp8,
    # petit_nvfp4, quark, quark_mxfp4, auto-round, ...). _verify_quantization asks each class's
    # override_quantization_method in this order and the first answer wins; the classes this
    # harness loads, in that order (the others are taken to answer None for these configs:
    # not read).
    OVERRIDE_ORDER = ["fp8", "modelopt", "modelopt_fp8", "modelopt_fp4", "modelopt_mixed",
                      "awq", "awq_marlin", "bitsandbytes", "gptq", "gptq_marlin",
                      "compressed-tensors", "quark", "auto-round"]
    NEW_METHODS = ("fp8", "modelopt", "bitsandbytes", "auto-round", "quark")

    def __init__(self, root: str, era: str = "after-18926"):
        self.era = ERAS[era]
        self.stand = _stand_ins()
        self.src = VllmSource(root, self.stand, package="python/sglang/srt")
        base = self.src.load(Q + "base_config.py", "QuantizationConfig")
        self.stand["QuantizationConfig"] = base["QuantizationConfig"]
        helpers = [
            (Q + "compressed_tensors/utils.py", ("should_ignore_layer",
             "check_equal_or_regex_match", "find_matched_target", "_find_first_match",
             "_is_equal_or_regex_match", "_match_fused_layer",
             "is_activation_quantization_format")),
            (UTILS_MODULE_PATH if self.era.date >= SKIPPED_MODULE_PATH_FROM else UTILS_SUBSTRING,
             ("is_layer_skipped", "override_config", "get_dynamic_override",
              "get_linear_quant_method")),
            (Q + "awq/awq.py", ("is_layer_skipped_awq",)),
        ]
        for rel, names in helpers:
            ns = self.src.namespace(rel)
            ns.update(self.stand)
            if rel == UTILS_MODULE_PATH:
                self.src.load(rel, "_module_path_match", ns=ns)
            self.src.load(rel, *names, ns=ns)
            if rel.endswith("compressed_tensors/utils.py") and self.era.date >= CT_SUFFIX_FROM:
                # From #32736 should_ignore_layer (unchanged) calls the new
                # check_equal_or_regex_match: a plain entry is the name or a dotted suffix.
                self.src.load(CT_UTILS_32736, "check_equal_or_regex_match", ns=ns)
            self.stand.update({k: ns[k] for k in names})
        self.src.stand_ins = self.stand
        self.classes = {}
        for method, chain in self.METHODS.items():
            self.classes[method] = [self._load_class(rel, cls, chain) for rel, cls in chain]
        # Which kernel scheme a quantized layer gets is not a matching question:
        # _get_scheme_from_parts is where compressed-tensors picks one.
        ct = self.classes["compressed-tensors"][0]
        ct._get_scheme_from_parts = lambda self, **kwargs: Marker("CompressedTensorsScheme")
        ct._check_scheme_supported = lambda self, *args, **kwargs: True
        # auto_round/routing.py builds GPTQ / AWQ configs per layer (`from
        # sglang.srt.layers.quantization.gptq import GPTQMarlinConfig, ...` inside its
        # functions): the real classes of gptq/gptq.py and awq/awq.py answer those imports.
        gptq_marlin, gptq_plain = self.classes["gptq"]
        awq_marlin, awq_plain = self.classes["awq"]
        self.stand.update(GPTQMarlinConfig=gptq_marlin, GPTQConfig=gptq_plain,
                          AWQMarlinConfig=awq_marlin, AWQConfig=awq_plain)
        self.registry = {"gptq": gptq_plain, "gptq_marlin": gptq_marlin, "awq": awq_plain,
                         "awq_marlin": awq_marlin, "compressed-tensors": ct}
        self.registry.update(self._load_registry())
        self.registry["quark"] = self._load_quark()
        self.mapper, self.mapper_fns = load_qwen3_vl_mapper(root)

    def _load_class(self, rel, cls, chain):
        ns = self.src.namespace(rel)
        ns.update(self.stand)
        names = [c for r, c in chain if r == rel]
        extra = ["check_marlin_format"] if rel.endswith("gptq.py") else []
        self.src.load(rel, *extra, *names, ns=ns)
        # the classes of one file refer to each other (AWQMarlinConfig -> AWQConfig)
        return ns[cls]

    def _load_registry(self) -> dict:
        """Execute the new methods' config classes, one namespace per file (the classes of
        modelopt_quant.py refer to each other and to their base ModelOptQuantConfig)."""
        import types
        # auto_round/auto_round.py get_quant_method: `from sglang.srt.layers.quantization.
        # auto_round import routing` then routing.get_quant_method: routing.py's functions,
        # executed, answer that import.
        rel = Q + "auto_round/routing.py"
        ns = self.src.namespace(rel)
        ns.update(self.stand)
        self.src.load(rel, "get_layer_config", "apply_awq_quant_layer",
                      "apply_gptq_quant_layer", "get_quant_method", ns=ns)
        self.stand["routing"] = types.SimpleNamespace(
            get_quant_method=ns["get_quant_method"], get_layer_config=ns["get_layer_config"])
        registry = dict(self.REGISTRY)
        if self.era.date < FP8_MAPPED_FROM:
            registry["fp8"] = (FP8_UNMAPPED, "Fp8Config", ())
        if self.era.date < MODELOPT_UNIFIED_FROM:
            # ModelOptMixedPrecisionConfig arrived later (#20407): its entry stays on the newer
            # file, and those eras read MIXED_PRECISION as w4afp8 before reaching it.
            for name in ("modelopt", "modelopt_fp8", "modelopt_fp4"):
                _, cls, extra = registry[name]
                registry[name] = (MODELOPT_PER_CLASS, cls, extra)
        by_file: dict[str, list[str]] = {}
        for rel, cls, extra in registry.values():
            names = by_file.setdefault(rel, [])
            for n in (*extra, cls):
                if n not in names:
                    names.append(n)
        for rel in (Q + "modelopt_quant.py", MODELOPT_PER_CLASS):
            if rel in by_file:
                by_file[rel].insert(0, "ModelOptQuantConfig")
        loaded = {}
        for rel, names in by_file.items():
            ns = self.src.namespace(rel)
            ns.update(self.stand)
            self.src.load(rel, *names, ns=ns)
            loaded[rel] = ns
        return {name: loaded[rel][cls] for name, (rel, cls, _) in registry.items()}

    def _load_quark(self):
        """quark/quark.py @ce1ec3af QuarkConfig (from_config, get_quant_method,
        apply_weight_name_mapper, _find_matched_config, get_linear_scheme) with quark/utils.py
        @382abd60 (should_ignore_layer, check_equal_or_regex_match, _is_equal_or_regex_match,
        deep_compare), executed. utils.py runs in a namespace of its own (its `import re` is
        the standard library's; its module-level `from aiter... import` binds a Marker), and
        quark.py's `from ...quark.utils import deep_compare, should_ignore_layer` is answered
        with those functions, not with compressed_tensors/utils.py's namesakes. Which scheme a
        quantized layer gets (and whether the GPU has it) is not a matching question, as for
        compressed-tensors' _get_scheme_from_parts: _get_scheme_from_config and get_moe_scheme
        answer a marker, _check_scheme_supported True (get_linear_scheme still runs
        _find_matched_config on the layer). QuarkKVCacheMethod and QuarkFusedMoEMethod are not
        executed (a Marker answers for them: a quant method)."""
        rel_utils, names = self.QUARK_UTILS
        uns = self.src.namespace(rel_utils)
        uns.update(self.stand)
        self.src.load(rel_utils, *names, ns=uns)
        rel, cls = self.QUARK
        ns = self.src.namespace(rel)
        ns.update(self.stand)
        ns.update({n: uns[n] for n in names})
        self.src.load(rel, "QuarkLinearMethod", cls, ns=ns)
        quark = ns[cls]
        quark._get_scheme_from_config = lambda self, config: Marker("QuarkLinearScheme")
        quark.get_moe_scheme = lambda self, module, layer_name: Marker("QuarkMoEScheme")
        quark._check_scheme_supported = lambda self, *args, **kwargs: True
        return quark

    # -- reading the config as SGLang does -------------------------------------------------
    def quant_config(self, config_json: dict, packed: dict):
        """model_loader/weight_utils.py get_quant_config: config.json's quantization_config
        (text_config's for a VLM when the top level has none), packed_modules_mapping added to
        it, then from_config of the class model_config.py _verify_quantization chose."""
        qc = config_json.get("quantization_config")
        if qc is None and isinstance(config_json.get("text_config"), dict):
            qc = config_json["text_config"].get("quantization_config")
        if qc is None:
            return None
        method = str(qc.get("quant_method", "")).lower()
        if method in self.NEW_METHODS or method.startswith("modelopt"):
            return self._registry_config(copy.deepcopy(qc), packed)
        if method not in self.classes:
            raise SglangUnmodelled(f"{method}: not modelled by this harness")
        qc = copy.deepcopy(qc)
        qc["packed_modules_mapping"] = copy.deepcopy(packed)
        *override, plain = self.classes[method]
        for cls in override:
            if cls.override_quantization_method(qc, None) is not None:
                return cls.from_config(copy.deepcopy(qc))
        return plain.from_config(copy.deepcopy(qc))

    def _registry_config(self, qc: dict, packed: dict):
        """configs/model_config.py @001adf56. _parse_quant_hf_config: a quantization_config
        without quant_method or with quant_method "modelopt" is rewritten in place by
        _parse_modelopt_quant_config({"quantization": quant_cfg}) (quant_algo
        MIXED_PRECISION -> modelopt_mixed with a non-empty quantized_layers, else w4afp8; a
        quant_algo containing "FP4"/"NVFP4" -> modelopt_fp4; containing "FP8" ->
        modelopt_fp8; else unchanged). _verify_quantization (no --quantization given): the
        first class of QUANTIZATION_METHODS whose override_quantization_method answers names
        the method, else quant_method itself; a name outside QUANTIZATION_METHODS raises
        "Unknown quantization method: ...". weight_utils.py get_quant_config then passes that
        (mutated) dict, with the model class's packed_modules_mapping added, to the chosen
        class's from_config."""
        if "quant_method" not in qc or qc["quant_method"] == "modelopt":
            algo = qc.get("quant_algo", None)
            parsed = None
            if algo == "MIXED_PRECISION":
                # Only Qwen3.5 is judged here (judge() refuses other architectures): never
                # Nemotron-H.
                layers = qc.get("quantized_layers") or {}
                nvfp4 = any(str(info.get("quant_algo", "")).upper() in ("NVFP4", "W4A16_NVFP4")
                            for info in layers.values() if isinstance(info, dict))
                mixed = self.era.date >= MIXED_BY_NVFP4_LAYER_FROM and nvfp4
                parsed = {"quant_method": "modelopt_mixed" if mixed else "w4afp8",
                          "quant_algo": algo}
            elif algo and ("FP4" in algo or "NVFP4" in algo):
                parsed = {"quant_method": "modelopt_fp4", "quant_algo": algo}
            elif algo and "FP8" in algo:
                parsed = {"quant_method": "modelopt_fp8", "quant_algo": algo}
            if parsed:
                qc.update(parsed)
        quant_method = str(qc.get("quant_method", "")).lower()
        for name in self.OVERRIDE_ORDER:
            answer = self.registry[name].override_quantization_method(qc, None)
            if answer:
                quant_method = answer
                break
        if quant_method == "w4afp8":
            # W4AFp8Config (w4afp8.py @b98d4721) reads no skip list and builds every linear FP8
            # and every MoE W4AFP8: not the ModelOpt layers stored, whatever the lists say. qpatch
            # reports that as a case-level finding (config_read_as), compared as a rejection.
            raise SglangRaised("read as w4afp8 (model_config.py _parse_modelopt_quant_config)")
        if quant_method not in self.registry:
            raise SglangRaised(f"Unknown quantization method: {quant_method}. Must be one of "
                               "[...].")
        qc["packed_modules_mapping"] = copy.deepcopy(packed)
        return self.registry[quant_method].from_config(qc)

    @staticmethod
    def _name(cfg) -> str | None:
        return cfg.get_name() if cfg is not None else None

    def _mtp_quant_config(self, cfg):
        """qwen3_5_mtp.py @008b79d _mtp_quant_config (Qwen3_5ForCausalLMMTP.__init__ builds
        everything with its answer): None for modelopt_mixed and for modelopt_fp4 with
        is_checkpoint_nvfp4_serialized (the NPU branch does not apply here); and, in eras
        judged as QUARK_MTP_GATE_FROM (#23146) or later, None for quark when an exclude entry
        starts with "mtp.":
            if quant_config and quant_config.get_name() == "quark":
                exclude_layers = getattr(quant_config, "exclude_layers", [])
                if any(isinstance(layer, str) and layer.startswith("mtp.")
                       for layer in exclude_layers):
                    return None
        The draft class has no hf_to_sglang_mapper, so exclude_layers is `exclude` as
        written."""
        name = self._name(cfg)
        if name == "modelopt_mixed" or (
                name == "modelopt_fp4" and getattr(cfg, "is_checkpoint_nvfp4_serialized",
                                                   False)):
            return None
        if name == "quark" and self.era.date >= QUARK_MTP_GATE_FROM:
            exclude_layers = getattr(cfg, "exclude_layers", [])
            if any(isinstance(layer, str) and layer.startswith("mtp.")
                   for layer in exclude_layers):
                return None
        return cfg

    def judge(self, arch, ck_prefix, layer_types, mtp_layers, config_json, files, tensors):
        if arch != "Qwen3_5ForConditionalGeneration":
            # qwen3_5.py EntryClass (cf4465f, c72ed54, 005fa71) lists the VLM classes only.
            raise SglangUnmodelled(f"{arch} is not an SGLang entry class: SGLang falls back "
                                   "to its Transformers backend (not modelled)")
        present = _present(tensors)
        era = self.era
        try:
            cfg = self.quant_config(config_json, era.packed)
            self._apply_mapper(cfg)
            draft_cfg = self._mtp_quant_config(
                self.quant_config(config_json, era.draft_packed))
        except SglangRaised as e:
            return [(None, e)]
        except _RAISES as e:
            return [(None, SglangRaised(str(e)))]
        target = target_layers(ck_prefix, layer_types, present, era,
                               attn_quant=self._name(cfg) != "modelopt_fp4")
        draft = draft_layers(mtp_layers, present, era,
                             attn_quant=self._name(draft_cfg) != "modelopt_fp4")
        if cfg is None:
            return [(layer, "dense") for layer in target + draft]
        return ([(layer, self._decide(cfg, layer)) for layer in target]
                + [(layer, self._decide(draft_cfg, layer)) for layer in draft])

    def _apply_mapper(self, cfg, own_class: bool = False):
        """The loader's hook for the target (see MAPPER_UNTIL): the era's
        apply_weight_name_mapper of the config's class, where it has one by the era's day.
        `own_class`: Qwen3-VL's own classes, which keep the mapper past MAPPER_UNTIL."""
        if cfg is None or (self.era.date >= MAPPER_UNTIL and not own_class):
            return
        # get_name(): "compressed_tensors" for CompressedTensorsConfig.
        name = {"compressed_tensors": "compressed-tensors", "modelopt_fp8": "modelopt",
                "modelopt_fp4": "modelopt"}.get(self._name(cfg), self._name(cfg))
        if name == "quark" and self.era.date < QUARK_MAPPER_FROM:
            return
        if name == "fp8" and self.era.date < FP8_MAPPER_FROM:
            return
        fn = self.mapper_fns.get(name)
        if fn is not None:
            fn(cfg, self.mapper)

    def _decide(self, cfg, layer: Layer):
        if not layer.quant_config or cfg is None:
            return "dense"
        try:
            method = cfg.get_quant_method(layer.cls(layer.prefix), prefix=layer.prefix)
        except _RAISES as e:
            return SglangRaised(str(e))
        if method is None or isinstance(method, Unquantized):
            return "dense"
        return "quantized"
