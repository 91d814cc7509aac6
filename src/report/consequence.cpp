// SPDX-License-Identifier: Apache-2.0
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/report/consequence.hpp>

#include <regex>

namespace qpatch::report {
namespace {

using diagnose::FindingKind;

std::optional<engine::Engine> engine_named(const std::string& name) {
  const auto set = engine::EngineSet::parse(name);
  if (!set || *set == engine::EngineSet::all()) {
    return std::nullopt;
  }
  return set->list().front();
}

// The tensor a packed layer expects that a dense checkpoint lacks, and the reverse, by the
// parameter names each method's vLLM linear method registers (compressed_tensors_wNa16.py
// `weight_packed`; gptq.py/awq.py `qweight`): the method row's, under any of its names.
std::string packed_tensor(const std::string& quant_method) {
  const diagnose::Method* method = diagnose::find_method(quant_method);
  return method != nullptr ? std::string(method->packed_tensor) : "weight_scale";
}

// vLLM's AutoWeightsLoader (model_executor/models/utils.py `_load_module`, vLLM main 017e9f4)
// raises for a checkpoint tensor the built model has no parameter for.
// The MTP draft model loads the head's tensors with the `mtp.` prefix stripped, so its message
// names `fc.weight` (README's flagship).
std::string vllm_missing(const std::string& tensor, const std::string& when) {
  const std::string shown = tensor.rfind("mtp.", 0) == 0 ? tensor.substr(4) : tensor;
  return "start-up fails" + when + ": \"ValueError: There is no module or parameter named '" +
         shown + "' in ...\"";
}

std::string vllm_effect(const diagnose::Finding& finding, const std::string& quant_method) {
  const std::string first = finding.modules.empty() ? finding.label : finding.modules.front();
  const bool mtp = first.rfind("mtp.", 0) == 0;
  const std::string when = mtp ? " once speculative decoding loads the MTP head" : "";
  const std::string fused_when = mtp ? " with speculative decoding" : "";
  switch (finding.kind) {
  case FindingKind::dense_quantized_by_config:
  case FindingKind::engine_quantizes:
    return vllm_missing(first + ".weight", when);
  case FindingKind::quantized_made_dense:
  case FindingKind::quantized_untargeted:
  case FindingKind::engine_builds_dense:
    return vllm_missing(first + "." + packed_tensor(quant_method), when);
  case FindingKind::fused_shards_disagree:
  case FindingKind::disk_shards_disagree:
    return "start-up fails" + fused_when +
           " while building the fused layer (its shards must agree)";
  case FindingKind::unindexed_tensors:
    return "never opens the file, so its tensors are not loaded";
  case FindingKind::untargeted_raises:
    return "start-up fails while it builds the model: \"ValueError: Unable to find matching "
           "target for ... in the compressed-tensors config.\"";
  case FindingKind::quantized_without_config:
    // Without a quantization config vLLM builds every Linear unquantized, whose only parameters
    // are weight (and bias): the first packed or scale tensor has nowhere to go
    // (model_executor/models/utils.py AutoWeightsLoader._load_module, vLLM main 017e9f4).
    return "start-up fails: \"" + finding.engine_error + "\"";
  case FindingKind::config_rejected:
    // Raised while vLLM reads quantization_config (the method's from_config/__init__, see
    // engine/vllm_config_checks.cpp), before any layer or weight: speculative decoding or not.
    return finding.engine_error.empty() ? "start-up fails: it refuses the quantization config"
                                        : "start-up fails: it refuses the quantization config: \"" +
                                              finding.engine_error + "\"";
  default:
    return "";
  }
}

// SGLang's loaders skip a checkpoint tensor whose name the model has no parameter for
// (`if name not in params_dict: continue`), so a mismatch loads without an error.
std::string sglang_effect(const diagnose::Finding& finding) {
  switch (finding.kind) {
  case FindingKind::dense_quantized_by_config:
  case FindingKind::quantized_made_dense:
  case FindingKind::quantized_untargeted:
  case FindingKind::engine_builds_dense:
  case FindingKind::engine_quantizes:
  case FindingKind::fused_shards_disagree:
    return "loads, and drops the stored weights silently";
  case FindingKind::quantized_without_config:
    return "builds every layer dense and drops the quantized weights silently";
  default:
    return "";
  }
}

// transformers reports unexpected and missing keys as a warning and initialises the layer anew.
std::string transformers_effect(const diagnose::Finding& finding) {
  switch (finding.kind) {
  case FindingKind::dense_quantized_by_config:
  case FindingKind::quantized_made_dense:
  case FindingKind::quantized_untargeted:
  case FindingKind::engine_builds_dense:
  case FindingKind::quantized_without_config:
    return "loads with \"Some weights ... were not used\" and initialises the layer at random";
  default:
    return "";
  }
}

} // namespace

std::string consequence(const diagnose::Finding& finding,
                        const std::string& quant_method,
                        const std::vector<std::string>& judged) {
  std::string out;
  for (const std::string& name : finding.engines.empty() ? judged : finding.engines) {
    const auto which = engine_named(name);
    if (!which) {
      continue;
    }
    std::string effect;
    switch (*which) {
    case engine::Engine::vllm:
      effect = vllm_effect(finding, quant_method);
      break;
    case engine::Engine::sglang:
      effect = sglang_effect(finding);
      break;
    case engine::Engine::transformers:
      effect = transformers_effect(finding);
      break;
    }
    if (!effect.empty()) {
      out += (out.empty() ? "" : "; ") + std::string(engine::display_name(*which)) + ": " + effect;
    }
  }
  return out;
}

std::string plain_engines(const std::vector<std::string>& engines,
                          const std::string& quant_method,
                          const std::vector<std::pair<std::string, std::string>>& ranges) {
  // "vllm main 017e9f4 (2026-08-17)" -> "vLLM (main, 2026-08-17)": branch and date say how
  // recent the rules are; the commit is for bug reports. A plugin the method needs stays named
  // ("with vllm-bnb-plugin"): without that package vLLM main does not load the method at all.
  static const std::regex k_branch_date(
      R"(^\S+ (\S+) [0-9a-f]{7,40} \((\d{4}-\d\d-\d\d)\)(?: with (\S+) [0-9a-f]{7,40})?$)");
  std::vector<std::string> names;
  for (const std::string& name : engines) {
    const auto which = engine_named(name);
    if (!which) {
      names.push_back(name);
      continue;
    }
    std::string shown(engine::display_name(*which));
    const auto range =
        std::find_if(ranges.begin(), ranges.end(), [&](const auto& r) { return r.first == name; });
    if (range != ranges.end()) {
      names.push_back(shown + " (" + range->second + ")");
      continue;
    }
    const std::string rules(engine::rules_of(*which, quant_method));
    std::smatch match;
    if (std::regex_match(rules, match, k_branch_date)) {
      shown += " (" + match[1].str() + ", " + match[2].str() + ")";
      if (match[3].matched) {
        shown += " with " + match[3].str();
      }
    }
    names.push_back(shown);
  }
  return engine::join_names(names);
}

} // namespace qpatch::report
