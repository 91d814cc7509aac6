// SPDX-License-Identifier: Apache-2.0
#include "json/python_values.hpp"

#include <qpatch/engine/auto_round_rules.hpp>
#include <qpatch/engine/dialect.hpp>
#include <qpatch/engine/qwen35_mtp.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>

namespace qpatch::engine {

using util::ends_with;
using util::replace_all;

namespace {

// Python's str.count: non-overlapping occurrences.
size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + part.size())) {
    ++n;
  }
  return n;
}

} // namespace

PackedMapping inc_packed_mapping(const ModelInfo& model) {
  const std::string& a = model.architecture;
  const PackedMapping dense_fusions = {{"qkv_proj", {"q_proj", "k_proj", "v_proj"}},
                                       {"gate_up_proj", {"gate_proj", "up_proj"}}};
  PackedMapping mapping = dense_fusions;
  if (a == "Qwen3_5ForConditionalGeneration" || a == "Qwen3_5MoeForConditionalGeneration") {
    // qwen3_5.py Qwen3_5ForConditionalGeneration.packed_modules_mapping =
    // Qwen3VLForConditionalGeneration.packed_modules_mapping | {in_proj_qkvz, in_proj_ba}
    // (qwen3_vl.py: qkv_proj, gate_up_proj, "qkv": ["qkv"] for the vision tower's packed QKV).
    mapping.push_back({"qkv", {"qkv"}});
    mapping.push_back({"in_proj_qkvz", {"in_proj_qkv", "in_proj_z"}});
    mapping.push_back({"in_proj_ba", {"in_proj_b", "in_proj_a"}});
    return mapping;
  }
  if (a == "Qwen3_5ForCausalLM" || a == "Qwen3_5MoeForCausalLM") {
    // qwen3_5.py Qwen3_5ForCausalLMBase.packed_modules_mapping.
    mapping.push_back({"in_proj_qkvz", {"in_proj_qkv", "in_proj_z"}});
    mapping.push_back({"in_proj_ba", {"in_proj_b", "in_proj_a"}});
    return mapping;
  }
  if (a == "Qwen3NextForCausalLM") {
    // qwen3_next.py Qwen3NextForCausalLM.packed_modules_mapping: the GDN projections map to
    // themselves (Qwen3-Next checkpoints store them fused).
    mapping.push_back({"in_proj_qkvz", {"in_proj_qkvz"}});
    mapping.push_back({"in_proj_ba", {"in_proj_ba"}});
    return mapping;
  }
  // Other models: the fusions qpatch builds layers from.
  return model.packed;
}
// The Qwen3.5 MTP draft (qwen3_5_mtp.py Qwen3_5MTP) installs its own mapping, {qkv_proj,
// gate_up_proj}, when it is built after the target; for the draft's layer names that is the
// same as the target's mapping ("qkv" then resolves a qkv_proj layer exactly as step 6 would,
// and the GDN keys occur in no draft name), so one mapping serves both.

AutoRoundRules::AutoRoundRules(const quant::IncConfig& config,
                               const ModelInfo& model,
                               const EngineVersion& version,
                               const std::vector<Layer>* built)
    : m_config(config), m_model(model), m_packed(inc_packed_mapping(model)) {
  const Dialect dialect = dialect_of(version, model);
  if (dialect.auto_round.library_convert) {
    m_library = true;
    convert_like_library(built != nullptr ? *built : std::vector<Layer>());
    return;
  }
  if (dialect.auto_round.sglang_routing) {
    // auto_round_sglang.cpp: QuantizationConfig's empty mapping, unless the model class updates
    // it (deepseek_v2.py DeepseekV2ForCausalLM.__init__: update_packed_modules_mapping).
    m_sglang = true;
    const std::string& a = model.architecture;
    m_packed = a == "DeepseekV3ForCausalLM" || a == "DeepseekV2ForCausalLM"
                   ? model.quant_packed.value_or(model.packed)
                   : PackedMapping{};
  }
  // inc/config_parser.py _resolve_raw before #48589 (948107acf^): an exact key, the fused
  // shards, then regex keys; no "P ends with .K" step.
  m_suffix_keys = version.has("#48589");
  // inc.py get_quant_method before #40601 (bcb518ad7^): the fused-module step ran for any
  // layer name a packed key occurs in, whether or not a shard name is configured.
  m_fused_needs_explicit = version.has("#40601");
  // qwen3_5_mtp.py: the "-:"/"mtp" dynamic special case since #48816 (c8db00b16).
  m_mtp_special_case = version.has("#48816");
  // INCConfig.apply_vllm_mapper: hf_to_vllm_mapper.apply_dict(extra_config) renames every key
  // (a dict comprehension: a later key renamed onto an earlier name replaces its value, in the
  // earlier key's place); apply_list renames the block names.
  for (size_t i = 0; i < config.extra_config.size(); ++i) {
    const std::string name = m_model.to_vllm(config.extra_config[i].key);
    m_entry_names.push_back(name);
    const auto same =
        std::find_if(m_keys.begin(), m_keys.end(), [&](const Key& k) { return k.name == name; });
    if (same != m_keys.end()) {
      same->entry = i;
      continue;
    }
    Key key{name, i, quant::is_inc_regex_key(name), std::nullopt};
    if (key.regex) {
      // re.error: vLLM skips the key (`except re.error: continue`).
      if (auto pattern = Pattern::compile(name, "extra_config")) {
        key.pattern = *pattern;
      }
    }
    m_keys.push_back(std::move(key));
  }
  if (config.block_names) {
    for (const std::string& block : *config.block_names) {
      m_blocks.push_back(m_model.to_vllm(block));
    }
  }
}

