// SPDX-License-Identifier: Apache-2.0
// SGLang's auto-round routing (sgl-project/sglang 68e037f, layers/quantization/auto_round/):
// AutoRoundConfig.get_quant_method hands every layer to routing.get_quant_method, which resolves
// the layer's (bits, group_size, sym) with get_layer_config and builds a GPTQ config ("gptq" in
// packing_format or backend) or an AWQ one ("awq") for it. The keys are extra_config's as
// written (no mapper renames them); the quant config's packed_modules_mapping is the base
// QuantizationConfig's empty dict unless the model class calls update_packed_modules_mapping
// (only deepseek_v2.py does): AutoRoundConfig.from_config drops the mapping the loader adds to
// the dict. `dynamic` is never read.
#include "json/python_values.hpp"

#include <qpatch/engine/auto_round_rules.hpp>

#include <algorithm>

namespace qpatch::engine {

namespace {

bool in_marlin_groups(const json::Json& group_size) {
  // marlin_utils MARLIN_SUPPORTED_GROUP_SIZES [-1, 32, 64, 128] (a list: == membership).
  for (const int n : {-1, 32, 64, 128}) {
    if (py::equal(group_size, json::Json(n))) {
      return true;
    }
  }
  return false;
}

} // namespace

std::optional<size_t> AutoRoundRules::sglang_regex_key(const std::string& name,
                                                       bool& undecidable) const {
  // get_config: `for pattern, cfg in extra_config.items()`, keys without a REGEX_SPECIAL_CHARS
  // character skipped, re.fullmatch, re.error skipped.
  for (size_t k = 0; k < m_keys.size(); ++k) {
    if (!m_keys[k].regex || !m_keys[k].pattern) {
      continue;
    }
    const auto matched = m_keys[k].pattern->matches(name, MatchMode::fullmatch);
    if (!matched) {
      undecidable = true;
      return std::nullopt;
    }
    if (*matched) {
      return k;
    }
  }
  return std::nullopt;
}

std::optional<std::string> AutoRoundRules::sglang_kernel_refusal(const Tuple& tuple) const {
  const bool gptq = m_config.packing_format.find("gptq") != std::string::npos ||
                    m_config.backend.find("gptq") != std::string::npos;
  const bool awq = !gptq && (m_config.packing_format.find("awq") != std::string::npos ||
                             m_config.backend.find("awq") != std::string::npos);
  const bool marlin_allowed =
      m_config.backend == "auto" || m_config.backend.find("marlin") != std::string::npos;
  const bool sym = py::equal(tuple.sym, json::Json(true));
  if (gptq) {
    // apply_gptq_quant_layer: GPTQMarlinConfig for (bits, sym) in GPTQ_TYPE_MAP {(4, True),
    // (8, True)} at a Marlin group size, else GPTQConfig, whose __init__ takes 2/3/4/8 bits.
    const bool marlin = marlin_allowed && (tuple.bits == 4 || tuple.bits == 8) && sym &&
                        in_marlin_groups(tuple.group_size);
    if (!marlin && tuple.bits != 2 && tuple.bits != 3 && tuple.bits != 4 && tuple.bits != 8) {
      return "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported for GPTQ, "
             "but got " +
             std::to_string(tuple.bits) + " bits.";
    }
  } else if (awq) {
    // apply_awq_quant_layer: AWQMarlinConfig when check_marlin_supported(AWQ_TYPE_MAP[bits],
    // group_size, has_zp=not sym) (Marlin's zero-point types are uint4 only), else AWQConfig,
    // whose __init__ takes 4 bits only: either way a layer of other bits is refused.
    if (tuple.bits != 4) {
      return "ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but "
             "got " +
             std::to_string(tuple.bits) + " bits.";
    }
  }
  return std::nullopt;
}

Decision AutoRoundRules::decide_sglang(const Layer& layer) const {
  Decision decision;
  const std::string& prefix = layer.prefix;
  if (layer.kind == LayerKind::built_dense || layer.kind == LayerKind::embedding) {
    decision.by = DecidedBy::built_dense; // no quant config (mtp.fc is a plain nn.Linear)
    return decision;
  }
  bool undecidable = false;
  const auto give_up = [&] {
    Decision unknown;
    unknown.by = DecidedBy::undecidable;
    return unknown;
  };
  // get_config(name, quantized): an exact key, then the first regex key, then the defaults.
  const auto get_config = [&](const std::string& name, bool quantized) {
    if (const auto key = exact_key(name)) {
      return from_key(*key, quantized);
    }
    if (const auto key = sglang_regex_key(name, undecidable)) {
      return from_key(*key, quantized);
    }
    return by_default(quantized);
  };
  const auto finish = [&](const Tuple& tuple, bool quantized) {
    Decision out = decision_of(tuple, layer, quantized);
    if (out.verdict == Verdict::quantized) {
      if (auto refusal = sglang_kernel_refusal(tuple)) {
        out.verdict = Verdict::load_error;
        out.by = DecidedBy::override_refused; // out.target: the key or default that chose it
        out.error = std::move(*refusal);
      }
    }
    return out;
  };
  const bool any_key = !m_keys.empty(); // `if not config.extra_config` / `if config.extra_config`
  // 1. `if config.extra_config and layer_name in config.extra_config: return get_config(...)`,
  // quantized=True: the global defaults, whatever the block list or the layer's class.
  if (any_key && exact_key(prefix)) {
    return finish(from_key(*exact_key(prefix), true), true);
  }
  // 2. quantized = not isinstance(layer, ParallelLMHead); a truthy block list decides instead.
  const bool quantized = default_quantized(layer);
  // 3. A FusedMoE: the keys that start with its name, all alike.
  if (any_key && layer.kind == LayerKind::experts) {
    std::vector<Tuple> tuples;
    for (const Key& key : m_keys) {
      if (key.name.rfind(prefix, 0) == 0) {
        tuples.push_back(get_config(key.name, quantized));
      }
    }
    if (undecidable) {
      return give_up();
    }
    if (!tuples.empty()) {
      if (!all_alike(tuples)) {
        decision.verdict = Verdict::load_error;
        decision.by = DecidedBy::fused_disagree;
        decision.error = "ValueError: Fused MoE layer '" + prefix +
                         "' requires consistent quant config for all sub-layers";
        return decision;
      }
      return finish(tuples.front(), quantized);
    }
  }
  // 4. The quant config's packed_modules_mapping (see the file comment).
  for (const auto& [fusion_key, sub_keys] : any_key ? m_packed : PackedMapping{}) {
    if (prefix.find(fusion_key) == std::string::npos ||
        prefix.find(fusion_key, prefix.find(fusion_key) + 1) != std::string::npos) {
      continue;
    }
    std::vector<std::string> names;
    std::vector<Tuple> tuples;
    for (const std::string& sub_key : sub_keys) {
      std::string name = prefix;
      name.replace(name.find(fusion_key), fusion_key.size(), sub_key);
      tuples.push_back(get_config(name, quantized));
      names.push_back(std::move(name));
    }
    if (undecidable) {
      return give_up();
    }
    if (!all_alike(tuples)) {
      decision.verdict = Verdict::load_error;
      decision.by = DecidedBy::fused_disagree;
      decision.shards = names;
      decision.error = "ValueError: Fused module '" + prefix +
                       "' requires consistent quant config for " + py::list(names);
      return decision;
    }
    return finish(tuples.front(), quantized);
  }
  // 5. get_config(layer_name, quantized).
  const Tuple tuple = get_config(prefix, quantized);
  if (undecidable) {
    return give_up();
  }
  return finish(tuple, quantized);
}

std::vector<std::pair<std::string, std::string>>
AutoRoundRules::trace_sglang(const Layer& layer) const {
  std::vector<std::pair<std::string, std::string>> lines;
  const std::string& prefix = layer.prefix;
  for (size_t i = 0; i < m_config.extra_config.size(); ++i) {
    const std::string& key = m_config.extra_config[i].key;
    const auto kept =
        std::find_if(m_keys.begin(), m_keys.end(), [&](const Key& k) { return k.name == key; });
    std::string text = "\"" + key + "\" ";
    if (kept->entry != i) {
      text += "is replaced by the later key of the same name";
    } else if (key == prefix) {
      text += "is the exact name " + prefix;
    } else if (kept->regex) {
      const bool hit =
          kept->pattern && kept->pattern->matches(prefix, MatchMode::fullmatch).value_or(false);
      text += !kept->pattern ? "is not a valid regex (SGLang skips it)"
              : hit          ? "is a regex key and re.fullmatch matches " + prefix
                             : "is a regex key and does not fully match " + prefix;
    } else {
      text += "is a literal name (no regex character) and is not " + prefix;
    }
    lines.emplace_back("extra_config[" + std::to_string(i) + "]", text);
  }
  if (m_config.block_names) {
    lines.push_back(block_line(prefix));
  }
  lines.push_back(verdict_line(decide_sglang(layer)));
  return lines;
}

} // namespace qpatch::engine
