// SPDX-License-Identifier: Apache-2.0
#include <qpatch/diagnose/methods.hpp>
#include <qpatch/engine/effects.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/report/consequence.hpp>

#include <algorithm>
#include <cctype>
#include <optional>

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

namespace {

// "vllm main 017e9f4 (2026-08-17)" or "... (2026-08-17) with vllm-bnb-plugin 85de847" as its
// branch, date and plugin; nothing when `rules` has another shape. (A hand parse: std::regex
// compiled this one pattern in 33M instructions, 4% of a --check on a 1T-parameter layout.)
struct BranchDate {
  std::string branch, date, plugin;
};
std::optional<BranchDate> branch_and_date(std::string_view rules) {
  const auto word = [&]() {
    const size_t end = std::min(rules.find(' '), rules.size());
    std::string_view out = rules.substr(0, end);
    rules.remove_prefix(std::min(end + 1, rules.size()));
    return out;
  };
  const auto is_commit = [](std::string_view text) {
    return text.size() >= 7 && text.size() <= 40 &&
           std::all_of(text.begin(), text.end(), [](char c) {
             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
  };
  const auto is_day = [](std::string_view text) {
    static constexpr std::string_view k_shape = "dddd-dd-dd";
    if (text.size() != k_shape.size()) {
      return false;
    }
    for (size_t i = 0; i < text.size(); ++i) {
      if (k_shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(text[i])) : text[i] != '-') {
        return false;
      }
    }
    return true;
  };
  if (word().empty()) {
    return std::nullopt;
  }
  BranchDate out;
  out.branch = std::string(word());
  const std::string_view commit = word();
  const std::string_view day = word();
  if (out.branch.empty() || !is_commit(commit) || day.size() < 2 || day.front() != '(' ||
      day.back() != ')' || !is_day(day.substr(1, day.size() - 2))) {
    return std::nullopt;
  }
  out.date = std::string(day.substr(1, day.size() - 2));
  if (rules.empty()) {
    return out;
  }
  if (word() != "with") {
    return std::nullopt;
  }
  out.plugin = std::string(word());
  if (out.plugin.empty() || !is_commit(word()) || !rules.empty()) {
    return std::nullopt;
  }
  return out;
}

} // namespace

std::string plain_engines(const std::vector<std::string>& engines,
                          const std::string& quant_method,
                          const std::vector<std::pair<std::string, std::string>>& ranges) {
  // "vllm main 017e9f4 (2026-08-17)" -> "vLLM (main, 2026-08-17)": branch and date say how
  // recent the rules are; the commit is for bug reports. A plugin the method needs stays named
  // ("with vllm-bnb-plugin"): without that package vLLM main does not load the method at all.
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
    if (const auto parts = branch_and_date(engine::rules_of(*which, quant_method))) {
      shown += " (" + parts->branch + ", " + parts->date + ")";
      if (!parts->plugin.empty()) {
        shown += " with " + parts->plugin;
      }
    }
    names.push_back(shown);
  }
  return engine::join_names(names);
}

} // namespace qpatch::report
