// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/gptq_rules.hpp>
#include <qpatch/engine/qwen35_mtp.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <set>

namespace qpatch::engine {

using util::last_component;
using util::replace_all;

std::vector<std::string> derived_gptq_list(const checkpoint::Inventory& inventory) {
  using safetensors::Dtype;
  std::set<std::string> names;
  for (const auto& tensor : inventory.tensors) {
    // maybe_update_config (auto_gptq.py, vLLM main 017e9f4): unquant_dtypes is exactly
    // float16, bfloat16, float32, so FP8 and F64 tensors count as quantized; the module is
    // param_name.rsplit(".", 1)[0].
    if (tensor.dtype == Dtype::F16 || tensor.dtype == Dtype::BF16 || tensor.dtype == Dtype::F32) {
      continue;
    }
    const size_t dot = tensor.name.rfind('.');
    names.emplace(dot == std::string_view::npos ? tensor.name : tensor.name.substr(0, dot));
  }
  return {names.begin(), names.end()};
}

GptqHeaders gptq_headers(const checkpoint::Inventory& inventory) {
  GptqHeaders headers;
  headers.derived = derived_gptq_list(inventory);
  // optimum v2.1.0 gptq/constants.py BLOCK_PATTERNS, tried in order by get_block_name_with_pattern
  // (gptq/utils.py) over model.named_modules(). A module's name starts a pattern exactly when
  // one of its tensors' names does (the names are the checkpoint's: transformers renames no
  // Qwen3.5 key), so the headers answer it.
  static const char* const k_block_patterns[] = {"transformer.h",
                                                 "model.decoder.layers",
                                                 "gpt_neox.layers",
                                                 "model.layers",
                                                 "model.language_model.layers",
                                                 "h",
                                                 "decoder.layers",
                                                 "layers"};
  for (const char* pattern : k_block_patterns) {
    const std::string_view p(pattern);
    const bool any =
        std::any_of(inventory.tensors.begin(), inventory.tensors.end(), [&](const auto& tensor) {
          return std::string_view(tensor.name).substr(0, p.size()) == p;
        });
    if (any) {
      headers.optimum_block = pattern;
      break;
    }
  }
  return headers;
}

GptqRules::GptqRules(const quant::GptqConfig& config,
                     const ModelInfo& model,
                     GptqHeaders headers,
                     const EngineVersion& version)
    : m_config(config), m_model(model), m_dialect(dialect_of(version, model)),
      m_gptq(m_dialect.gptq),
      m_block(config.optimum.block ? *config.optimum.block : headers.optimum_block) {
  const std::vector<std::string>& list =
      config.modules_in_block ? *config.modules_in_block : headers.derived;
  for (const std::string& entry : list) {
    m_list.push_back(as_read(entry));
  }
  for (const auto& rule : config.dynamic) {
    auto pattern = Pattern::compile(rule.pattern, "dynamic");
    m_patterns.push_back(pattern ? std::optional<Pattern>(*pattern) : std::nullopt);
  }
}

std::string GptqRules::as_read(const std::string& entry) const {
  // apply_vllm_mapper renames modules_in_block_to_quantize (dotted entries); dynamic is not.
  return entry.find('.') != std::string::npos ? m_model.to_vllm(entry) : entry;
}

bool GptqRules::mtp_special_case() const {
  // Qwen3_5MultiTokenPredictor.__init__ (models/qwen3_5_mtp.py, vLLM main 017e9f4) reads
  // getattr(model_config.hf_config, "quantization_config"): a config nested in text_config or
  // read from quantize_config.json never triggers it.
  return m_gptq.qwen35_mtp_special_case && m_config.in_hf_config &&
         qwen35_dynamic_builds_mtp_dense(m_model, m_config.dynamic);
}

std::optional<size_t> GptqRules::first_dynamic(const std::string& prefix, bool& undecidable) const {
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

bool GptqRules::listed(const std::string& name) const {
  return std::any_of(m_list.begin(), m_list.end(), [&](const std::string& entry) {
    return name.find(entry) != std::string::npos;
  });
}

std::vector<std::string> GptqRules::tested_names(const Layer& layer) const {
  // is_layer_gptq_quantized (utils/gptq_utils.py): proj_name = prefix.split(".")[-1]; a fused
  // name is expanded with prefix.replace(proj_name, shard), which replaces every occurrence.
  const std::string last(last_component(layer.prefix));
  const auto* shards = m_model.shards_of(last);
  if (shards == nullptr) {
    return {layer.prefix};
  }
  std::vector<std::string> names;
  for (const std::string& shard : *shards) {
    names.push_back(replace_all(layer.prefix, last, shard));
  }
  return names;
}

// The verdict of `dynamic` alone, or nothing when no negative rule decides it.
std::optional<Decision> GptqRules::decide_dynamic(const Layer& layer) const {
  Decision decision;
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
  return std::nullopt;
}

std::optional<std::pair<size_t, std::string>>
GptqRules::refused_override(const Layer& layer) const {
  bool undecidable = false;
  const auto rule = first_dynamic(layer.prefix, undecidable);
  if (!rule || m_config.dynamic[*rule].negative) {
    return std::nullopt;
  }
  const quant::GptqRule& override = m_config.dynamic[*rule];
  if (!override.bits && !override.sym) {
    return std::nullopt;
  }
  const auto type_map = [](std::optional<int64_t> bits, std::optional<bool> sym) {
    return bits && sym && *sym && (*bits == 4 || *bits == 8);
  };
  const bool marlin =
      m_gptq.marlin_always || (type_map(m_config.bits, m_config.sym) && m_config.group_size &&
                               (*m_config.group_size == -1 || *m_config.group_size == 32 ||
                                *m_config.group_size == 64 || *m_config.group_size == 128));
  const std::optional<int64_t> bits = override.bits ? override.bits : m_config.bits;
  if (!bits) {
    return std::nullopt; // the config's own check reports a missing bits
  }
  if (!marlin) {
    // gptq.py GPTQConfig: 2, 3, 4 or 8 bits, sym not read.
    if (*bits == 2 || *bits == 3 || *bits == 4 || *bits == 8) {
      return std::nullopt;
    }
    return std::pair(*rule,
                     "ValueError: Currently, only 2/3/4/8-bit weight quantization is supported "
                     "for GPTQ, but got " +
                         std::to_string(*bits) + " bits.");
  }
  const std::optional<bool> sym = override.sym ? override.sym : m_config.sym;
  if (type_map(bits, sym)) {
    return std::nullopt;
  }
  return std::pair(*rule,
                   "ValueError: Unsupported quantization config: bits=" + std::to_string(*bits) +
                       ", sym=" + (sym ? (*sym ? "True" : "False") : "None"));
}

Decision GptqRules::checked(const Layer& layer, Decision decision) const {
  if (decision.verdict != Verdict::quantized || layer.kind != LayerKind::linear ||
      m_gptq.optimum_convert) {
    return decision;
  }
  if (auto refused = refused_override(layer)) {
    decision.verdict = Verdict::load_error;
    decision.by = DecidedBy::override_refused;
    decision.ignore_index = refused->first;
    decision.target = m_config.dynamic[refused->first].key;
    decision.error = std::move(refused->second);
  }
  return decision;
}

Decision GptqRules::decide(const Layer& layer) const {
  return checked(layer, decide_unchecked(layer));
}

bool GptqRules::in_optimum_block(const std::string& prefix) const {
  return !m_block.empty() && prefix.compare(0, m_block.size(), m_block) == 0;
}

std::optional<std::string> GptqRules::optimum_entry(const std::string& prefix) const {
  for (const std::string& entry : m_config.optimum.summed) {
    if (prefix.size() >= entry.size() &&
        prefix.compare(prefix.size() - entry.size(), entry.size(), entry) == 0) {
      return entry;
    }
  }
  return std::nullopt;
}

// optimum v2.1.0 gptq/quantizer.py convert_model (transformers quantizer_gptq.py
// _process_model_before_weight_loading): get_layers(model, prefix=block) collects the nn.Linear
// (and Conv1D, Conv2d) whose names start with the block; a list that is not None drops those
// no summed entry ends; the rest become QuantLinear. Nothing else is read (`dynamic`, `lm_head`).
// A flat list makes sum() raise (the config is refused); its entries are judged as the nested
// list the fix writes.
Decision GptqRules::decide_optimum(const Layer& layer) const {
  Decision decision;
  if (!in_optimum_block(layer.prefix)) {
    decision.by = DecidedBy::built_dense;
    decision.target = m_block;
    return decision;
  }
  if (m_config.optimum.given) {
    decision.target = "modules_in_block_to_quantize";
    if (auto entry = optimum_entry(layer.prefix)) {
      decision.verdict = Verdict::quantized;
      decision.by = DecidedBy::target_name;
      decision.target = std::move(*entry);
    }
    return decision;
  }
  decision.verdict = Verdict::quantized;
  decision.by = DecidedBy::target_name;
  decision.target = "(optimum's default: every Linear under " + m_block + ")";
  return decision;
}

Decision GptqRules::decide_unchecked(const Layer& layer) const {
  Decision decision;
  if (layer.kind == LayerKind::built_dense || layer.kind == LayerKind::embedding) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  if (m_gptq.optimum_convert) {
    return decide_optimum(layer);
  }
  if (!m_gptq.moe_reads_dynamic && layer.kind == LayerKind::experts) {
    decision.verdict = Verdict::quantized; // GPTQMarlinMoEMethod, dynamic not read
    decision.by = DecidedBy::built_quantized;
    return decision;
  }
  // The Qwen3.5 special case builds the MTP decoder layers (not fc) with no quant config.
  if (mtp_special_case() && is_qwen35_mtp_decoder_layer(layer.prefix)) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  if (!m_gptq.reads_module_list || layer.kind == LayerKind::experts) {
    // MoE layers (vLLM's get_moe_quant_method, auto_gptq.py), and every layer of an engine that
    // reads no module list, consult dynamic only.
    if (auto dynamic = decide_dynamic(layer)) {
      return *dynamic;
    }
    if (layer.kind == LayerKind::lm_head) {
      decision.verdict = m_config.lm_head ? Verdict::quantized : Verdict::dense;
      return decision;
    }
    bool undecidable = false;
    const auto rule = first_dynamic(layer.prefix, undecidable);
    decision.verdict = Verdict::quantized;
    decision.by = DecidedBy::target_name;
    decision.target = rule                        ? m_config.dynamic[*rule].key
                      : !m_gptq.reads_module_list ? "(" + std::string(m_dialect.engine_name) +
                                                        "'s GPTQ default: every Linear)"
                                                  : std::string("(GPTQ MoE default)");
    return decision;
  }
  // get_linear_quant_method (utils/gptq_utils.py): the head is a candidate only with "lm_head"
  // truthy; otherwise it gets no quant method, whatever dynamic says.
  if (layer.kind == LayerKind::lm_head && !m_config.lm_head) {
    decision.target = "lm_head";
    return decision;
  }
  // is_layer_gptq_quantized runs first and raises for shards that disagree, before dynamic.
  const std::vector<std::string> names = tested_names(layer);
  size_t hits = 0;
  const bool fused = m_model.shards_of(last_component(layer.prefix)) != nullptr;
  for (const std::string& name : names) {
    const bool hit = listed(name);
    hits += hit ? 1U : 0U;
    if (fused) {
      decision.shards.push_back(name);
      decision.shard_ignored.push_back(!hit);
    }
  }
  decision.target = "modules_in_block_to_quantize";
  if (hits != 0 && hits != names.size()) {
    decision.verdict = Verdict::load_error;
    decision.by = DecidedBy::fused_disagree;
    decision.error = "ValueError: Detected some but not all shards of " + layer.prefix +
                     " are quantized. All shards of fused layers to have the same precision.";
    return decision;
  }
  if (hits == 0) {
    return decision; // dense whatever dynamic says
  }
  if (auto dynamic = decide_dynamic(layer)) {
    return *dynamic;
  }
  decision.verdict = Verdict::quantized;
  decision.by = DecidedBy::target_name;
  return decision;
}

void GptqRules::trace_optimum(const Layer& layer, TraceLines& lines) const {
  if (m_block.empty()) {
    lines.emplace_back("block", "no BLOCK_PATTERNS entry starts a module name: optimum raises");
    return;
  }
  if (!in_optimum_block(layer.prefix)) {
    lines.emplace_back(
        "block", layer.prefix + " is not under " + m_block + ": optimum never replaces it (dense)");
    return;
  }
  lines.emplace_back("block", layer.prefix + " is under " + m_block);
  if (!m_config.optimum.given) {
    lines.emplace_back("list", "no modules_in_block_to_quantize: every Linear of the block");
  } else if (auto entry = optimum_entry(layer.prefix)) {
    lines.emplace_back("list", layer.prefix + " ends with \"" + *entry + "\"");
  } else {
    lines.emplace_back("list", "no entry of modules_in_block_to_quantize ends " + layer.prefix);
  }
  lines.emplace_back("dynamic", "optimum never reads dynamic or lm_head");
}

void GptqRules::trace_dynamic(const Layer& layer, TraceLines& lines) const {
  bool decided = false;
  for (size_t i = 0; i < m_config.dynamic.size(); ++i) {
    const auto& rule = m_config.dynamic[i];
    bool matched = false;
    bool gave_up = false;
    if (m_patterns[i]) {
      const auto result = m_patterns[i]->matches(layer.prefix, MatchMode::match);
      gave_up = !result;
      matched = result.value_or(false);
    }
    if (gave_up) {
      lines.emplace_back("dynamic[" + std::to_string(i) + "]",
                         "\"" + rule.key + "\" gave up (match limit) on " + layer.prefix +
                             ": the verdict cannot be known");
      decided = true;
      break;
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
}

std::vector<std::pair<std::string, std::string>> GptqRules::trace(const Layer& layer) const {
  std::vector<std::pair<std::string, std::string>> lines;
  const Decision decision = decide(layer);
  const auto verdict = [&] {
    lines.emplace_back("verdict", verdict_text(decision));
    return lines;
  };
  const std::string engine(m_dialect.engine_name);
  if (decision.by == DecidedBy::built_dense && m_model.is_plain_linear(layer.name)) {
    lines.emplace_back("built", "as a plain nn.Linear by the MTP draft: always dense");
    return verdict();
  }
  if (m_gptq.optimum_convert && layer.kind != LayerKind::built_dense &&
      layer.kind != LayerKind::embedding) {
    trace_optimum(layer, lines);
    return verdict();
  }
  if (!m_gptq.moe_reads_dynamic && layer.kind == LayerKind::experts) {
    lines.emplace_back(
        "experts", engine + "'s GPTQ Marlin quantizes every FusedMoE layer; dynamic is not read");
    return verdict();
  }
  if (mtp_special_case()) {
    lines.emplace_back("special", std::string(k_qwen35_dynamic_mtp_trace));
  }
  if (!m_gptq.reads_module_list || layer.kind == LayerKind::experts) {
    trace_dynamic(layer, lines);
    if (!m_gptq.reads_module_list) {
      lines.emplace_back("default",
                         engine + " reads no modules_in_block_to_quantize: a layer no negative "
                                  "rule matches is quantized");
    }
    return verdict();
  }
  if (layer.kind == LayerKind::lm_head && !m_config.lm_head) {
    lines.emplace_back("lm_head",
                       "\"lm_head\" is not true: vLLM gives the head no quant method (dynamic and "
                       "modules_in_block_to_quantize are not read)");
    return verdict();
  }
  const std::string source = m_config.modules_in_block
                                 ? std::string("modules_in_block_to_quantize")
                                 : std::string("the module list vLLM derives from the headers");
  bool any = false;
  for (const std::string& name : tested_names(layer)) {
    const auto hit = std::find_if(m_list.begin(), m_list.end(), [&](const std::string& entry) {
      return name.find(entry) != std::string::npos;
    });
    any = any || hit != m_list.end();
    lines.emplace_back("list",
                       hit == m_list.end()
                           ? "no entry of " + source + " is a substring of " + name
                           : "\"" + *hit + "\" of " + source + " is a substring of " + name);
  }
  if (decision.verdict != Verdict::load_error && any) {
    trace_dynamic(layer, lines); // get_linear_quant_method reads dynamic after the list test
  }
  return verdict();
}

} // namespace qpatch::engine
