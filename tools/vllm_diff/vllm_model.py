# SPDX-License-Identifier: Apache-2.0
"""What vLLM builds from a Qwen3.5 checkpoint, and how its own quantization code decides each
layer. The naming is traced from the model classes of vLLM main 017e9f4 (2026-08-17; every
point cites file and class); the decisions are vLLM's functions, loaded from the checkout by
vllm_source and run unchanged: get_quant_method of each method's QuantizationConfig subclass,
its from_config, apply_vllm_mapper and maybe_update_config, and the model classes'
packed_modules_mapping and hf_to_vllm_mapper.

The same code judges earlier commits (from 9562912, 2026-02-09, Qwen3.5 support #34110): files
and classes that moved are probed for (_METHODS), helpers a version lacks are skipped, and
the construction facts the naming depends on (which layers get the quant config, the GDN
projections, the mapper configure_quant_config passes, the registered architectures) are
read from that commit's model files (ConstructionRules), not keyed by date.
"""
from __future__ import annotations

import copy
import dataclasses
import fnmatch
import importlib
import inspect
import json

from vllm_source import Marker, VllmSource

Q = "vllm/model_executor/layers/quantization/"
M = "vllm/model_executor/models/"


# -- stand-ins: layer classes for isinstance() and class-name targets -------------------------
class LinearBase:
    def __init__(self, prefix: str):
        self.prefix = prefix


class ColumnParallelLinear(LinearBase): ...
class MergedColumnParallelLinear(ColumnParallelLinear): ...
class QKVParallelLinear(ColumnParallelLinear): ...
class RowParallelLinear(LinearBase): ...
class ReplicatedLinear(LinearBase): ...


class VocabParallelEmbedding:
    def __init__(self, prefix: str):
        self.prefix = prefix


class ParallelLMHead(VocabParallelEmbedding): ...


class RoutedExperts:
    moe_config = None

    def __init__(self, prefix: str):
        self.prefix = prefix


class Attention: ...
class MLAAttention: ...


class Unquantized:
    """Base of the stand-ins for vLLM's unquantized methods: a layer that gets one is dense."""

    def __init__(self, *args, **kwargs):
        pass


class UnquantizedLinearMethod(Unquantized): ...
class UnquantizedEmbeddingMethod(Unquantized): ...
class UnquantizedFusedMoEMethod(Unquantized): ...


def _no_transforms(*args, **kwargs):
    # compressed_tensors/transform: no transform_config in the generated cases.
    return [], []


class _FakeTorch:
    """torch as the matching code uses it: dtypes compared by identity (GPTQ/AWQ header scans)."""

    float16, bfloat16, float32 = "F16", "BF16", "F32"

    class nn:  # noqa: N801 - mirrors torch.nn
        Module = object
        Parameter = object

    def __getattr__(self, name):
        return Marker(f"torch.{name}")


class _Platform:
    """vllm.platforms.current_platform as a CUDA GPU with Marlin (what qpatch assumes): the
    INC config before the inc/ package asks is_xpu()/is_cpu() before choosing its GPU path."""

    def __getattr__(self, name):
        if name.startswith("is_"):
            return lambda *a, **k: name in ("is_cuda", "is_cuda_alike")
        if name == "has_device_capability":
            return lambda *a, **k: True
        return Marker(f"current_platform.{name}")


