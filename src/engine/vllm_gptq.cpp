// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/qwen35_mtp.hpp>
#include <qpatch/engine/vllm_gptq.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>

namespace qpatch::engine {

using util::last_component;
using util::replace_all;

VllmGptq::VllmGptq(const quant::GptqConfig& config,
                   const ModelInfo& model,
                   std::vector<std::string> derived,
                   Engine engine)
    : m_config(config), m_model(model), m_engine(engine) {
  const std::vector<std::string>& list =
      config.modules_in_block ? *config.modules_in_block : derived;
  for (const std::string& entry : list) {
    // apply_vllm_mapper renames modules_in_block_to_quantize (dotted entries); dynamic is not.
    m_list.push_back(entry.find('.') != std::string::npos ? m_model.to_vllm(entry) : entry);
  }
  for (const auto& rule : config.dynamic) {
    auto pattern = Pattern::compile(rule.pattern, "dynamic");
    m_patterns.push_back(pattern ? std::optional<Pattern>(*pattern) : std::nullopt);
  }
}

bool VllmGptq::mtp_special_case() const {
  return m_engine == Engine::vllm && qwen35_dynamic_builds_mtp_dense(m_model, m_config.dynamic);
}

std::optional<size_t> VllmGptq::first_dynamic(const std::string& prefix, bool& undecidable) const {
  for (size_t i = 0; i < m_config.dynamic.size(); ++i) {
    if (!m_patterns[i]) {
      continue; // vLLM would raise re.error; diagnose reports the key
    }
    const auto matched = m_patterns[i]->matches(prefix, MatchMode::match);
    if (!matched) {
      undecidable = true;
      return std::nullopt;
    }
    if (*matched) {
      return i;
    }
  }
  return std::nullopt;
}

bool VllmGptq::in_list(const std::string& name) const {
  return std::any_of(m_list.begin(), m_list.end(), [&](const std::string& entry) {
    return name.find(entry) != std::string::npos;
  });
}

Decision VllmGptq::decide(const Layer& layer) const {
  Decision decision;
  const bool sglang = m_engine == Engine::sglang;
  if (layer.kind == LayerKind::built_dense || layer.kind == LayerKind::embedding ||
      (sglang && is_qwen35(m_model) && layer.prefix == "mtp.fc")) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  if (sglang && layer.kind == LayerKind::experts) {
    decision.verdict = Verdict::quantized; // GPTQMarlinMoEMethod, dynamic not read
    decision.by = DecidedBy::built_quantized;
    return decision;
  }
  // The Qwen3.5 special case builds the MTP decoder layers (not fc) with no quant config.
  if (mtp_special_case() && is_qwen35_mtp_decoder_layer(layer.prefix)) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  bool undecidable = false;
  const auto rule = first_dynamic(layer.prefix, undecidable);
  if (undecidable) {
    decision.by = DecidedBy::undecidable;
    return decision;
  }
  if (rule && m_config.dynamic[*rule].negative) {
    decision.by = DecidedBy::ignore_entry;
    decision.ignore_index = rule;
    decision.target = m_config.dynamic[*rule].key;
    return decision;
  }
  if (layer.kind == LayerKind::lm_head) {
    decision.by = DecidedBy::no_target;
    decision.verdict = m_config.lm_head ? Verdict::quantized : Verdict::dense;
    return decision;
  }
  if (layer.kind == LayerKind::experts || sglang) {
    // vLLM's MoE layers and every SGLang layer consult dynamic only.
    decision.verdict = Verdict::quantized;
    decision.by = DecidedBy::target_name;
    decision.target = rule     ? m_config.dynamic[*rule].key
                      : sglang ? std::string("(SGLang's GPTQ default: every Linear)")
                               : std::string("(GPTQ MoE default)");
    return decision;
  }
  const std::string last(last_component(layer.prefix));
  if (const auto* shards = m_model.shards_of(last)) {
    size_t hits = 0;
    for (const std::string& shard : *shards) {
      const std::string name = replace_all(layer.prefix, last, shard);
      decision.shards.push_back(name);
      decision.shard_ignored.push_back(!in_list(name));
      hits += in_list(name) ? 1U : 0U;
    }
    if (hits != 0 && hits != shards->size()) {
      decision.verdict = Verdict::load_error;
      decision.by = DecidedBy::fused_disagree;
      decision.error = "ValueError: Detected some but not all shards of " + layer.prefix +
                       " are quantized. All shards of fused layers to have the same precision.";
      return decision;
    }
    decision.verdict = hits != 0 ? Verdict::quantized : Verdict::dense;
  } else {
    decision.verdict = in_list(layer.prefix) ? Verdict::quantized : Verdict::dense;
  }
  decision.by =
      decision.verdict == Verdict::quantized ? DecidedBy::target_name : DecidedBy::no_target;
  decision.target = "modules_in_block_to_quantize";
  return decision;
}

std::vector<std::pair<std::string, std::string>> VllmGptq::trace(const Layer& layer) const {
  std::vector<std::pair<std::string, std::string>> lines;
  const Decision decision = decide(layer);
  const auto verdict = [&] {
    lines.emplace_back("verdict", verdict_text(decision));
    return lines;
  };
  const bool sglang = m_engine == Engine::sglang;
  if (sglang && decision.by == DecidedBy::built_dense && layer.prefix == "mtp.fc") {
    lines.emplace_back("built", "as a plain nn.Linear by SGLang's Qwen3.5 draft: always dense");
    return verdict();
  }
  if (sglang && layer.kind == LayerKind::experts) {
    lines.emplace_back("experts",
                       "SGLang's GPTQ Marlin quantizes every FusedMoE layer; dynamic is not read");
    return verdict();
  }
  if (mtp_special_case()) {
    lines.emplace_back("special", std::string(k_qwen35_dynamic_mtp_trace));
  }
  bool decided = false;
  for (size_t i = 0; i < m_config.dynamic.size(); ++i) {
    const auto& rule = m_config.dynamic[i];
    bool matched = false;
    if (m_patterns[i]) {
      matched = m_patterns[i]->matches(layer.prefix, MatchMode::match).value_or(false);
    }
    lines.emplace_back("dynamic[" + std::to_string(i) + "]",
                       "\"" + rule.key + "\" " +
                           (!m_patterns[i] ? std::string("is not a valid regex")
                            : matched      ? std::string("matches ") + layer.prefix +
                                            (rule.negative ? ": dense, first match wins"
                                                           : ": stops the scan (positive rule)")
                                      : "does not match " + layer.prefix));
    if (matched) {
      decided = true;
      break;
    }
  }
  if (!decided) {
    lines.emplace_back("dynamic", "no rule matches " + layer.prefix);
  }
  if (sglang) {
    lines.emplace_back("default",
                       "SGLang reads no modules_in_block_to_quantize: a layer no negative rule "
                       "matches is quantized");
    return verdict();
  }
  const std::string source = m_config.modules_in_block
                                 ? std::string("modules_in_block_to_quantize")
                                 : std::string("the module list vLLM derives from the headers");
  std::vector<std::string> names{layer.prefix};
  const std::string last(last_component(layer.prefix));
  if (const auto* shards = m_model.shards_of(last)) {
    names.clear();
    for (const std::string& shard : *shards) {
      names.push_back(replace_all(layer.prefix, last, shard));
    }
  }
  for (const std::string& name : names) {
    const auto hit = std::find_if(m_list.begin(), m_list.end(), [&](const std::string& entry) {
      return name.find(entry) != std::string::npos;
    });
    lines.emplace_back("list",
                       hit == m_list.end()
                           ? "no entry of " + source + " is a substring of " + name
                           : "\"" + *hit + "\" of " + source + " is a substring of " + name);
  }
  return verdict();
}

} // namespace qpatch::engine