bool AutoRoundRules::mtp_special_case() const {
  return !m_library && !m_sglang && m_mtp_special_case &&
         qwen35_dynamic_builds_mtp_dense(m_model, m_config.dynamic);
}

bool AutoRoundRules::entry_kept(size_t index) const {
  return std::any_of(m_keys.begin(), m_keys.end(), [&](const Key& k) { return k.entry == index; });
}

std::optional<size_t> AutoRoundRules::exact_key(const std::string& name) const {
  for (size_t k = 0; k < m_keys.size(); ++k) {
    if (m_keys[k].name == name) {
      return k;
    }
  }
  return std::nullopt;
}

AutoRoundRules::Tuple AutoRoundRules::by_default(bool quantized) const {
  Tuple tuple;
  tuple.bits = quantized ? m_config.bits : 16;
  tuple.group_size = quantized ? m_config.group_size : json::Json(-1);
  tuple.sym = quantized ? m_config.sym : json::Json(true);
  return tuple;
}

AutoRoundRules::Tuple AutoRoundRules::from_key(size_t key, bool quantized) const {
  // config_parser.py get_config: cfg.get("bits", weight_bits if quantized else 16), and alike
  // for group_size (-1) and sym (True).
  const quant::IncEntry& entry = m_config.extra_config[m_keys[key].entry];
  Tuple tuple = by_default(quantized);
  tuple.key = key;
  if (entry.bits) {
    tuple.bits = *entry.bits;
  }
  if (entry.group_size) {
    tuple.group_size = *entry.group_size;
  }
  if (entry.sym) {
    tuple.sym = *entry.sym;
  }
  return tuple;
}

AutoRoundRules::Tuple
AutoRoundRules::get_config(const std::string& name, bool quantized, bool& undecidable) const {
  if (const auto key = exact_key(name)) {
    return from_key(*key, quantized);
  }
  for (size_t k = 0; k < m_keys.size(); ++k) {
    if (!m_keys[k].pattern) {
      continue; // a plain key, or a regex vLLM cannot compile
    }
    const auto matched = m_keys[k].pattern->matches(name, MatchMode::search);
    if (!matched) {
      undecidable = true;
      return by_default(quantized);
    }
    if (*matched) {
      return from_key(k, quantized);
    }
  }
  return by_default(quantized);
}

bool AutoRoundRules::explicitly_configured(const std::string& name, bool& undecidable) const {
  if (exact_key(name)) {
    return true;
  }
  for (const Key& key : m_keys) {
    if (!key.pattern) {
      continue;
    }
    const auto matched = key.pattern->matches(name, MatchMode::search);
    if (!matched) {
      undecidable = true;
      return false;
    }
    if (*matched) {
      return true;
    }
  }
  return false;
}

bool AutoRoundRules::default_quantized(const Layer& layer) const {
  // `quantized = not isinstance(layer, ParallelLMHead)`, then replaced by the block test when
  // block_name_to_quantize is non-empty (lm_head included).
  if (!m_config.block_names) {
    return layer.kind != LayerKind::lm_head;
  }
  return std::any_of(m_blocks.begin(), m_blocks.end(), [&](const std::string& block) {
    return layer.prefix.rfind(block, 0) == 0;
  });
}

