// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/qwen35_mtp.hpp>
#include <qpatch/engine/vllm_inc.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <functional>

namespace qpatch::engine {

using util::ends_with;
using util::last_component;
using util::replace_all;

VllmInc::VllmInc(const quant::IncConfig& config, const ModelInfo& model)
    : m_config(config), m_model(model) {
  for (const quant::IncEntry& entry : config.extra_config) {
    if (quant::is_inc_regex_key(entry.key)) {
      auto pattern = Pattern::compile(entry.key, "extra_config");
      m_patterns.push_back(pattern ? std::optional<Pattern>(*pattern) : std::nullopt);
      m_keys.push_back(entry.key);
    } else {
      m_patterns.emplace_back();
      m_keys.push_back(m_model.to_vllm(entry.key));
    }
  }
  if (config.block_names) {
    for (const std::string& block : *config.block_names) {
      m_blocks.push_back(m_model.to_vllm(block));
    }
  }
}

bool VllmInc::mtp_special_case() const {
  return qwen35_dynamic_builds_mtp_dense(m_model, m_config.dynamic);
}

std::optional<VllmInc::Explicit> VllmInc::exact_key(const std::string& name) const {
  for (size_t i = 0; i < m_keys.size(); ++i) {
    if (plain_key(i) && m_keys[i] == name) {
      return Explicit{i, m_config.extra_config[i].bits.value_or(m_config.bits)};
    }
  }
  return std::nullopt;
}

std::optional<VllmInc::Explicit> VllmInc::regex_key(const std::string& name,
                                                    bool& undecidable) const {
  for (size_t i = 0; i < m_keys.size(); ++i) {
    if (!m_patterns[i]) {
      continue; // a plain key, or a regex vLLM cannot compile (reported by the judge)
    }
    const auto matched = m_patterns[i]->matches(name, MatchMode::search);
    if (!matched) {
      undecidable = true;
      return std::nullopt;
    }
    if (*matched) {
      return Explicit{i, m_config.extra_config[i].bits.value_or(m_config.bits)};
    }
  }
  return std::nullopt;
}

bool VllmInc::default_quantized(const Layer& layer, const std::string& prefix) const {
  if (layer.kind == LayerKind::lm_head) {
    return false;
  }
  if (!m_config.block_names) {
    return true;
  }
  return std::any_of(m_blocks.begin(), m_blocks.end(), [&](const std::string& block) {
    return prefix.rfind(block, 0) == 0;
  });
}

Decision VllmInc::decide(const Layer& layer) const {
  Decision decision;
  const std::string& prefix = layer.prefix;
  if (layer.kind == LayerKind::built_dense || layer.kind == LayerKind::embedding ||
      (mtp_special_case() && is_qwen35_mtp_decoder_layer(prefix))) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  const auto decided_by_key = [&](const Explicit& hit) {
    decision.verdict = hit.bits < 16 ? Verdict::quantized : Verdict::dense;
    decision.by = hit.bits < 16 ? DecidedBy::target_name : DecidedBy::ignore_entry;
    decision.ignore_index = hit.index;
    decision.target = "extra_config[\"" + m_config.extra_config[hit.index].key + "\"]";
    return decision;
  };
  // 0: an exact key (also "model." + P) whose bits, 16 when absent, are >= 16.
  for (size_t i = 0; i < m_keys.size(); ++i) {
    if (plain_key(i) && (m_keys[i] == prefix || m_keys[i] == "model." + prefix) &&
        m_config.extra_config[i].bits.value_or(16) >= 16) {
      return decided_by_key(Explicit{i, m_config.extra_config[i].bits.value_or(16)});
    }
  }
  // 1-2: exact key, then a dot-suffix key.
  if (const auto hit = exact_key(prefix)) {
    return decided_by_key(*hit);
  }
  for (size_t i = 0; i < m_keys.size(); ++i) {
    if (plain_key(i) && ends_with(prefix, "." + m_keys[i])) {
      return decided_by_key(Explicit{i, m_config.extra_config[i].bits.value_or(m_config.bits)});
    }
  }
  const bool quantized_by_default = default_quantized(layer, prefix);
  const auto by_default = [&] {
    decision.verdict = quantized_by_default ? Verdict::quantized : Verdict::dense;
    decision.by = quantized_by_default ? DecidedBy::target_class : DecidedBy::no_target;
    decision.target = !m_config.block_names  ? std::string("the global bits (no block list)")
                      : quantized_by_default ? m_config.block_names_key + " (prefix match)"
                                             : m_config.block_names_key + " (no entry is a prefix)";
    if (layer.kind == LayerKind::lm_head) {
      decision.target = "the lm_head default (never quantized by default)";
    }
    return decision;
  };
  bool undecidable = false;
  // 5: fused layers with an explicitly configured shard.
  const std::string last(last_component(prefix));
  if (const auto* shards = m_model.shards_of(last); shards && layer.kind == LayerKind::linear) {
    std::vector<std::optional<Explicit>> configured;
    bool any = false;
    for (const std::string& shard : *shards) {
      const std::string name = replace_all(prefix, last, shard);
      auto hit = exact_key(name);
      if (!hit) {
        hit = regex_key(name, undecidable);
      }
      decision.shards.push_back(name);
      decision.shard_ignored.push_back(hit && hit->bits >= 16);
      any = any || hit.has_value();
      configured.push_back(hit);
    }
    if (undecidable) {
      decision.by = DecidedBy::undecidable;
      return decision;
    }
    if (any) {
      std::vector<bool> quantized;
      for (const auto& hit : configured) {
        quantized.push_back(hit ? hit->bits < 16 : quantized_by_default);
      }
      if (std::adjacent_find(quantized.begin(), quantized.end(), std::not_equal_to<>()) !=
          quantized.end()) {
        decision.verdict = Verdict::load_error;
        decision.by = DecidedBy::fused_disagree;
        std::string list;
        for (const std::string& shard : decision.shards) {
          list += (list.empty() ? "'" : ", '") + shard + "'";
        }
        decision.error = "ValueError: Fused module '" + prefix +
                         "' requires consistent quant config for [" + list + "]";
        return decision;
      }
      for (const auto& hit : configured) {
        if (hit) {
          return decided_by_key(*hit);
        }
      }
    }
  }
  // 6: regex keys, then the default.
  if (const auto hit = regex_key(prefix, undecidable)) {
    return decided_by_key(*hit);
  }
  if (undecidable) {
    decision.by = DecidedBy::undecidable;
    return decision;
  }
  return by_default();
}

std::vector<std::pair<std::string, std::string>> VllmInc::trace(const Layer& layer) const {
  std::vector<std::pair<std::string, std::string>> lines;
  if (mtp_special_case()) {
    lines.emplace_back("special", std::string(k_qwen35_dynamic_mtp_trace));
  }
  for (size_t i = 0; i < m_keys.size(); ++i) {
    const std::string& key = m_config.extra_config[i].key;
    std::string text = "\"" + key + "\" ";
    if (quant::is_inc_regex_key(key)) {
      const bool hit =
          m_patterns[i] && m_patterns[i]->matches(layer.prefix, MatchMode::search).value_or(false);
      text += !m_patterns[i] ? "is not a valid regex"
              : hit          ? "is a regex key and re.search finds it in " + layer.prefix
                             : "is a regex key and does not occur in " + layer.prefix;
    } else if (m_keys[i] == layer.prefix || m_keys[i] == "model." + layer.prefix) {
      text += "is the exact name " + layer.prefix;
    } else if (ends_with(layer.prefix, "." + m_keys[i])) {
      text += "is a dot-suffix of " + layer.prefix;
    } else {
      text += "is a literal name (no regex metacharacter) and is not " + layer.prefix;
    }
    lines.emplace_back("extra_config[" + std::to_string(i) + "]", text);
  }
  if (m_config.block_names) {
    const auto hit = std::find_if(m_blocks.begin(), m_blocks.end(), [&](const std::string& b) {
      return layer.prefix.rfind(b, 0) == 0;
    });
    lines.emplace_back(m_config.block_names_key,
                       hit == m_blocks.end() ? "no entry is a prefix of " + layer.prefix
                                             : "\"" + *hit + "\" is a prefix of " + layer.prefix);
  } else {
    lines.emplace_back("default",
                       "no block_name_to_quantize: every layer but lm_head defaults to " +
                           std::to_string(m_config.bits) + " bits");
  }
  const Decision decision = decide(layer);
  lines.emplace_back(
      "verdict",
      std::string(decision.verdict == Verdict::quantized ? "quantized"
                  : decision.verdict == Verdict::dense   ? "dense"
                                                         : "load error: " + decision.error) +
          (decision.target.empty() ? std::string(" (") + std::string(to_string(decision.by)) + ")"
                                   : " (" + decision.target + ")"));
  return lines;
}

} // namespace qpatch::engine