# safetensors dtype -> the stand-in torch dtype (weight_utils._SAFETENSORS_TO_TORCH_DTYPE)
_ST_DTYPES = {d: d for d in ("F16", "BF16", "F32", "F64", "I64", "I32", "I16", "I8", "U8",
                             "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "U32", "U16")}


class _Metadata:
    """get_safetensors_params_metadata over the case's headers (transformers_utils/config.py
    _read_safetensors_metadata_in_dir: every *.safetensors file in the directory)."""

    tensors: dict = {}

    @classmethod
    def get(cls, model_name, revision=None):
        return {name: {"dtype": dtype} for name, dtype in cls.tensors.items()}


def _stand_ins() -> dict:
    ns = {name: obj for name, obj in globals().items()
          if isinstance(obj, type) and (issubclass(obj, (LinearBase, VocabParallelEmbedding,
                                                         RoutedExperts, Unquantized))
                                        or obj in (Attention, MLAAttention))}
    ns.update(FusedMoE=RoutedExperts, torch=_FakeTorch(), current_platform=_Platform(),
              get_linear_transform_schemes=_no_transforms,
              get_safetensors_params_metadata=_Metadata.get,
              _SAFETENSORS_TO_TORCH_DTYPE=_ST_DTYPES,
              is_list_of=lambda v, t: isinstance(v, list) and all(isinstance(x, t) for x in v),
              fnmatch=fnmatch.fnmatch)
    return ns


@dataclasses.dataclass
class Layer:
    """One layer vLLM builds: `prefix` is the name it asks the quant config about."""
    model: str            # "target" or "draft" (speculative decoding)
    prefix: str
    cls: type
    modules: list[str]    # checkpoint modules loaded into it (shards in order)
    quant_config: bool = True  # False: built with quant_config=None


# -- naming --------------------------------------------------------------------------------
def _decoder_layer(model: str, ck: str, vl: str, layer_type: str, present, quant=True,
                   gdn_unfused=None):
    """Qwen3_5DecoderLayer (models/qwen3_5.py): `linear_attn` (QwenGatedDeltaNetAttention,
    layers/mamba/gdn/qwen_gdn_linear_attn.py: in_proj_qkvz and in_proj_ba are
    MergedColumnParallelLinear, conv1d a ColumnParallelLinear built without quant_config,
    out_proj a RowParallelLinear) or `self_attn` (Qwen3NextAttention, qwen3_next.py:
    QKVParallelLinear qkv_proj, RowParallelLinear o_proj), then `mlp` (Qwen3NextMLP =
    qwen2_moe.Qwen2MoeMLP: MergedColumnParallelLinear gate_up_proj, RowParallelLinear
    down_proj). Shards are loaded by the checkpoint names the stacked mapping lists.
    `gdn_unfused`: the GDN before the projector fusion (#34697, c0bd8b13d, 2026-02-18), as
    read from the commit's Qwen3_5GatedDeltaNet: [(attribute, class, prefix suffix)], one
    layer per checkpoint module (in 9562912 in_proj_b's prefix was "in_proj_ba", #34313)."""
    if layer_type == "linear_attention" and gdn_unfused:
        parts = [(f"linear_attn.{suffix}", cls, [f"linear_attn.{attr}"], quant)
                 for attr, cls, suffix in gdn_unfused]
        parts += [("linear_attn.conv1d", ColumnParallelLinear, ["linear_attn.conv1d"], False),
                 ("linear_attn.out_proj", RowParallelLinear, ["linear_attn.out_proj"], quant)]
    elif layer_type == "linear_attention":
        parts = [("linear_attn.in_proj_qkvz", MergedColumnParallelLinear,
                  ["linear_attn.in_proj_qkv", "linear_attn.in_proj_z"], quant),
                 ("linear_attn.in_proj_ba", MergedColumnParallelLinear,
                  ["linear_attn.in_proj_b", "linear_attn.in_proj_a"], quant),
                 ("linear_attn.conv1d", ColumnParallelLinear, ["linear_attn.conv1d"], False),
                 ("linear_attn.out_proj", RowParallelLinear, ["linear_attn.out_proj"], quant)]
    else:
        parts = [("self_attn.qkv_proj", QKVParallelLinear,
                  ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"], quant),
                 ("self_attn.o_proj", RowParallelLinear, ["self_attn.o_proj"], quant)]
    parts += [("mlp.gate_up_proj", MergedColumnParallelLinear,
               ["mlp.gate_proj", "mlp.up_proj"], quant),
              ("mlp.down_proj", RowParallelLinear, ["mlp.down_proj"], quant)]
    out = []
    for name, cls, shards, q in parts:
        modules = [f"{ck}.{s}" for s in shards if present(f"{ck}.{s}")]
        if modules:
            out.append(Layer(model, f"{vl}.{name}", cls, modules, q))
    return out


def _vision_layers(present) -> list[Layer]:
    """Qwen3_VisionTransformer (qwen3_vl.py) under "visual", with the quant config:
    blocks.{i}.attn is Qwen2_5_VisionAttention (qwen2_5_vl.py: QKVParallelLinear "qkv",
    RowParallelLinear "proj"), blocks.{i}.mlp Qwen3_VisionMLP (ColumnParallelLinear
    linear_fc1, RowParallelLinear linear_fc2), merger Qwen3_VisionPatchMerger (the same two).
    patch_embed.proj is a Conv3dLayer, not a LinearBase."""
    parts = [("blocks.0.attn.qkv", QKVParallelLinear), ("blocks.0.attn.proj", RowParallelLinear),
             ("blocks.0.mlp.linear_fc1", ColumnParallelLinear),
             ("blocks.0.mlp.linear_fc2", RowParallelLinear),
             ("merger.linear_fc1", ColumnParallelLinear), ("merger.linear_fc2", RowParallelLinear)]
    return [Layer("target", f"visual.{name}", cls, [f"model.visual.{name}"])
            for name, cls in parts if present(f"model.visual.{name}")]


def target_layers(arch: str, ck_prefix: str, layer_types: list[str], present,
                  rules: "ConstructionRules | None" = None) -> list[Layer]:
    """The target model. initialize_model (model_loader/utils.py) builds the class with
    prefix="". Qwen3_5ForConditionalGeneration (qwen3_5.py) builds
    Qwen3_5ForCausalLM(prefix="language_model"), whose Qwen3_5Model is "language_model.model"
    and whose ParallelLMHead is "language_model.lm_head"; Qwen3_5ForCausalLM alone gives
    "model" and "lm_head". Layers are "{model}.layers.{i}" (make_layers); embed_tokens is a
    VocabParallelEmbedding built without quant_config (Qwen3_5Model.__init__). Whether the
    ParallelLMHead gets the quant config is read from the commit (`rules`): before #42124
    (6f5b53324, 2026-05-26) it was built without one."""
    rules = rules or ConstructionRules.MAIN
    vlm = arch == "Qwen3_5ForConditionalGeneration"
    model = "language_model.model" if vlm else "model"
    head = "language_model.lm_head" if vlm else "lm_head"
    out = []
    if vlm:
        out += _vision_layers(present)
    for i, layer_type in enumerate(layer_types):
        out += _decoder_layer("target", f"{ck_prefix}layers.{i}", f"{model}.layers.{i}",
                              layer_type, present, gdn_unfused=rules.gdn_unfused)
    if present(f"{ck_prefix}embed_tokens"):
        out.append(Layer("target", f"{model}.embed_tokens", VocabParallelEmbedding,
                         [f"{ck_prefix}embed_tokens"], quant_config=False))
    if present("lm_head"):
        out.append(Layer("target", head, ParallelLMHead, ["lm_head"],
                         quant_config=rules.target_lm_head_quant))
    return out


def draft_layers(quant_cfg, hf_quant_config: dict, mtp_layers: int, present,
                 rules: "ConstructionRules | None" = None) -> list[Layer]:
    """The MTP draft (speculative decoding), Qwen3_5MTP (qwen3_5_mtp.py) with prefix "":
    Qwen3_5MultiTokenPredictor under "mtp": `fc` a ColumnParallelLinear "mtp.fc", decoder
    layers "mtp.layers.{i}" of type full_attention, and a ParallelLMHead "lm_head" (checkpoint
    `lm_head` is loaded into it: load_weights keeps names containing "lm_head"). Which of them
    get the quant config is decided by the commit's own __init__ code (`rules`): at main, fc
    is built without one when the config's name is "modelopt_fp4" (#38832, 771913e4a,
    2026-04-03), the layers without one when the checkpoint's quantization_config has a
    `dynamic` key starting "-:" and containing "mtp" (for any method but modelopt_fp4;
    #48816, c8db00b16, 2026-07-23), and lm_head gets it since #42124 (2026-05-26)."""
    rules = rules or ConstructionRules.MAIN
    out = []
    if present("mtp.fc"):
        out.append(Layer("draft", "mtp.fc", ColumnParallelLinear, ["mtp.fc"],
                         quant_config=rules.fc_quant(quant_cfg)))
    layers_quant = rules.mtp_layers_quant(quant_cfg, hf_quant_config)
    for i in range(mtp_layers):
        out += _decoder_layer("draft", f"mtp.layers.{i}", f"mtp.layers.{i}", "full_attention",
                              present, quant=layers_quant, gdn_unfused=rules.gdn_unfused)
    if present("lm_head"):
        out.append(Layer("draft", "lm_head", ParallelLMHead, ["lm_head"],
                         quant_config=rules.draft_lm_head_quant))
    return out


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class ConstructionRules:
    """The construction facts of one vLLM commit that the harness's naming depends on, each
    read from that commit's model files (never keyed by date):
      gdn_unfused          Qwen3_5GatedDeltaNet still builds in_proj_qkv/z/b/a (before #34697);
      target/draft_lm_head_quant  ParallelLMHead(..., quant_config=...) in Qwen3_5ForCausalLM
                           (qwen3_5.py) / Qwen3_5MTP (qwen3_5_mtp.py) (#42124 onwards);
      fc_quant(cfg)        the statements of Qwen3_5MultiTokenPredictor.__init__ that compute
                           the fc's quant_config argument (#38832: `fc_quant = None if ... ==
                           "modelopt_fp4" else quant_config`), executed on the config;
      mtp_layers_quant     the `if` statements of that __init__ that set
                           vllm_config.quant_config before the layers are built (#48816),
                           executed on the config and the checkpoint's quantization_config;
      unstack              configure_quant_config (model_loader/utils.py) passes
                           hf_to_vllm_mapper.get_unstacked_mapper() (else the mapper itself);
      archs                the Qwen3.5 architectures registry.py lists (Qwen3_5ForCausalLM
                           arrived with #50210, ad5d29db7, 2026-07-29)."""

    MAIN: "ConstructionRules"

    def __init__(self, src: VllmSource | None):
        if src is None:  # the naming as of 017e9f4 (for callers without a checkout)
            self.gdn_unfused = None
            self.target_lm_head_quant = self.draft_lm_head_quant = True
            self.unstack = True
            self.archs = {"Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"}
            self._fc = self._layers = None
            return
        import ast
        self._ast = ast
        self.gdn_unfused = None
        if src.has(M + "qwen3_5.py", "Qwen3_5GatedDeltaNet"):
            gdn = src.class_node(M + "qwen3_5.py", "Qwen3_5GatedDeltaNet")
            classes = {c.__name__: c for c in (ColumnParallelLinear, MergedColumnParallelLinear,
                                               RowParallelLinear, ReplicatedLinear)}
            parts = []
            for attr in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"):
                call = self._find_call(gdn, attr)
                if call is None or getattr(call.func, "id", None) not in classes:
                    break
                pre = next(k.value for k in call.keywords if k.arg == "prefix")
                parts.append((attr, classes[call.func.id], pre.values[-1].value.lstrip(".")))
            else:
                self.gdn_unfused = parts
        lm_classes = [n.name for n in src.tree(M + "qwen3_5.py").body
                      if isinstance(n, ast.ClassDef)
                      and self._find_call(n, "lm_head", "ParallelLMHead") is not None]
        self.target_lm_head_quant = self._call_kw(
            src.class_node(M + "qwen3_5.py", lm_classes[0]), "lm_head", "ParallelLMHead")
        self.draft_lm_head_quant = self._call_kw(
            src.class_node(M + "qwen3_5_mtp.py", "Qwen3_5MTP"), "lm_head", "ParallelLMHead")
        init = next(n for n in src.class_node(M + "qwen3_5_mtp.py",
                                              "Qwen3_5MultiTokenPredictor").body
                    if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        rel = str(src.root / (M + "qwen3_5_mtp.py"))
        fc_call = self._find_call(init, "fc")
        fc_kw = next((k.value for k in fc_call.keywords if k.arg == "quant_config"), None)
        # the statements computing the names fc's argument uses (fc_quant = ...)
        used = {n.id for n in ast.walk(fc_kw) if isinstance(n, ast.Name)} \
            if fc_kw is not None else set()
        pre = [st for st in init.body if isinstance(st, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in used - {"quant_config"} for t in st.targets)]
        self._fc = (compile(ast.Module(body=pre, type_ignores=[]), rel, "exec"),
                    compile(ast.Expression(body=fc_kw), rel, "eval")) if fc_kw else None
        sets_qc = [st for st in init.body if isinstance(st, ast.If) and any(
            isinstance(t, ast.Attribute) and t.attr == "quant_config"
            and isinstance(t.value, ast.Name) and t.value.id == "vllm_config"
            for a in ast.walk(st) if isinstance(a, ast.Assign) for t in a.targets)]
        self._layers = compile(ast.Module(body=sets_qc, type_ignores=[]), rel, "exec") \
            if sets_qc else None
        loader = src.text("vllm/model_executor/model_loader/utils.py")
        start = loader.find("def configure_quant_config")
        self.unstack = "get_unstacked_mapper" in loader[start:loader.find("\ndef ", start + 1)]
        registry = src.text(M + "registry.py")
        self.archs = {a for a in ("Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM")
                      if f'"{a}"' in registry}

    @staticmethod
    def _find_call(tree, attr: str, func: str | None = None):
        """The call assigned to `self.<attr>` (to a `func(...)` call when given)."""
        import ast
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and (
                    func is None or getattr(node.value.func, "id", None) == func) and any(
                    isinstance(t, ast.Attribute) and t.attr == attr
                    and isinstance(t.value, ast.Name) and t.value.id == "self"
                    for t in node.targets):
                return node.value
        return None

    def _call_kw(self, cls_node, attr: str, func: str):
        """For `self.<attr> = <func>(...)` in the class: whether it passes a quant_config
        (False also when the class has no such call)."""
        call = self._find_call(cls_node, attr, func)
        if call is None:
            return False
        kw = next((k.value for k in call.keywords if k.arg == "quant_config"), None)
        return kw is not None and not (isinstance(kw, self._ast.Constant) and kw.value is None)

    def _env(self, cfg, hf_qc):
        model_config = _Obj(hf_config=_Obj(quantization_config=hf_qc))
        return {"quant_config": cfg, "model_config": model_config,
                "vllm_config": _Obj(quant_config=cfg, model_config=model_config),
                "__builtins__": __builtins__}

    def fc_quant(self, cfg) -> bool:
        if self._fc is None:
            return cfg.get_name() != "modelopt_fp4" if not hasattr(self, "_ast") else True
        env = self._env(cfg, None)
        exec(self._fc[0], env)  # noqa: S102 - vLLM's own statements
        return eval(self._fc[1], env) is not None  # noqa: S307

    def mtp_layers_quant(self, cfg, hf_qc) -> bool:
        if self._layers is None:
            if hasattr(self, "_ast"):
                return True
            dynamic = hf_qc.get("dynamic", {}) if isinstance(hf_qc, dict) else {}
            return not (cfg.get_name() != "modelopt_fp4"
                        and any(k.startswith("-:") and "mtp" in k for k in dynamic))
        env = self._env(cfg, hf_qc)
        exec(self._layers, env)  # noqa: S102 - vLLM's own statements
        return env["vllm_config"].quant_config is not None


ConstructionRules.MAIN = ConstructionRules(None)


# -- methods -------------------------------------------------------------------------------
# quant_method -> the config classes vLLM picks, newest layout first: the first entry whose
# file and class this checkout has wins. config/model.py _verify_quantization tries the
# override classes in order; for these checkpoints the winner is, by each class's
# override_quantization_method: "gptq" -> AutoGPTQConfig (auto_gptq.py; before it,
# GPTQMarlinConfig in gptq_marlin.py), "awq" -> AutoAWQConfig (auto_awq.py; before it,
# AWQMarlinConfig in awq_marlin.py), "auto-round" -> INCConfig (inc/inc.py; before the
# package, inc.py), "modelopt" -> one of the ModelOpt classes by quant_algo (modelopt.py; run
# below). Others are not overrides. An entry of several classes is a Marlin class and its
# plain fallback: on a GPU with Marlin (what qpatch assumes) GPTQMarlinConfig /
# AWQMarlinConfig win, and a config Marlin cannot take (is_*_marlin_compatible false; here:
# the Marlin class's from_config raises) goes to GPTQConfig / AWQConfig instead.
_METHODS = {
    "compressed-tensors": [((Q + "compressed_tensors/compressed_tensors.py",
                             "CompressedTensorsConfig"),)],
    "gptq": [((Q + "auto_gptq.py", "AutoGPTQConfig"),),
             ((Q + "gptq_marlin.py", "GPTQMarlinConfig"), (Q + "gptq.py", "GPTQConfig"))],
    "awq": [((Q + "auto_awq.py", "AutoAWQConfig"),),
            ((Q + "awq_marlin.py", "AWQMarlinConfig"), (Q + "awq.py", "AWQConfig"))],
    "auto-round": [((Q + "inc/inc.py", "INCConfig"),), ((Q + "inc.py", "INCConfig"),),
                   ((Q + "auto_round.py", "AutoRoundConfig"),)],
    "fp8": [((Q + "fp8.py", "Fp8Config"),)],
}
# ModelOptMixedPrecisionConfig arrived in the window; a checkout without it has one fewer.
_MODELOPT = ["ModelOptFp8Config", "ModelOptNvFp4Config", "ModelOptMxFp8Config",
             "ModelOptMixedPrecisionConfig"]


class VllmEngine:
    def __init__(self, root: str, bnb_root: str | None = None):
        self.src = VllmSource(root, _stand_ins())
        self.bnb = VllmSource(bnb_root, _stand_ins(), package="vllm_bnb_plugin") \
            if bnb_root else None
        base = self.src.load(Q + "base_config.py", "QuantizationConfig")
        self.QuantizationConfig = base["QuantizationConfig"]
        self.stand = _stand_ins()
        self.stand["QuantizationConfig"] = self.QuantizationConfig
        self.src.stand_ins = self.stand
        # Helpers the config classes import (optional: a version lacks what came later, e.g.
        # gptq_utils.flatten_list (#44120, ec59c1579, 2026-07-21) or the inc/ package's
        # config_parser.py).
        helpers = [
            (Q + "compressed_tensors/utils.py", ("should_ignore_layer",
             "check_equal_or_regex_match", "find_matched_target", "_find_first_match",
             "_is_equal_or_regex_match", "_match_fused_layer",
             "is_activation_quantization_format")),
            (Q + "utils/quant_utils.py", ("is_layer_skipped",)),
            (Q + "utils/gptq_utils.py", ("override_config", "get_dynamic_override",
                                         "flatten_list", "is_layer_gptq_quantized",
                                         "get_linear_quant_method")),
            (Q + "inc/config_parser.py", ("INCLayerConfig", "INCConfigParser")),
        ]
        loaded = [self.src.load(rel, *names, optional=True)
                  for rel, names in helpers if self.src.exists(rel)]
        for ns in loaded:
            self.stand.update({k: v for k, v in ns.items() if callable(v) and not k.startswith("__")})
        # compressed-tensors' pydantic models: only the fields the matching code reads.
        self.stand["QuantizationArgs"] = _QuantizationArgs
        self.stand["MappingProxyType"] = __import__("types").MappingProxyType
        mapper_ns = self.src.load(M + "utils.py", "WeightsMapper")
        self.WeightsMapper = mapper_ns["WeightsMapper"]
        self.stand["WeightsMapper"] = self.WeightsMapper
        self.classes = {}
        self.class_names = {}
        for method, choices in _METHODS.items():
            chain = next((c for c in choices if self.src.has(*c[0])), None)
            if chain is None:
                raise SystemExit(f"{self.src.root}: none of {choices} for {method} "
                                 "(has vLLM changed?)")
            self.classes[method] = [self._load_class(rel, cls) for rel, cls in chain
                                    if self.src.has(rel, cls)]
            self.class_names[method] = [f"{rel.removeprefix(Q)}:{cls}" for rel, cls in chain]
        # Which kernel scheme a quantized layer gets (and whether this GPU has it) is not a
        # matching question: _get_scheme_from_parts is where compressed-tensors picks one.
        ct = self.classes["compressed-tensors"][0]
        ct._get_scheme_from_parts = lambda self, **kwargs: Marker("CompressedTensorsScheme")
        ct._check_scheme_supported = lambda self, *args, **kwargs: None
        self.modelopt = [self._load_class(Q + "modelopt.py", c,
                                          extra=("ModelOptQuantConfigBase", "QUANT_ALGOS"))
                         for c in _MODELOPT if self.src.has(Q + "modelopt.py", c)]
        if self.bnb:
            # bitsandbytes left vLLM in #43529; main loads it through vllm-bnb-plugin, which
            # registers its BitsAndBytesConfig as "bitsandbytes" (vllm_bnb_plugin/__init__.py).
            plugin = "vllm_bnb_plugin/quantization/"
            utils = self.bnb.load(plugin + "utils.py", "is_layer_skipped_bnb")
            self.stand["is_layer_skipped_bnb"] = utils["is_layer_skipped_bnb"]
            ns = self.bnb.namespace(plugin + "config.py")
            ns.update(self.stand)
            self.bnb.load(plugin + "config.py", "BitsAndBytesConfig", ns=ns)
            self.classes["bitsandbytes"] = [ns["BitsAndBytesConfig"]]
        if self.src.has(Q + "quark/quark.py", "QuarkConfig"):
            # quark/utils.py defines should_ignore_layer and the regex helpers under the same
            # names as compressed_tensors/utils.py: Quark's own copies go in Quark's namespace
            # only. Which scheme a layer gets (and whether the GPU has it) is not a matching
            # question, as for compressed-tensors.
            ns = self.src.namespace(Q + "quark/quark.py")
            ns.update(self.stand)
            # utils.py's own imports (`import regex as re`) and quark.py's `import fnmatch`
            # (the module: _find_matched_config calls fnmatch.fnmatch).
            ns.update(re=importlib.import_module("regex"), fnmatch=fnmatch)
            self.src.load(Q + "quark/utils.py", "deep_compare", "should_ignore_layer",
                          "check_equal_or_regex_match", "_is_equal_or_regex_match", ns=ns)
            self.src.load(Q + "quark/quark.py", "QuarkLinearMethod", "QuarkConfig", ns=ns)
            quark = ns["QuarkConfig"]
            quark._get_scheme_from_config = lambda self, config, **kwargs: Marker("QuarkScheme")
            quark._check_scheme_supported = lambda self, *args, **kwargs: True
            self.classes["quark"] = [quark]
            self.class_names["quark"] = ["quark/quark.py:QuarkConfig"]
        self._model_attrs = _ModelClasses(self.src, self.WeightsMapper)
        self.rules = ConstructionRules(self.src)

    def _load_class(self, rel: str, cls: str, extra=()):
        ns = self.src.namespace(rel)
        ns.update(self.stand)
        names = [n for n in extra if not (n == "ModelOptQuantConfigBase" and cls == n)]
        self.src.load(rel, *names, cls, ns=ns)
        return ns[cls]

    # -- reading the config as vLLM does ---------------------------------------------------
    def quant_config(self, config_json: dict, files: dict[str, dict]):
        """get_quant_config (model_loader/weight_utils.py): config.json's quantization_config,
        else text_config's; else the method's own file (GPTQ quantize_config.json, ModelOpt
        hf_quant_config.json)."""
        qc = config_json.get("quantization_config")
        if qc is None and isinstance(config_json.get("text_config"), dict):
            qc = config_json["text_config"].get("quantization_config")
        if qc is None:
            return None, None
        method = str(qc.get("quant_method", "")).lower() if isinstance(qc, dict) else ""
        if method == "bitsandbytes" and "bitsandbytes" not in self.classes:
            raise VllmRaised("Unknown quantization method: bitsandbytes.")
        if method.startswith("modelopt"):
            for cls in self.modelopt:
                name = cls.override_quantization_method(qc, None)
                if name is not None:
                    break
            else:
                raise VllmRaised(f"Unknown quantization method: {method}.")
            if name == "modelopt_mixed" and "quantized_layers" not in qc:
                qc = files.get("hf_quant_config.json", qc)
            return cls.from_config(copy.deepcopy(qc)), qc
        if method not in self.classes:
            raise VllmRaised(f"Unknown quantization method: {method}.")
        *marlin, last = self.classes[method]
        for cls in marlin:  # the Marlin class, when it can take the config
            try:
                return cls.from_config(copy.deepcopy(qc)), qc
            except _RAISES:
                pass
        return last.from_config(copy.deepcopy(qc)), qc

    def judge(self, arch: str, ck_prefix: str, layer_types: list[str], mtp_layers: int,
              config_json: dict, files: dict, tensors: dict[str, str]) -> list[tuple[Layer, object]]:
        """Every layer with vLLM's verdict: "quantized", "dense" or VllmRaised."""
        if arch not in self.rules.archs:
            raise VllmUnmodelled(f"{arch} is not in this commit's registry.py: vLLM tries the "
                                 "Transformers backend for it (not modelled)")
        present = _present(tensors)
        _Metadata.tensors = tensors
        try:
            cfg, hf_qc = self.quant_config(config_json, files)
        except (*_RAISES, VllmRaised) as e:
            return [(None, VllmRaised(str(e)))]
        target = target_layers(arch, ck_prefix, layer_types, present, self.rules)
        if cfg is None:
            return [(layer, "dense") for layer in target]
        try:
            self.update_from_headers(cfg, tensors)
            self._configure(cfg, arch)
        except _RAISES as e:
            return [(None, VllmRaised(str(e)))]
        out = [(layer, self._decide(cfg, layer)) for layer in target]
        # The draft shares the target's quant config object (llm_base_proposer
        # _create_draft_vllm_config: dataclasses.replace keeps quant_config), already renamed
        # by the target's mapper; initialize_model then configures it for Qwen3_5MTP.
        self._configure(cfg, "Qwen3_5MTP")
        for layer in draft_layers(cfg, hf_qc, mtp_layers, present, self.rules):
            out.append((layer, self._decide(cfg, layer)))
        return out

    @staticmethod
    def update_from_headers(cfg, tensors: dict[str, str]) -> None:
        """config/vllm.py's cfg.maybe_update_config over the checkpoint's headers (`tensors`:
        name -> dtype): AWQ and GPTQ derive a missing skip list from the dtypes stored. It
        passes (model, hf_config=, revision=); before the keywords arrived (between 697e4ff and
        b2c58ee) only the model name."""
        _Metadata.tensors = tensors
        if hasattr(cfg, "maybe_update_config"):
            params = inspect.signature(cfg.maybe_update_config).parameters
            cfg.maybe_update_config("checkpoint", **{k: None for k in ("hf_config", "revision")
                                                     if k in params})

    def _configure(self, cfg, arch: str) -> None:
        """configure_quant_config (model_loader/utils.py): none of these classes is
        SupportsQuant, so the class's hf_to_vllm_mapper (unstacked) renames the config's
        lists and its packed_modules_mapping replaces the config's. Before
        get_unstacked_mapper existed (ecf4aa5 has it, e18fe93 not) the mapper is passed
        as it is: which one the commit does is read from its configure_quant_config."""
        mapper = self._model_attrs.get(arch, "hf_to_vllm_mapper")
        packed = self._model_attrs.get(arch, "packed_modules_mapping")
        if mapper is not None:
            cfg.apply_vllm_mapper(mapper.get_unstacked_mapper() if self.rules.unstack
                                  else mapper)
        if packed is not None:
            cfg.packed_modules_mapping = packed

    def _decide(self, cfg, layer: Layer):
        if not layer.quant_config:
            return "dense"
        try:
            method = cfg.get_quant_method(layer.cls(layer.prefix), prefix=layer.prefix)
        except _RAISES as e:
            return VllmRaised(str(e))
        if method is None or isinstance(method, Unquantized):
            return "dense"
        return "quantized"


def built_quantized(cfg, prefix: str, cls) -> bool:
    """Whether vLLM's quant config builds layer `prefix` of class `cls` quantized. Routed experts
    under compressed-tensors are asked as compressed_tensors_moe.py
    CompressedTensorsMoEMethod.get_moe_method asks: get_scheme_dict for .0.gate_proj, .0.up_proj
    and .0.down_proj, which must agree; every other layer through get_quant_method."""
    if issubclass(cls, RoutedExperts) and hasattr(cfg, "get_scheme_dict"):
        layer = cls(prefix)
        cfg._add_fused_moe_to_target_scheme_map()
        dicts = [cfg.get_scheme_dict(layer, prefix + p)
                 for p in (".0.gate_proj", ".0.up_proj", ".0.down_proj")]
        if not all(d == dicts[-1] for d in dicts):
            raise ValueError("All MoE projections need to have same quantization scheme "
                             "but found multiple")
        return dicts[-1] is not None
    method = cfg.get_quant_method(cls(prefix), prefix=prefix)
    return method is not None and not isinstance(method, Unquantized)


def storage_problems(cfg, modules, storage: dict, quantized: str = "quantized",
                     experts=RoutedExperts) -> list[str]:
    """What breaks when quant config `cfg` builds `modules` ((checkpoint module, vLLM layer,
    class, None for a layer built with no quant config), a fused layer once per shard) over `storage` (module -> stored quantized): a layer
    whose decision raises, or one built otherwise than stored. `quantized` names the stored
    format in the messages; `experts` is the class the commit's experts have."""
    built: dict[str, object] = {}
    out = []
    for name, prefix, cls in modules:
        if prefix not in built and cls is None:  # built with quant_config=None
            built[prefix] = False
        elif prefix not in built:
            try:
                built[prefix] = built_quantized(cfg, prefix,
                                                experts if cls is RoutedExperts else cls)
            except _RAISES as e:
                built[prefix] = e
        state = built[prefix]
        if isinstance(state, Exception):
            out.append(f"{prefix}: raises {state}")
        elif state != storage[name]:
            out.append(f"{name}: stored {quantized if storage[name] else 'BF16'}, built "
                       f"{'quantized' if state else 'dense'}")
    return out


class VllmRaised(Exception):
    pass


# What vLLM's matching code raises for a config it refuses (NotImplementedError: the INC
# config before the inc/ package, for a bit width its GPU path has no kernel for).
_RAISES = (ValueError, TypeError, KeyError, AssertionError, NotImplementedError)


class VllmUnmodelled(Exception):
    """A case this harness cannot judge for the commit (its verdict would be a guess)."""


def _present(tensors: dict[str, str]):
    modules = {name.rsplit(".", 1)[0] for name in tensors}
    return modules.__contains__


class _QuantizationArgs(dict):
    """compressed_tensors.quantization.QuantizationArgs.model_validate, reduced to attribute
    access over the group's `weights` object."""

    @classmethod
    def model_validate(cls, value):
        return cls(value or {})

    def __getattr__(self, name):
        return self.get(name)

    def __hash__(self):
        return hash(json.dumps(self, sort_keys=True))


class _ModelClasses:
    """packed_modules_mapping and hf_to_vllm_mapper of vLLM's model classes, evaluated from
    their class bodies (inheritance followed through the files below)."""

    FILES = [M + "qwen3_5.py", M + "qwen3_vl.py", M + "qwen3_next.py", M + "qwen3_5_mtp.py"]

    def __init__(self, src: VllmSource, weights_mapper):
        self.src = src
        self.where = {}
        for rel in self.FILES:
            for node in src.tree(rel).body:
                if hasattr(node, "name") and node.__class__.__name__ == "ClassDef":
                    self.where.setdefault(node.name, rel)
        self.env = {"WeightsMapper": weights_mapper}
        self.cache = {}

    def get(self, cls: str, attr: str):
        key = (cls, attr)
        if key not in self.cache:
            self.cache[key] = self._eval(cls, attr)
        return self.cache[key]

    def _eval(self, cls: str, attr: str):
        rel = self.where.get(cls)
        if rel is None:
            return None  # nn.Module and the interfaces define neither
        env = dict(self.env)
        for name in self.where:
            env[name] = _ClassView(self, name)
        value = self.src.literal_attr(rel, cls, attr, env)
        if value is not None:
            return value
        for base in self.src.base_names(rel, cls):
            value = self.get(base, attr)
            if value is not None:
                return value
        return None


class _ClassView:
    def __init__(self, classes: _ModelClasses, name: str):
        self._classes, self._name = classes, name

    def __getattr__(self, attr):
        return self._classes.get(self._name, attr)