std::optional<AutoRoundRules::Fused> AutoRoundRules::fused_entry(const std::string& prefix,
                                                                 bool& undecidable) const {
  for (size_t e = 0; e < m_packed.size(); ++e) {
    const auto& [fusion_key, sub_keys] = m_packed[e];
    if (count_of(prefix, fusion_key) != 1) {
      continue;
    }
    Fused fused{e, {}};
    bool configured = false;
    for (const std::string& sub_key : sub_keys) {
      fused.names.push_back(replace_all(prefix, fusion_key, sub_key));
      configured = explicitly_configured(fused.names.back(), undecidable) || configured;
      if (undecidable) {
        return std::nullopt;
      }
    }
    if (configured || !m_fused_needs_explicit) {
      return fused;
    }
  }
  return std::nullopt;
}

std::string AutoRoundRules::tuple_text(const Tuple& tuple) const {
  return "(" + std::to_string(tuple.bits) + ", " + py::repr(tuple.group_size) + ", " +
         py::repr(tuple.sym) + ")";
}

Decision AutoRoundRules::decision_of(const Tuple& tuple, const Layer& layer, bool quantized) const {
  Decision decision;
  decision.verdict = tuple.bits < 16 ? Verdict::quantized : Verdict::dense;
  if (tuple.key) {
    const size_t entry = m_keys[*tuple.key].entry;
    decision.by =
        decision.verdict == Verdict::dense ? DecidedBy::ignore_entry : DecidedBy::target_name;
    decision.ignore_index = entry;
    decision.target = "extra_config[\"" + m_config.extra_config[entry].key + "\"]";
    return decision;
  }
  decision.by = quantized ? DecidedBy::target_class : DecidedBy::no_target;
  if (!m_config.block_names) {
    decision.target = layer.kind == LayerKind::lm_head
                          ? "the lm_head default (never quantized by default)"
                          : "the global bits (no block list)";
  } else {
    decision.target =
        m_config.block_names_key + (quantized ? " (prefix match)" : " (no entry is a prefix)");
  }
  return decision;
}

Decision AutoRoundRules::decide(const Layer& layer) const {
  if (m_library) {
    return decide_library(layer);
  }
  if (m_sglang) {
    return decide_sglang(layer);
  }
  Decision decision;
  const std::string& prefix = layer.prefix;
  if (layer.kind == LayerKind::built_dense || layer.kind == LayerKind::embedding ||
      (mtp_special_case() && is_qwen35_mtp_decoder_layer(prefix))) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  const bool any_key = !m_keys.empty(); // `if self._config.extra_config:`
  // 0 (inc.py get_quant_method): a key naming P (or "model." + P) with bits >= 16, 16 when
  // absent.
  for (size_t k = 0; any_key && !prefix.empty() && k < m_keys.size(); ++k) {
    if (m_keys[k].name != prefix && m_keys[k].name != "model." + prefix) {
      continue;
    }
    const quant::IncEntry& entry = m_config.extra_config[m_keys[k].entry];
    if (entry.bits.value_or(16) >= 16) {
      Tuple tuple = by_default(true);
      tuple.bits = entry.bits.value_or(16);
      tuple.key = k;
      return decision_of(tuple, layer, true);
    }
  }
  // 1-2 (_resolve_raw): an exact key, then the first dot-suffix key, with the global defaults.
  if (const auto key = any_key ? exact_key(prefix) : std::nullopt) {
    return decision_of(from_key(*key, true), layer, true);
  }
  for (size_t k = 0; any_key && m_suffix_keys && k < m_keys.size(); ++k) {
    if (ends_with(prefix, "." + m_keys[k].name)) {
      return decision_of(from_key(k, true), layer, true);
    }
  }
  const bool quantized = default_quantized(layer);
  bool undecidable = false;
  const auto give_up = [&] {
    Decision unknown;
    unknown.by = DecidedBy::undecidable;
    return unknown;
  };
  // 5: the first packed_modules_mapping entry whose names are configured explicitly.
  if (any_key) {
    const auto fused = fused_entry(prefix, undecidable);
    if (undecidable) {
      return give_up();
    }
    if (fused) {
      std::vector<Tuple> tuples;
      for (const std::string& name : fused->names) {
        tuples.push_back(get_config(name, quantized, undecidable));
      }
      if (undecidable) {
        return give_up();
      }
      if (!all_alike(tuples)) {
        decision.verdict = Verdict::load_error;
        decision.by = DecidedBy::fused_disagree;
        decision.shards = fused->names;
        for (const Tuple& t : tuples) {
          decision.shard_ignored.push_back(t.bits >= 16);
        }
        decision.error = "ValueError: Fused module '" + prefix +
                         "' requires consistent quant config for " + py::list(fused->names);
        return decision;
      }
      // sub_configs[0]; the key named is the first shard's that came from one.
      Tuple tuple = tuples.front();
      for (const Tuple& t : tuples) {
        if (t.key) {
          tuple.key = t.key;
          break;
        }
      }
      decision = decision_of(tuple, layer, quantized);
      decision.shards = fused->names;
      for (const Tuple& t : tuples) {
        decision.shard_ignored.push_back(t.bits >= 16);
      }
      return decision;
    }
  }
  // 6: get_config(P, quantized).
  const Tuple tuple = get_config(prefix, quantized, undecidable);
  if (undecidable) {
    return give_up();
  }
  return decision_of(tuple, layer, quantized);
}

