// SPDX-License-Identifier: Apache-2.0
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/effects.hpp>
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

// The engine-level mismatch a finding is, or nothing when it is not one.
std::optional<engine::Mismatch> mismatch_of(FindingKind kind) {
  using engine::Mismatch;
  switch (kind) {
  case FindingKind::dense_quantized_by_config:
  case FindingKind::engine_quantizes:
    return Mismatch::dense_built_quantized;
  case FindingKind::quantized_made_dense:
  case FindingKind::quantized_untargeted:
  case FindingKind::engine_builds_dense:
    return Mismatch::quantized_built_dense;
  case FindingKind::fused_shards_disagree:
    return Mismatch::config_shards_disagree;
  case FindingKind::disk_shards_disagree:
    return Mismatch::disk_shards_disagree;
  case FindingKind::unindexed_tensors:
    return Mismatch::unindexed_file;
  case FindingKind::untargeted_raises:
    return Mismatch::untargeted_raises;
  case FindingKind::quantized_without_config:
    return Mismatch::quantized_without_config;
  case FindingKind::config_rejected:
    return Mismatch::config_rejected;
  default:
    return std::nullopt;
  }
}

} // namespace

std::string consequence(const diagnose::Finding& finding,
                        const std::string& quant_method,
                        const std::vector<std::string>& judged,
                        const engine::BuiltWeight& built) {
  std::string out;
  for (const auto& [name, effect] : finding.engine_effects) {
    const auto which = engine_named(name);
    out += (out.empty() ? "" : "; ") + (which ? std::string(engine::display_name(*which)) : name) +
           ": " + effect;
  }
  if (!finding.engine_effects.empty()) {
    return out;
  }
  for (const std::string& name : finding.engines.empty() ? judged : finding.engines) {
    const auto which = engine_named(name);
    if (!which) {
      continue;
    }
    const auto mismatch = mismatch_of(finding.kind);
    if (!mismatch) {
      continue;
    }
    const std::string effect =
        engine::effect_of(*which,
                          *mismatch,
                          {finding.modules.empty() ? finding.label : finding.modules.front(),
                           packed_tensor(quant_method),
                           finding.engine_error,
                           built});
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
