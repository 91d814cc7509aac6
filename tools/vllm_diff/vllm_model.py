# SPDX-License-Identifier: Apache-2.0
"""What vLLM builds from a Qwen3.5 checkpoint, and how its own quantization code decides each
layer. The naming is traced from the model classes of vLLM main 017e9f4 (2026-08-17; every
point cites file and class); the decisions are vLLM's functions, loaded from the checkout by
vllm_source and run unchanged: get_quant_method of each method's QuantizationConfig subclass,
its from_config, apply_vllm_mapper and maybe_update_config, and the model classes'
packed_modules_mapping and hf_to_vllm_mapper.
"""
from __future__ import annotations

import copy
import dataclasses
import fnmatch
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
    ns.update(FusedMoE=RoutedExperts, torch=_FakeTorch(),
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
def _decoder_layer(model: str, ck: str, vl: str, layer_type: str, present, quant=True):
    """Qwen3_5DecoderLayer (models/qwen3_5.py): `linear_attn` (QwenGatedDeltaNetAttention,
    layers/mamba/gdn/qwen_gdn_linear_attn.py: in_proj_qkvz and in_proj_ba are
    MergedColumnParallelLinear, conv1d a ColumnParallelLinear built without quant_config,
    out_proj a RowParallelLinear) or `self_attn` (Qwen3NextAttention, qwen3_next.py:
    QKVParallelLinear qkv_proj, RowParallelLinear o_proj), then `mlp` (Qwen3NextMLP =
    qwen2_moe.Qwen2MoeMLP: MergedColumnParallelLinear gate_up_proj, RowParallelLinear
    down_proj). Shards are loaded by the checkpoint names the stacked mapping lists."""
    if layer_type == "linear_attention":
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


def target_layers(arch: str, ck_prefix: str, layer_types: list[str], present) -> list[Layer]:
    """The target model. initialize_model (model_loader/utils.py) builds the class with
    prefix="". Qwen3_5ForConditionalGeneration (qwen3_5.py) builds
    Qwen3_5ForCausalLM(prefix="language_model"), whose Qwen3_5Model is "language_model.model"
    and whose ParallelLMHead is "language_model.lm_head"; Qwen3_5ForCausalLM alone gives
    "model" and "lm_head". Layers are "{model}.layers.{i}" (make_layers); embed_tokens is a
    VocabParallelEmbedding built without quant_config (Qwen3_5Model.__init__)."""
    vlm = arch == "Qwen3_5ForConditionalGeneration"
    model = "language_model.model" if vlm else "model"
    head = "language_model.lm_head" if vlm else "lm_head"
    out = []
    if vlm:
        out += _vision_layers(present)
    for i, layer_type in enumerate(layer_types):
        out += _decoder_layer("target", f"{ck_prefix}layers.{i}", f"{model}.layers.{i}",
                              layer_type, present)
    if present(f"{ck_prefix}embed_tokens"):
        out.append(Layer("target", f"{model}.embed_tokens", VocabParallelEmbedding,
                         [f"{ck_prefix}embed_tokens"], quant_config=False))
    if present("lm_head"):
        out.append(Layer("target", head, ParallelLMHead, ["lm_head"]))
    return out


def draft_layers(quant_cfg, hf_quant_config: dict, mtp_layers: int, present) -> list[Layer]:
    """The MTP draft (speculative decoding), Qwen3_5MTP (qwen3_5_mtp.py) with prefix "":
    Qwen3_5MultiTokenPredictor under "mtp": `fc` a ColumnParallelLinear "mtp.fc", built
    without quant_config when the config's name is "modelopt_fp4"; decoder layers
    "mtp.layers.{i}" of type full_attention, built without quant_config when the checkpoint's
    quantization_config has a `dynamic` key starting "-:" and containing "mtp" (for any
    method but modelopt_fp4); a ParallelLMHead "lm_head" with the quant config (checkpoint
    `lm_head` is loaded into it: load_weights keeps names containing "lm_head")."""
    name = quant_cfg.get_name()
    out = []
    if present("mtp.fc"):
        out.append(Layer("draft", "mtp.fc", ColumnParallelLinear, ["mtp.fc"],
                         quant_config=name != "modelopt_fp4"))
    layers_quant = True
    if name not in ("modelopt_fp4",) and isinstance(hf_quant_config, dict):
        dynamic = hf_quant_config.get("dynamic", {})
        if any(k.startswith("-:") and "mtp" in k for k in dynamic):
            layers_quant = False
    for i in range(mtp_layers):
        out += _decoder_layer("draft", f"mtp.layers.{i}", f"mtp.layers.{i}", "full_attention",
                              present, quant=layers_quant)
    if present("lm_head"):
        out.append(Layer("draft", "lm_head", ParallelLMHead, ["lm_head"]))
    return out


# -- methods -------------------------------------------------------------------------------
# quant_method -> (file, config class). config/model.py _verify_quantization tries the
# override classes in order; for these checkpoints the winner is, by each class's
# override_quantization_method: "gptq" -> AutoGPTQConfig (auto_gptq.py), "awq" ->
# AutoAWQConfig (auto_awq.py), "auto-round" -> INCConfig (inc/inc.py), "modelopt" -> one of
# the ModelOpt classes by quant_algo (modelopt.py; run below). Others are not overrides.
_METHODS = {
    "compressed-tensors": (Q + "compressed_tensors/compressed_tensors.py",
                           "CompressedTensorsConfig"),
    "gptq": (Q + "auto_gptq.py", "AutoGPTQConfig"),
    "awq": (Q + "auto_awq.py", "AutoAWQConfig"),
    "auto-round": (Q + "inc/inc.py", "INCConfig"),
    "fp8": (Q + "fp8.py", "Fp8Config"),
}
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
        utils = self.src.load(Q + "compressed_tensors/utils.py", "should_ignore_layer",
                              "check_equal_or_regex_match", "find_matched_target",
                              "_find_first_match", "_is_equal_or_regex_match",
                              "_match_fused_layer", "is_activation_quantization_format")
        quant_utils = self.src.load(Q + "utils/quant_utils.py", "is_layer_skipped")
        gptq_utils = self.src.load(Q + "utils/gptq_utils.py", "override_config",
                                   "get_dynamic_override", "flatten_list",
                                   "is_layer_gptq_quantized", "get_linear_quant_method")
        parser = self.src.load(Q + "inc/config_parser.py", "INCLayerConfig", "INCConfigParser")
        for ns in (utils, quant_utils, gptq_utils, parser):
            self.stand.update({k: v for k, v in ns.items() if callable(v) and not k.startswith("__")})
        # compressed-tensors' pydantic models: only the fields the matching code reads.
        self.stand["QuantizationArgs"] = _QuantizationArgs
        self.stand["MappingProxyType"] = __import__("types").MappingProxyType
        mapper_ns = self.src.load(M + "utils.py", "WeightsMapper")
        self.WeightsMapper = mapper_ns["WeightsMapper"]
        self.stand["WeightsMapper"] = self.WeightsMapper
        self.classes = {}
        for method, (rel, cls) in _METHODS.items():
            self.classes[method] = self._load_class(rel, cls)
        # Which kernel scheme a quantized layer gets (and whether this GPU has it) is not a
        # matching question: _get_scheme_from_parts is where compressed-tensors picks one.
        ct = self.classes["compressed-tensors"]
        ct._get_scheme_from_parts = lambda self, **kwargs: Marker("CompressedTensorsScheme")
        ct._check_scheme_supported = lambda self, *args, **kwargs: None
        self.modelopt = [self._load_class(Q + "modelopt.py", c,
                                          extra=("ModelOptQuantConfigBase", "QUANT_ALGOS"))
                         for c in _MODELOPT]
        if self.bnb:
            # bitsandbytes left vLLM in #43529; main loads it through vllm-bnb-plugin, which
            # registers its BitsAndBytesConfig as "bitsandbytes" (vllm_bnb_plugin/__init__.py).
            plugin = "vllm_bnb_plugin/quantization/"
            utils = self.bnb.load(plugin + "utils.py", "is_layer_skipped_bnb")
            self.stand["is_layer_skipped_bnb"] = utils["is_layer_skipped_bnb"]
            ns = self.bnb.namespace(plugin + "config.py")
            ns.update(self.stand)
            self.bnb.load(plugin + "config.py", "BitsAndBytesConfig", ns=ns)
            self.classes["bitsandbytes"] = ns["BitsAndBytesConfig"]
        self._model_attrs = _ModelClasses(self.src, self.WeightsMapper)

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
        return self.classes[method].from_config(copy.deepcopy(qc)), qc

    def judge(self, arch: str, ck_prefix: str, layer_types: list[str], mtp_layers: int,
              config_json: dict, files: dict, tensors: dict[str, str]) -> list[tuple[Layer, object]]:
        """Every layer with vLLM's verdict: "quantized", "dense" or VllmRaised."""
        present = _present(tensors)
        _Metadata.tensors = tensors
        try:
            cfg, hf_qc = self.quant_config(config_json, files)
        except (ValueError, TypeError, KeyError, AssertionError, VllmRaised) as e:
            return [(None, VllmRaised(str(e)))]
        target = target_layers(arch, ck_prefix, layer_types, present)
        if cfg is None:
            return [(layer, "dense") for layer in target]
        try:
            if hasattr(cfg, "maybe_update_config"):
                cfg.maybe_update_config("checkpoint", None)
            self._configure(cfg, arch)
        except (ValueError, TypeError, KeyError, AssertionError) as e:
            return [(None, VllmRaised(str(e)))]
        out = [(layer, self._decide(cfg, layer)) for layer in target]
        # The draft shares the target's quant config object (llm_base_proposer
        # _create_draft_vllm_config: dataclasses.replace keeps quant_config), already renamed
        # by the target's mapper; initialize_model then configures it for Qwen3_5MTP.
        self._configure(cfg, "Qwen3_5MTP")
        for layer in draft_layers(cfg, hf_qc, mtp_layers, present):
            out.append((layer, self._decide(cfg, layer)))
        return out

    def _configure(self, cfg, arch: str) -> None:
        """configure_quant_config (model_loader/utils.py): none of these classes is
        SupportsQuant, so the class's hf_to_vllm_mapper (unstacked) renames the config's
        lists and its packed_modules_mapping replaces the config's."""
        mapper = self._model_attrs.get(arch, "hf_to_vllm_mapper")
        packed = self._model_attrs.get(arch, "packed_modules_mapping")
        if mapper is not None:
            cfg.apply_vllm_mapper(mapper.get_unstacked_mapper())
        if packed is not None:
            cfg.packed_modules_mapping = packed

    def _decide(self, cfg, layer: Layer):
        if not layer.quant_config:
            return "dense"
        try:
            method = cfg.get_quant_method(layer.cls(layer.prefix), prefix=layer.prefix)
        except (ValueError, TypeError, KeyError, AssertionError) as e:
            return VllmRaised(str(e))
        if method is None or isinstance(method, Unquantized):
            return "dense"
        return "quantized"


class VllmRaised(Exception):
    pass


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
