// SPDX-License-Identifier: Apache-2.0
#include <qpatch/diagnose/error_texts.hpp>

#include <algorithm>
#include <iterator>
#include <regex>

namespace qpatch::diagnose {
namespace {

struct Row {
  const char* id;
  const char* engine;
  const char* pattern; // ECMAScript, searched; group 1 (when present) names the module
  const char* meaning;
  std::vector<FindingKind> kinds;
  bool strip_parameter = false; // group 1 is a tensor name: drop its last component
};

using K = FindingKind;

// Sources: vLLM model_executor/models/utils.py AutoWeightsLoader._load_module and
// compressed_tensors.py (017e9f4), deepseek_mtp.py load_weights (#35548),
// model_loader/default_loader.py track_weights_loading; SGLang compressed_tensors.py
// find_matched_target / _get_scheme_from_parts (#44817, #38574), deepseek_v2 loader KeyError
// (#41994), the eagle worker's "accept len" log line (#35797); transformers modeling_utils.py's
// unused-weights warning; vLLM #57532 for ModelOpt's NaN weight_scale check.

// What the engines raise while they build the layers (the first start-up failures).
std::vector<Row> build_errors() {
  return {
      {"vllm-no-parameter",
       "vllm",
       R"(There is no module or parameter named '([^']+)' in)",
       "vLLM found a stored tensor its built layer has no parameter for: the layer is built "
       "quantized over dense weights, or dense over quantized ones",
       {K::dense_quantized_by_config,
        K::quantized_made_dense,
        K::quantized_untargeted,
        K::engine_builds_dense,
        K::engine_quantizes,
        K::quantized_without_config},
       true},
      {"untargeted-raises",
       "sglang",
       R"(Unable to find matching target for ?(\S*) in the compressed-tensors config)",
       "the engine built a Linear that no compressed-tensors target names and is not ignored "
       "(SGLang; vLLM before 2026-05-07)",
       {K::untargeted_raises, K::quantized_untargeted}},
      {"shards-disagree",
       "vllm",
       R"(Found a different quantization schemes? for \[[^\]]*\] in (\S+?)\.? )",
       "the shards of one fused layer are quantized differently by the config",
       {K::fused_shards_disagree, K::disk_shards_disagree}},
      // quantization/utils.py is_layer_skipped (SGLang's FP8 and ModelOpt; vLLM's
      // quant_utils.py has the same text): a skip list that names some shards of a fused layer.
      {"shards-not-all-skipped",
       "vllm",
       R"(Detected some but not all shards of (\S+) are quantized)",
       "FP8's or ModelOpt's skip list names some shards of one fused layer and not the others",
       {K::fused_shards_disagree}},
      {"moe-projections-disagree",
       "vllm",
       R"(All MoE projections need to have same quantization scheme)",
       "the gate, up and down projections of an experts layer are quantized differently",
       {K::fused_shards_disagree, K::disk_shards_disagree}},
      {"no-compatible-scheme",
       "sglang",
       R"(No compressed-tensors compatible scheme was found)",
       "SGLang has no kernel for the scheme the config gives a layer",
       {K::config_rejected, K::dense_quantized_by_config}},
  };
}

// What they raise while loading weights, log while serving, or refuse the config with.
std::vector<Row> load_and_serve_symptoms() {
  return {
      {"mtp-layer-missing",
       "vllm",
       R"(MTP speculative decoding layer (\d+) weights missing from checkpoint)",
       "vLLM's DeepSeekMTP loaded no weight for a draft layer config.json declares",
       {K::missing_draft_head}},
      {"weights-not-initialized",
       "vllm",
       R"(Following weights were not initialized from checkpoint)",
       "vLLM loaded an unquantized model and some parameters got no stored tensor",
       {K::missing_draft_head, K::quantized_without_config}},
      {"never-loaded-nan",
       "vllm",
       R"(weight_scale for layer '([^']+)' was never loaded)",
       "a layer built quantized got no scale from the checkpoint: it is stored dense",
       {K::dense_quantized_by_config, K::engine_quantizes}},
      {"expert-key-error",
       "sglang",
       R"(KeyError: '([^']*experts[^']*)')",
       "the loader looked up an experts parameter the built layer does not have",
       {K::dense_quantized_by_config,
        K::quantized_made_dense,
        K::quantized_untargeted,
        K::engine_builds_dense,
        K::engine_quantizes},
       true},
      {"accept-len-1",
       "sglang",
       R"(accept len:? 1\.0+\b)",
       "every draft token is rejected: the draft head runs with weights it never loaded",
       {K::missing_draft_head, K::dense_quantized_by_config, K::quantized_made_dense}},
      {"transformers-unused-weights",
       "transformers",
       R"(Some weights of .* were not used when initializing)",
       "transformers built a layer otherwise than stored and dropped the stored tensors",
       {K::quantized_made_dense, K::quantized_untargeted, K::engine_builds_dense}},
      // SGLang's FusedMoE._load_w13 copying a stored expert into a parameter of another width
      // (sgl-project/sglang#36158, #40597: MXFP4 experts built BF16 by the Qwen3.5 draft's Quark
      // gate, #23146, or BF16 experts built packed).
      {"moe-width-mismatch",
       "sglang",
       R"(The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at )"
       R"(non-singleton dimension)",
       "an experts layer is built with another width than stored: packed experts built dense, "
       "or dense ones built packed",
       {K::quantized_made_dense,
        K::dense_quantized_by_config,
        K::engine_builds_dense,
        K::engine_quantizes}},
      // quark/quark.py _get_scheme_from_config (vLLM 017e9f4; SGLang ce1ec3af, d97d3fc6).
      {"no-quark-scheme",
       "vllm",
       R"(No quark compatible scheme was found)",
       "the engine has no Quark kernel for the scheme a layer's config gives it",
       {K::config_rejected, K::dense_quantized_by_config}},
      // transformers: amd-quark's Config.from_dict (config.py @1d27b55) indexes four keys and
      // accepts three layer types.
      {"quark-config-refused",
       "transformers",
       R"(KeyError: '(?:global_quant_config|layer_type_quant_config|layer_quant_config|exclude)'|)"
       R"(Quark does not support reloading a quantization `Config`)",
       "transformers' Quark loader refuses the config before it builds any layer",
       {K::config_rejected}},
      {"unsupported-config",
       "vllm",
       R"(Unsupported quantization config|is not supported for|Currently, only .* are supported)",
       "the engine refuses the quantization config before it builds any layer",
       {K::config_rejected, K::unsupported_method}},
  };
}

const std::vector<Row>& rows() {
  static const std::vector<Row> table = [] {
    std::vector<Row> all = build_errors();
    for (Row& row : load_and_serve_symptoms()) {
      all.push_back(std::move(row));
    }
    return all;
  }();
  return table;
}

std::string without_last_component(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

} // namespace

std::optional<ErrorTextMatch> match_error_text(const std::string& text) {
  for (const Row& row : rows()) {
    const std::regex pattern(row.pattern);
    std::smatch match;
    if (!std::regex_search(text, match, pattern)) {
      continue;
    }
    ErrorTextMatch out{row.id, row.engine, row.meaning, row.kinds, ""};
    if (match.size() > 1 && match[1].matched && row.id != std::string("mtp-layer-missing")) {
      out.module_hint = match[1].str();
      if (row.strip_parameter) {
        out.module_hint = without_last_component(out.module_hint);
      }
    }
    return out;
  }
  return std::nullopt;
}

std::vector<std::string> known_error_texts() {
  std::vector<std::string> ids;
  for (const Row& row : rows()) {
    ids.emplace_back(row.id);
  }
  return ids;
}

std::vector<const Finding*> findings_behind(const Diagnosis& diagnosis,
                                            const ErrorTextMatch& match) {
  // Narrow step by step, keeping the wider set when a step would leave nothing: the engine that
  // prints the text (another engine's version may print it too: vLLM raised SGLang's
  // "Unable to find matching target" before 2026-05-07), then the module it names (engine names
  // are not always checkpoint names).
  const auto narrowed = [](std::vector<const Finding*> all, const auto& keep) {
    std::vector<const Finding*> kept;
    std::copy_if(all.begin(), all.end(), std::back_inserter(kept), keep);
    return kept.empty() ? all : kept;
  };
  std::vector<const Finding*> of_kind;
  for (const Finding& finding : diagnosis.findings) {
    if (std::find(match.kinds.begin(), match.kinds.end(), finding.kind) != match.kinds.end()) {
      of_kind.push_back(&finding);
    }
  }
  of_kind = narrowed(of_kind, [&](const Finding* finding) {
    return std::find(finding->engines.begin(), finding->engines.end(), match.engine) !=
           finding->engines.end();
  });
  return narrowed(of_kind, [&](const Finding* finding) {
    return std::any_of(
        finding->modules.begin(), finding->modules.end(), [&](const std::string& module) {
          return names_module(match.module_hint, module);
        });
  });
}

bool names_module(const std::string& hint, const std::string& name) {
  if (hint.empty()) {
    return true;
  }
  const auto ends_at_dot = [](const std::string& whole, const std::string& tail) {
    return whole == tail || (whole.size() > tail.size() &&
                             whole.compare(whole.size() - tail.size(), tail.size(), tail) == 0 &&
                             whole[whole.size() - tail.size() - 1] == '.');
  };
  if (ends_at_dot(name, hint) || ends_at_dot(hint, name)) {
    return true;
  }
  // An engine name may carry another prefix (model.layers.0 for model.language_model.layers.0):
  // compare from the last "layers.N." on. A hint may then name the module's parent (an experts
  // layer, "layers.0.mlp.experts"), or a fused layer whose shards share its parent
  // (…self_attn.qkv_proj for …self_attn.q_proj).
  const auto tail = [](const std::string& s) {
    const size_t at = s.rfind("layers.");
    return at == std::string::npos ? s : s.substr(at);
  };
  const std::string hint_tail = tail(hint);
  const std::string name_tail = tail(name);
  if (name_tail.rfind(hint_tail + ".", 0) == 0) {
    return true;
  }
  const std::string parent = without_last_component(hint_tail);
  return parent.rfind("layers.", 0) == 0 && parent != hint_tail &&
         parent == without_last_component(name_tail);
}

} // namespace qpatch::diagnose