std::vector<std::pair<std::string, std::string>> AutoRoundRules::trace(const Layer& layer) const {
  if (m_library) {
    return trace_library(layer);
  }
  if (m_sglang) {
    return trace_sglang(layer);
  }
  std::vector<std::pair<std::string, std::string>> lines;
  if (mtp_special_case()) {
    lines.emplace_back("special", std::string(k_qwen35_dynamic_mtp_trace));
  }
  const std::string& prefix = layer.prefix;
  for (size_t i = 0; i < m_config.extra_config.size(); ++i) {
    const std::string& key = m_config.extra_config[i].key;
    const std::string& name = m_entry_names[i];
    std::string text = "\"" + key + "\" ";
    if (name != key) {
      text += "(vLLM: \"" + name + "\") ";
    }
    const auto kept =
        std::find_if(m_keys.begin(), m_keys.end(), [&](const Key& k) { return k.name == name; });
    if (kept->entry != i) {
      text += "is replaced by the later key of the same name";
    } else if (kept->regex) {
      const bool hit =
          kept->pattern && kept->pattern->matches(prefix, MatchMode::search).value_or(false);
      text += !kept->pattern ? "is not a valid regex (vLLM skips it)"
              : hit          ? "is a regex key and re.search finds it in " + prefix
                             : "is a regex key and does not occur in " + prefix;
    } else if (name == prefix || name == "model." + prefix) {
      text += "is the exact name " + prefix;
    } else if (m_suffix_keys && ends_with(prefix, "." + name)) {
      text += "is a dot-suffix of " + prefix;
    } else {
      text += "is a literal name (no regex metacharacter) and is not " + prefix;
    }
    lines.emplace_back("extra_config[" + std::to_string(i) + "]", text);
  }
  if (m_config.block_names) {
    lines.push_back(block_line(prefix));
  } else {
    lines.emplace_back("default",
                       "no block_name_to_quantize: every layer but lm_head defaults to " +
                           std::to_string(m_config.bits) + " bits");
  }
  const Decision decision = decide(layer);
  bool undecidable = false;
  if (!decision.shards.empty() && !m_keys.empty()) {
    if (const auto fused = fused_entry(prefix, undecidable)) {
      const bool quantized = default_quantized(layer);
      std::string text = "\"" + m_packed[fused->entry].first + "\" occurs once in " + prefix +
                         ", and a name it stands for is configured:";
      for (const std::string& name : fused->names) {
        text += " " + name + " " + tuple_text(get_config(name, quantized, undecidable));
      }
      lines.emplace_back("packed", text);
    }
  }
  lines.push_back(verdict_line(decision));
  return lines;
}

bool AutoRoundRules::all_alike(const std::vector<Tuple>& tuples) {
  // len(set(sub_configs)) == 1: the tuples compare as Python's == does.
  return std::all_of(tuples.begin(), tuples.end(), [&](const Tuple& t) {
    return t.bits == tuples.front().bits && py::equal(t.group_size, tuples.front().group_size) &&
           py::equal(t.sym, tuples.front().sym);
  });
}

std::pair<std::string, std::string> AutoRoundRules::block_line(const std::string& prefix) const {
  const auto hit = std::find_if(m_blocks.begin(), m_blocks.end(), [&](const std::string& b) {
    return prefix.rfind(b, 0) == 0;
  });
  return {m_config.block_names_key,
          hit == m_blocks.end() ? "no entry is a prefix of " + prefix
                                : "\"" + *hit + "\" is a prefix of " + prefix};
}

std::pair<std::string, std::string> AutoRoundRules::verdict_line(const Decision& decision) {
  return {"verdict",
          std::string(decision.verdict == Verdict::quantized ? "quantized"
                      : decision.verdict == Verdict::dense   ? "dense"
                                                             : "load error: " + decision.error) +
              (decision.target.empty()
                   ? std::string(" (") + std::string(to_string(decision.by)) + ")"
                   : " (" + decision.target + ")")};
}

} // namespace qpatch::engine
