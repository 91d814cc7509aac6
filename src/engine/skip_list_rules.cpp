// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/pattern.hpp>
#include <qpatch/engine/qwen35_mtp.hpp>
#include <qpatch/engine/skip_list_rules.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <cctype>
#include <set>

namespace qpatch::engine {

using util::ends_with;
using util::last_component;
using util::replace_all;

namespace {

// The algo of the quantized_layers key written exactly as `key`, or null.
const std::string* algo_of(const std::vector<std::pair<std::string, std::string>>& layers,
                           const std::string& key) {
  for (const auto& [name, algo] : layers) {
    if (name == key) {
      return &algo;
    }
  }
  return nullptr;
}

Decision skipped_by(Decision decision, size_t entry) {
  decision.verdict = Verdict::dense;
  decision.by = DecidedBy::ignore_entry;
  decision.ignore_index = entry;
  return decision;
}

} // namespace

// SGLang's is_layer_skipped test of one entry (SkippedMatch; quantization/utils.py on main).
bool skipped_match(SkippedMatch mode,
                   std::string_view ignored,
                   std::string_view prefix,
                   bool strip) {
  switch (mode) {
  case SkippedMatch::exact:
    return prefix == ignored;
  case SkippedMatch::substring:
    return prefix.find(ignored) != std::string_view::npos;
  case SkippedMatch::module_path:
    break;
  }
  // _module_path_match: equal, a parent (`prefix.startswith(ignored + ".")`), or a run of whole
  // parts (`"." + ignored + "." in "." + prefix + "."`).
  while (strip && !ignored.empty() && ignored.back() == '.') {
    ignored.remove_suffix(1);
  }
  while (strip && !prefix.empty() && prefix.back() == '.') {
    prefix.remove_suffix(1);
  }
  const std::string dotted = "." + std::string(prefix) + ".";
  return dotted.find("." + std::string(ignored) + ".") != std::string::npos;
}

std::string_view method_name(SkipListMethod method) {
  switch (method) {
  case SkipListMethod::awq:
    return "awq";
  case SkipListMethod::fp8:
    return "fp8";
  case SkipListMethod::modelopt:
    return "modelopt";
  case SkipListMethod::bitsandbytes:
    return "bitsandbytes";
  case SkipListMethod::quark:
    return "quark";
  }
  return "";
}

bool fnmatch(std::string_view name, std::string_view pattern) {
  size_t n = 0;
  size_t p = 0;
  size_t star = std::string_view::npos;
  size_t resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
      continue;
    }
    if (p < pattern.size() && pattern[p] == '[') {
      const size_t close = pattern.find(']', p + 2);
      if (close != std::string_view::npos) {
        const bool negate = pattern[p + 1] == '!';
        std::string_view set = pattern.substr(p + (negate ? 2 : 1), close - p - (negate ? 2 : 1));
        bool in = false;
        for (size_t i = 0; i < set.size(); ++i) {
          if (i + 2 < set.size() && set[i + 1] == '-') {
            in = in || (name[n] >= set[i] && name[n] <= set[i + 2]);
            i += 2;
          } else {
            in = in || name[n] == set[i];
          }
        }
        if (in != negate) {
          ++n;
          p = close + 1;
          continue;
        }
      } else if (name[n] == '[') {
        ++n;
        ++p;
        continue;
      }
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++n;
      ++p;
      continue;
    }
    if (star == std::string_view::npos) {
      return false;
    }
    p = star + 1;
    n = ++resume;
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

SkipListRules::SkipListRules(SkipListMethod method,
                             std::vector<std::string> entries,
                             const ModelInfo& model,
                             bool nvfp4,
                             const EngineVersion& version)
    : m_method(method), m_nvfp4(nvfp4), m_dialect(dialect_of(version, model)),
      m_skip(m_dialect.skip_list), m_entries(std::move(entries)), m_model(model) {
  // SGLang's Qwen3.5 VLM until #23471: the target's config holds the entries as the class's
  // mapper renamed them (apply_weight_name_mapper), the draft's as written: a second set of rules
  // judges the draft's layers (ModelInfo::target_config_mapper).
  if (m_model.target_config_mapper.maps(method_name(m_method))) {
    m_draft = std::make_unique<SkipListRules>(
        m_method, m_entries, m_model.without_target_config_mapper(), m_nvfp4, version);
  }
  if (m_skip.transformers_convert &&
      (m_method == SkipListMethod::awq || m_method == SkipListMethod::fp8)) {
    // Compiled once per entry, not per module (a 1T-parameter MoE has ~70k modules).
    for (const std::string& entry : m_entries) {
      auto pattern = Pattern::compile(entry, "modules_to_not_convert");
      m_convert_patterns.push_back(pattern ? std::optional<Pattern>(*pattern) : std::nullopt);
    }
    m_convert_patterns.push_back(*Pattern::compile("lm_head", "modules_to_not_convert"));
  }
  for (size_t i = 0; i < m_entries.size(); ++i) {
    const std::string& entry = m_entries[i];
    // ModelOpt: "X*" becomes "X" and "X.*" before the renames (dialect.hpp).
    const bool split = m_method == SkipListMethod::modelopt && m_skip.modelopt_splits_globs &&
                       entry.size() >= 2 && entry.back() == '*' && entry[entry.size() - 2] != '.';
    if (split) {
      const std::string stem = entry.substr(0, entry.size() - 1);
      hold(stem, i);
      hold(stem + ".*", i);
    } else if (m_method == SkipListMethod::fp8 && m_skip.fp8_model_prefix_variants) {
      // SGLang fp8.py @00563d3 Fp8Config.from_config: "Keep both "model." and non-"model."
      // variants": base = layer.removeprefix("model."), then base and f"model.{base}".
      const std::string base = entry.rfind("model.", 0) == 0 ? entry.substr(6) : entry;
      hold(base, i);
      hold("model." + base, i);
    } else {
      hold(entry, i);
    }
  }
  if (is_sglang_modelopt()) {
    compile_exclusions();
  }
  if (m_method == SkipListMethod::quark) {
    compile_quark_patterns();
  }
}

bool SkipListRules::is_sglang_modelopt() const {
  return m_method == SkipListMethod::modelopt && m_skip.modelopt_skipped_or_excluded;
}

void SkipListRules::hold_as(std::string name, size_t origin) {
  m_mapped.push_back(std::move(name));
  m_origin.push_back(origin);
}

void SkipListRules::hold(const std::string& entry, size_t origin) {
  if (m_draft) {
    hold_as(m_model.target_config_mapper.map(entry), origin);
    // ModelOptQuantConfigBase.apply_weight_name_mapper (#18370) also keeps each mapped name
    // that starts with "language_model." without it.
    constexpr std::string_view k_language_model = "language_model.";
    if (is_sglang_modelopt() && m_mapped.back().rfind(k_language_model, 0) == 0) {
      hold_as(m_mapped.back().substr(k_language_model.size()), origin);
    }
    return;
  }
  // The method's apply_vllm_mapper renames entries by the model's hf_to_vllm_mapper (auto_awq.py,
  // fp8.py, modelopt.py, vLLM main 017e9f4). vllm-bnb-plugin's BitsAndBytesConfig (85de847,
  // vllm_bnb_plugin/quantization/config.py), which vLLM main loads bitsandbytes through since
  // #43529, keeps QuantizationConfig's no-op one: its entries are compared as written.
  const bool renamed = m_method != SkipListMethod::bitsandbytes;
  hold_as(renamed && entry.find('.') != std::string::npos ? m_model.to_vllm(entry) : entry, origin);
  // SGLang's DeepSeek-V3 draft reads its own quant config, whose entries the NextN class's
  // mapper renamed (ModelInfo::draft_config_mapper: Quark from #19425, FP8 from #21280); the
  // target's are as written. One rules object judges both, so each renamed entry is held right
  // after its original (list order kept): an original names no draft layer (they are built under
  // model.decoder) and a copy no target layer (none is).
  // SGLang's ModelOpt config maps exclude_modules through it too, in every version judged
  // (modelopt_quant.py ModelOptQuantConfigBase.apply_weight_name_mapper, #18370 7b8365931,
  // 2026-02-08: hf_to_sglang_mapper.apply_list).
  if (m_model.draft_config_mapper.maps(method_name(m_method))) {
    if (std::string copy = m_model.draft_config_name(m_mapped.back()); copy != m_mapped.back()) {
      hold_as(std::move(copy), origin);
    }
  }
  if (m_method == SkipListMethod::quark) {
    // SGLang's GLM-5 draft from #30265 adds its own names for the NextN layer's entries
    // (ModelInfo::draft_quark_nextn_layer), keeping the originals.
    for (std::string& copy : m_model.draft_quark_copies(entry)) {
      hold_as(std::move(copy), origin);
    }
  }
}

void SkipListRules::compile_quark_patterns() {
  // _is_equal_or_regex_match: re.match(target[3:], name) for a "re:" target. One that does
  // not compile raises re.error when a layer's test reaches it (quark_raises).
  for (const std::string& entry : m_mapped) {
    std::optional<Pattern> pattern;
    std::string error;
    if (entry.rfind("re:", 0) == 0) {
      if (auto compiled = Pattern::compile(std::string_view(entry).substr(3), "exclude")) {
        pattern = std::move(*compiled);
      } else {
        error = compiled.error().message;
      }
    }
    m_quark_patterns.push_back(std::move(pattern));
    m_quark_errors.push_back(std::move(error));
  }
}

void SkipListRules::set_quantized_layers(std::vector<std::pair<std::string, std::string>> layers) {
  // vLLM renames the keys with its mapper; SGLang's Qwen3.5 classes have no
  // hf_to_sglang_mapper from #23471, so apply_weight_name_mapper never runs and the keys stay as
  // written; before it ModelOptMixedPrecisionConfig.apply_weight_name_mapper renames the
  // target's with Qwen3-VL's (apply_dict: no language_model.-stripped copy), the draft's stay.
  if (m_draft) {
    m_draft->set_quantized_layers(layers);
    for (auto& [key, algo] : layers) {
      key = m_model.target_config_mapper.map(key);
    }
  } else if (!m_skip.modelopt_skipped_or_excluded) {
    for (auto& [key, algo] : layers) {
      key = key.find('.') != std::string::npos ? m_model.to_vllm(key) : key;
    }
  } else if (m_model.draft_config_mapper.maps("modelopt")) {
    // SGLang's DeepSeek-V3 draft renames its own config's keys with its mapper
    // (ModelOptMixedPrecisionConfig.apply_weight_name_mapper: apply_dict, #20407 75a7879fd,
    // 2026-03-14, with MIXED_PRECISION itself): each renamed key is held right after its
    // original, as the entries are.
    std::vector<std::pair<std::string, std::string>> with_copies;
    with_copies.reserve(layers.size());
    for (auto& [key, algo] : layers) {
      std::string copy = m_model.draft_config_name(key);
      const bool renamed = copy != key;
      with_copies.emplace_back(std::move(key), algo);
      if (renamed) {
        with_copies.emplace_back(std::move(copy), algo);
      }
    }
    layers = std::move(with_copies);
  }
  m_layers = std::move(layers);
}

std::string SkipListRules::sglang_resolve_algo(const Layer& layer) const {
  // modelopt_quant.py (store 54490057226) ModelOptMixedPrecisionConfig._resolve_quant_algo.
  const auto& layers = *m_layers;
  const auto find = [&](const std::string& key) { return algo_of(layers, key); };
  const auto upper = util::upper_ascii;
  // 1. `if prefix in self.quantized_layers`.
  if (const auto* algo = find(layer.prefix)) {
    return upper(*algo);
  }
  // 2. The last part named by the quant config's packed_modules_mapping: the shards' algos,
  // one (else "Mixed quant_algo within fused layer"; a set, printed sorted here).
  const std::string last(last_component(layer.prefix));
  if (const auto* shards = m_model.shards_of_layer(layer.prefix)) {
    const std::string base = layer.prefix.substr(0, layer.prefix.size() - last.size());
    std::set<std::string> algos;
    for (const std::string& shard : *shards) {
      if (const auto* algo = find(base + shard)) {
        algos.insert(upper(*algo));
      }
    }
    if (algos.size() == 1) {
      return *algos.begin();
    }
    if (algos.size() > 1) {
      std::string text = "!";
      for (const std::string& algo : algos) {
        text += (text.size() > 1 ? ", '" : "'") + algo + "'";
      }
      return text;
    }
  }
  // 3. The first key, in file order, under the layer's name.
  const std::string under = layer.prefix + ".";
  for (const auto& [name, algo] : layers) {
    if (name.rfind(under, 0) == 0) {
      return upper(algo);
    }
  }
  return "";
}

std::string SkipListRules::resolve_algo(const Layer& layer) const {
  const auto& layers = *m_layers;
  // The name and its other Qwen-VL spelling (vLLM tries both), and lm_head for "...lm_head".
  const auto candidates = [](const std::string& name) {
    std::vector<std::string> out{name};
    constexpr std::string_view k_vllm = "language_model.model.";
    constexpr std::string_view k_hf = "model.language_model.";
    if (name.rfind(k_vllm, 0) == 0) {
      out.push_back(std::string(k_hf) + name.substr(k_vllm.size()));
    } else if (name.rfind(k_hf, 0) == 0) {
      out.push_back(std::string(k_vllm) + name.substr(k_hf.size()));
    }
    if (ends_with(name, ".lm_head")) {
      out.emplace_back("lm_head");
    }
    return out;
  };
  const auto find = [&](const std::string& key) { return algo_of(layers, key); };
  for (const std::string& name : candidates(layer.prefix)) {
    if (const auto* algo = find(name)) {
      return *algo;
    }
  }
  // Shards of a fused layer: the one algorithm they share, or an error when they differ.
  const std::string last(last_component(layer.prefix));
  if (const auto* shards = m_model.shards_of(last)) {
    std::vector<std::string> algos;
    for (const std::string& name : candidates(layer.prefix)) {
      for (const std::string& shard : *shards) {
        if (const auto* algo = find(replace_all(name, last, shard));
            algo && std::find(algos.begin(), algos.end(), *algo) == algos.end()) {
          algos.push_back(*algo);
        }
      }
    }
    if (algos.size() == 1) {
      return algos.front();
    }
    if (algos.size() > 1) {
      std::string text = "!";
      for (const std::string& algo : algos) {
        text += (text.size() > 1 ? ", " : "") + algo;
      }
      return text;
    }
  }
  // A key under the layer's name (RoutedExperts), or, for experts, under their parent.
  std::vector<std::string> prefixes;
  for (const std::string& name : candidates(layer.prefix)) {
    prefixes.push_back(name + ".");
  }
  if (ends_with(layer.prefix, ".experts")) {
    prefixes.push_back(layer.prefix.substr(0, layer.prefix.size() - 7));
  }
  for (const std::string& prefix : prefixes) {
    for (const auto& [name, algo] : layers) {
      if (name.rfind(prefix, 0) == 0) {
        return algo;
      }
    }
  }
  return "";
}

bool SkipListRules::matches(const std::string& entry, const std::string& name) const {
  switch (m_method) {
  case SkipListMethod::awq:
    return name.find(entry) != std::string::npos;
  case SkipListMethod::fp8:
    return skipped_match(m_skip.skipped_match, entry, name, m_skip.skipped_strips_dots);
  case SkipListMethod::quark: // a plain entry ("re:" ones: skipping_entry)
    return name == entry;
  case SkipListMethod::bitsandbytes: {
    // One dot-component equal to the entry, or the first k components joined equal to it.
    for (size_t start = 0; start <= name.size();) {
      const size_t dot = std::min(name.find('.', start), name.size());
      if (name.compare(start, dot - start, entry) == 0 || name.compare(0, dot, entry) == 0) {
        return true;
      }
      start = dot + 1;
    }
    return false;
  }
  case SkipListMethod::modelopt: {
    if (m_skip.modelopt_skipped_or_excluded) { // is_layer_skipped
      return skipped_match(m_skip.skipped_match, entry, name, m_skip.skipped_strips_dots);
    }
    constexpr std::string_view k_language_model = "language_model.";
    const std::string_view stripped = std::string_view(name).substr(
        name.rfind(k_language_model, 0) == 0 ? k_language_model.size() : 0);
    return name.find(entry) != std::string::npos ||
           stripped.find(entry) != std::string_view::npos || fnmatch(name, entry);
  }
  }
  return false;
}

std::optional<size_t> SkipListRules::skipping_entry(const std::string& name) const {
  if (const auto* draft = rules_for(name); draft != this) {
    return draft->skipping_entry(name);
  }
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    if (m_method == SkipListMethod::quark && m_mapped[i].rfind("re:", 0) == 0) {
      if (m_quark_patterns[i] &&
          m_quark_patterns[i]->matches(name, MatchMode::match).value_or(false)) {
        return m_origin[i];
      }
      continue;
    }
    if (matches(m_mapped[i], name)) {
      return m_origin[i];
    }
  }
  return std::nullopt;
}

std::optional<size_t> SkipListRules::exact_entry(const std::string& name) const {
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    if (m_mapped[i] == name) {
      return m_origin[i];
    }
  }
  return std::nullopt;
}

std::optional<size_t> SkipListRules::experts_entry(const std::string& name) const {
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    if (m_mapped[i].find("experts") != std::string::npos &&
        m_mapped[i].find(name) != std::string::npos) {
      return m_origin[i];
    }
  }
  return std::nullopt;
}

std::optional<size_t> SkipListRules::modelopt_excluded(const Layer& layer,
                                                       Decision& decision) const {
  // modelopt.py ModelOptQuantConfigBase.is_layer_excluded (vLLM main 017e9f4).
  if (m_mapped.empty()) {
    return std::nullopt;
  }
  const std::string& prefix = layer.prefix;
  const std::string last(last_component(prefix));
  // 1. quant_utils.py is_layer_skipped, exact mode, with the model's fused layers.
  if (const auto* shards = m_model.shards_of(last)) {
    if (const auto hit = m_skip.fused_name_skips ? exact_entry(prefix) : std::nullopt) {
      return hit;
    }
    std::optional<size_t> first;
    size_t hits = 0;
    for (const std::string& shard : *shards) {
      const std::string name = replace_all(prefix, last, shard);
      const auto hit = exact_entry(name);
      decision.shards.push_back(name);
      decision.shard_ignored.push_back(hit.has_value());
      hits += hit ? 1U : 0U;
      first = first ? first : hit;
    }
    if (hits != 0 && hits != shards->size()) {
      decision.verdict = Verdict::load_error;
      decision.by = DecidedBy::fused_disagree;
      decision.ignore_index = first;
      decision.error = "ValueError: Detected some but not all shards of " + prefix +
                       " are quantized. All shards of fused layers to have the same precision.";
      return std::nullopt;
    }
    if (first) {
      return first;
    }
  } else if (prefix.find("experts") != std::string::npos) {
    if (const auto hit = experts_entry(prefix)) {
      return hit;
    }
  } else if (const auto hit = exact_entry(prefix)) {
    return hit;
  }
  // 2. An entry contained in the name, also in the name without "language_model.".
  constexpr std::string_view k_language_model = "language_model.";
  const std::string_view stripped = std::string_view(prefix).substr(
      prefix.rfind(k_language_model, 0) == 0 ? k_language_model.size() : 0);
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    const std::string& entry = m_mapped[i];
    if (entry != prefix &&
        (prefix.find(entry) != std::string::npos ||
         (stripped.size() != prefix.size() && stripped.find(entry) != std::string_view::npos))) {
      return m_origin[i];
    }
  }
  // 3. A glob over the whole name.
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    if (fnmatch(prefix, m_mapped[i])) {
      return m_origin[i];
    }
  }
  return std::nullopt;
}

void SkipListRules::compile_exclusions() {
  // modelopt_quant.py ModelOptQuantConfig.is_layer_excluded (SGLang, store 54490057226):
  // regex_str = pattern.replace(".", r"\.").replace("*", r".*"), then re.fullmatch. An entry
  // with no other regex character is a literal or a "*"-glob (fnmatch without ? and [ is the
  // same test, and cheap); any other is compiled as the Python regex it becomes. The entries as
  // the config holds them after apply_weight_name_mapper (m_mapped: the draft's renamed copies).
  for (const std::string& entry : m_mapped) {
    Exclusion exclusion;
    if (entry.find_first_of("?+()[]{}|^$\\") != std::string::npos) {
      exclusion.kind = Exclusion::Kind::regex;
      auto pattern =
          Pattern::compile(replace_all(replace_all(entry, ".", "\\."), "*", ".*"), "ignore");
      if (pattern) {
        exclusion.pattern = *pattern;
      } // re.error escapes is_layer_excluded: not modelled, taken to match nothing
    } else if (entry.find('*') != std::string::npos) {
      exclusion.kind = Exclusion::Kind::glob;
    }
    const size_t dot = entry.rfind('.');
    const std::string tail = dot == std::string::npos ? entry : entry.substr(dot + 1);
    // fused_patterns: the MLA projections fused_qkv_a_proj_with_mqa is built from.
    for (const char* part : {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"}) {
      exclusion.fused_tail = exclusion.fused_tail || tail == part;
    }
    exclusion.tail = tail;
    m_exclusions.push_back(std::move(exclusion));
  }
}

std::optional<size_t> SkipListRules::modelopt_glob_excluded(const std::string& prefix) const {
  // prefixes_to_check: the name, and the name without a leading "language_model."; each whole,
  // then each of its dot-separated parts (the stripped name's parts are among the name's).
  constexpr std::string_view k_language_model = "language_model.";
  std::vector<std::string_view> names{prefix};
  if (prefix.rfind(k_language_model, 0) == 0) {
    names.push_back(std::string_view(prefix).substr(k_language_model.size()));
  }
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= prefix.size();) {
    const size_t dot = std::min(prefix.find('.', start), prefix.size());
    parts.push_back(std::string_view(prefix).substr(start, dot - start));
    start = dot + 1;
  }
  const std::string_view last = parts.back();
  if (m_skip.modelopt_excluded_per_class) {
    if (!m_nvfp4) {
      // ModelOptFp8Config before #18546: the entry a substring of either name.
      for (size_t i = 0; i < m_mapped.size(); ++i) {
        if (std::any_of(names.begin(), names.end(), [&](std::string_view name) {
              return name.find(m_mapped[i]) != std::string_view::npos;
            })) {
          return m_origin[i];
        }
      }
      return std::nullopt;
    }
    names.resize(1); // ModelOptFp4Config before #18546: the whole name only
    parts.clear();
  }
  for (size_t i = 0; i < m_exclusions.size(); ++i) {
    const Exclusion& exclusion = m_exclusions[i];
    const std::string& entry = m_mapped[i];
    const auto full = [&](std::string_view name) {
      switch (exclusion.kind) {
      case Exclusion::Kind::literal:
        return name == entry;
      case Exclusion::Kind::glob:
        return fnmatch(name, entry);
      case Exclusion::Kind::regex:
        return exclusion.pattern &&
               exclusion.pattern->matches(name, MatchMode::fullmatch).value_or(false);
      }
      return false;
    };
    if (std::any_of(names.begin(), names.end(), full) ||
        std::any_of(parts.begin(), parts.end(), full) ||
        (exclusion.fused_tail && last.find(exclusion.tail) != std::string_view::npos)) {
      return m_origin[i];
    }
  }
  return std::nullopt;
}

std::optional<std::string> SkipListRules::built_dense_reason(const Layer& layer) const {
  const bool qwen_mtp = is_qwen35(m_model) || m_model.architecture == "Qwen3NextForCausalLM";
  // ParallelLMHead: FP8 (fp8.py Fp8Config.get_quant_method) and bitsandbytes ask LinearBase
  // only; AWQ adds it with lm_head: true (auto_awq.py AutoAWQConfig.get_quant_method); ModelOpt
  // quantizes LinearBase and ParallelLMHead alike (modelopt.py get_quant_method).
  const bool head_quantizable =
      (m_method == SkipListMethod::modelopt && m_skip.modelopt_quantizes_head) ||
      (m_method == SkipListMethod::awq && m_skip.awq_reads_lm_head && m_lm_head_quantized);
  // SGLang's DeepSeek NextN draft under Quark (#23219): eh_proj is a ReplicatedLinear with the
  // quant config; and the whole draft model has none when exclude skips its mapped prefix.
  const bool quark_nextn_linear =
      m_method == SkipListMethod::quark && m_model.quark_builds_plain_linears &&
      layer.kind == LayerKind::built_dense && m_model.is_plain_linear(layer.name);
  if (m_method == SkipListMethod::quark && !m_model.draft_quark_drop_prefix.empty() &&
      m_model.in_draft_model(layer.prefix) && skipping_entry(m_model.draft_quark_drop_prefix)) {
    return "without a quant config by SGLang's DeepSeek NextN draft: exclude skips " +
           m_model.draft_quark_drop_prefix + " (#23219): always dense";
  }
  if (m_method == SkipListMethod::modelopt && m_nvfp4 && !m_layers &&
      m_model.draft_dense_under_nvfp4 && m_model.in_draft_model(layer.prefix)) {
    return std::string("without a quant config by SGLang's DeepSeek NextN draft under "
                       "modelopt_fp4 (DeepseekModelNextN): always dense");
  }
  // vLLM's SigLIP MLP takes the quant config under bitsandbytes whatever its sizes.
  const bool bnb_linear = m_method == SkipListMethod::bitsandbytes &&
                          layer.kind == LayerKind::built_dense &&
                          m_model.dense_but_bitsandbytes_for(layer.name);
  if ((layer.kind == LayerKind::built_dense && !quark_nextn_linear && !bnb_linear) ||
      layer.kind == LayerKind::embedding ||
      (layer.kind == LayerKind::lm_head && !head_quantizable)) {
    return "with no quant config (" + layer.cls + "): always dense";
  }
  // ModelOptQuantConfigBase.get_quant_method: a layer that is not excluded but whose name holds
  // one of these is built dense (not under MIXED_PRECISION, whose get_quant_method has no such
  // rule).
  if (m_method == SkipListMethod::modelopt && m_skip.modelopt_dense_vision && !m_layers) {
    for (const char* part : {"vision_tower", "vision_model", "vit_large_projector"}) {
      if (layer.prefix.find(part) != std::string::npos) {
        return std::string("unquantized by ModelOpt: the name holds \"") + part +
               "\" (modelopt.py get_quant_method): always dense";
      }
    }
  }
  if (m_method == SkipListMethod::quark && m_skip.quark_mtp_entry_drops_draft_quant &&
      is_qwen35(m_model) && !m_model.draft_layer_prefix.empty() &&
      layer.prefix.rfind(m_model.draft_layer_prefix, 0) == 0 &&
      std::any_of(m_entries.begin(), m_entries.end(), [](const std::string& entry) {
        return entry.rfind("mtp.", 0) == 0;
      })) {
    // sgl-project/sglang#23146: qwen3_5_mtp.py (@008b79d) _mtp_quant_config returns None for a
    // Quark config with any exclude entry starting with "mtp.".
    return std::string("without a quant config by SGLang's Qwen3.5 MTP draft: an exclude entry "
                       "starts with \"mtp.\" (#23146): always dense");
  }
  if (m_method == SkipListMethod::modelopt && m_nvfp4 && m_skip.nvfp4_dense_attention_and_draft &&
      is_qwen35(m_model)) {
    // sgl-project/sglang#18937: qwen3_5_mtp.py (@008b79d) _mtp_quant_config gives the draft no
    // quant config for a serialized modelopt_fp4 checkpoint; qwen3_5.py (@005fa71) builds the
    // decoder layers' linear_attn and self_attn with quant_config None under modelopt_fp4.
    const std::string& draft = m_model.draft_layer_prefix;
    if (!draft.empty() && layer.prefix.rfind(draft, 0) == 0) {
      return std::string("without a quant config by SGLang's Qwen3.5 MTP draft under "
                         "modelopt_fp4 (#18937): always dense");
    }
    if (layer.prefix.find(".self_attn.") != std::string::npos ||
        layer.prefix.find(".linear_attn.") != std::string::npos) {
      return std::string("without a quant config by SGLang's Qwen3.5 attention under "
                         "modelopt_fp4 (#18937): always dense");
    }
  }
  if (m_method == SkipListMethod::modelopt && m_layers && m_skip.modelopt_skipped_or_excluded &&
      m_skip.nvfp4_dense_attention_and_draft && is_qwen35(m_model)) {
    // qwen3_5_mtp.py (@008b79d) _mtp_quant_config gives the draft no quant config for
    // modelopt_mixed either (the same function as #18937's; assumed to land with it).
    const std::string& draft = m_model.draft_layer_prefix;
    if (!draft.empty() && layer.prefix.rfind(draft, 0) == 0) {
      return std::string("without a quant config by SGLang's Qwen3.5 MTP draft under "
                         "modelopt_mixed: always dense");
    }
  }
  if (m_nvfp4 && m_skip.fc_dense_nvfp4 && qwen_mtp && layer.prefix == "mtp.fc") {
    return std::string("without a quant config by vLLM's Qwen draft under modelopt_fp4 (#38832, "
                       "#46316): always dense");
  }
  return std::nullopt;
}

Decision SkipListRules::transformers_quark_decide(const Layer& layer, Decision decision) const {
  // quantizers/quantizer_quark.py (10cc83c) _process_model_before_weight_loading hands the whole
  // config to amd-quark's _map_to_quark (quark/torch/export/api.py @1d27b55): every module whose
  // type is nn.Linear is replaced unless get_layer_quant_config
  // (export/main_export/quant_config_parser.py, quark 0.12) finds an `exclude` entry that
  // fnmatch.fnmatch-es its module name. A glob over the whole name: no "re:" (taken literally),
  // no substring, no parent covering its children, no renaming, no default "lm_head" (lm_head
  // is an nn.Linear like any other). Experts are judged as nn.Linear modules (transformers 4.x's
  // per-expert MLPs; v5's fused expert parameters are not modelled).
  for (size_t i = 0; i < m_entries.size(); ++i) {
    if (fnmatch(layer.name, m_entries[i])) {
      return skipped_by(decision, i);
    }
  }
  decision.verdict = Verdict::quantized;
  decision.by = DecidedBy::target_class;
  return decision;
}

Decision SkipListRules::transformers_decide(const Layer& layer, Decision decision) const {
  // quantizers/base.py get_modules_to_not_convert and quantizers_utils.py should_convert_module
  // (transformers, commits in tools/transformers_diff/SOURCES); integrations/bitsandbytes.py
  // _replace_with_bnb_linear. Only nn.Linear modules are replaced: embeddings and conv1d stay.
  if (layer.kind == LayerKind::embedding || layer.kind == LayerKind::built_dense) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  const std::string& name = layer.name;
  if (m_method == SkipListMethod::quark) {
    return transformers_quark_decide(layer, decision);
  }
  const bool awq = m_method == SkipListMethod::awq;
  // Fine-grained FP8 (quantizer_finegrained_fp8.py, integrations/finegrained_fp8.py
  // replace_with_fp8_linear; store copies named in tools/transformers_diff/SOURCES) matches by
  // should_convert_module too, over the list get_modules_to_not_convert returns.
  const bool regex = awq || m_method == SkipListMethod::fp8;
  // Whether entry `i` (m_entries, then the default "lm_head") skips the module; nothing when
  // its regex gave up (AWQ).
  static const std::string k_head = "lm_head";
  const auto skips = [&](size_t i) -> std::optional<bool> {
    const std::string& entry = i < m_entries.size() ? m_entries[i] : k_head;
    if (!regex) {
      return std::optional<bool>(last_component(name) == entry || name == entry ||
                                 name.find(entry + ".") != std::string::npos);
    }
    // re.match(entry + r"\.", name) or re.match(entry, name) or name.endswith(entry): the
    // second covers the first; the entry is a Python regex matched at the start. One that does
    // not compile refuses the whole config (transformers/config_checks.cpp).
    const std::optional<Pattern>& pattern = m_convert_patterns[i];
    if (!pattern) {
      return std::optional<bool>(ends_with(name, entry));
    }
    const auto matched = pattern->matches(name, MatchMode::match);
    if (!matched) {
      return std::optional<bool>();
    }
    return std::optional<bool>(*matched || ends_with(name, entry));
  };
  // The default skip: AWQ always adds "lm_head" (add_default_skips); bitsandbytes and FP8 only
  // when no list is given (llm_int8_skip_modules, or modules_to_not_convert and ignored_layers,
  // None). It is tried after the list (any match skips).
  const size_t count = m_entries.size() + (awq || !m_list_given ? 1 : 0);
  for (size_t i = 0; i < count; ++i) {
    const auto hit = skips(i);
    if (!hit) {
      decision.by = DecidedBy::undecidable;
      return decision;
    }
    if (*hit) {
      decision.verdict = Verdict::dense;
      if (i < m_entries.size()) {
        decision.by = DecidedBy::ignore_entry;
        decision.ignore_index = i;
      } else {
        decision.by = DecidedBy::built_dense;
        decision.target = "lm_head";
      }
      return decision;
    }
  }
  decision.verdict = Verdict::quantized;
  decision.by = DecidedBy::target_class;
  return decision;
}

std::vector<std::pair<std::string, std::string>>
SkipListRules::trace(const Layer& layer, const std::string& key) const {
  if (const auto* draft = rules_for(layer.prefix); draft != this) {
    return draft->trace(layer, key);
  }
  std::vector<std::pair<std::string, std::string>> lines;
  const auto how = [&] {
    switch (m_method) {
    case SkipListMethod::awq:
      return "is contained in";
    case SkipListMethod::fp8:
      return "equals";
    case SkipListMethod::bitsandbytes:
      return "is a dot-component or dotted prefix of";
    case SkipListMethod::modelopt:
      return "equals, is contained in or glob-matches";
    case SkipListMethod::quark:
      return "equals (or as re: matches the start of)";
    }
    return "matches";
  }();
  // ModelOpt checks a fused layer's shards exactly, as FP8 does (is_layer_skipped).
  const auto test = [&](const std::string& name, const std::string& label, bool exact) {
    if (const auto hit = exact ? exact_entry(name) : skipping_entry(name)) {
      lines.emplace_back(key + "[" + std::to_string(*hit) + "]",
                         "\"" + m_entries[*hit] + "\" " + (exact ? "equals" : how) + " " + name);
      return true;
    }
    lines.emplace_back(label,
                       std::to_string(m_entries.size()) +
                           (m_entries.size() == 1 ? " entry checked, " : " entries checked, ") +
                           "none " + (exact ? "equals " : "matches ") + name);
    trace_renamed_away(name, key, lines);
    return false;
  };
  if (m_skip.transformers_convert && m_method == SkipListMethod::quark) {
    // amd-quark's get_layer_quant_config: one name, every entry a glob over all of it.
    const Decision decision = decide(layer);
    if (decision.ignore_index) {
      lines.emplace_back(key + "[" + std::to_string(*decision.ignore_index) + "]",
                         "\"" + m_entries[*decision.ignore_index] + "\" fnmatch-es " + layer.name);
    } else if (decision.by == DecidedBy::built_dense) {
      lines.emplace_back("built", "not an nn.Linear: never replaced");
    } else {
      lines.emplace_back(key,
                         std::to_string(m_entries.size()) +
                             (m_entries.size() == 1 ? " entry checked, " : " entries checked, ") +
                             "none fnmatch-es " + layer.name);
    }
    lines.emplace_back("verdict", verdict_text(decision));
    return lines;
  }
  const bool fp8 = m_method == SkipListMethod::fp8;
  const std::string last(last_component(layer.prefix));
  const bool fused = m_model.shards_of_layer(layer.prefix) != nullptr;
  if (m_method == SkipListMethod::modelopt && m_skip.modelopt_unsupported) {
    lines.emplace_back("built",
                       std::string(m_dialect.engine_name) +
                           " has no ModelOpt quantizer: the config is skipped and every "
                           "layer built dense");
  } else if (const auto reason = built_dense_reason(layer)) {
    lines.emplace_back("built", *reason);
  } else if (fp8 && !fused && layer.prefix.find("experts") != std::string::npos) {
    const auto hit = experts_entry(layer.prefix);
    lines.emplace_back(key,
                       !hit ? "no entry containing \"experts\" contains " + layer.prefix
                            : "\"" + m_entries[*hit] + "\" contains \"experts\" and " +
                                  layer.prefix);
  } else if (!test(layer.prefix, key, fp8) && layer.kind != LayerKind::experts &&
             !(m_skip.awq_built_name_only && m_method == SkipListMethod::awq) &&
             m_method != SkipListMethod::bitsandbytes) {
    if (const auto* shards = m_model.shards_of_layer(layer.prefix)) {
      for (const std::string& shard : *shards) {
        test(replace_all(layer.prefix, last, shard),
             "shard",
             fp8 || m_method == SkipListMethod::modelopt);
      }
    }
  }
  const Decision decision = decide(layer);
  if (m_layers && (decision.by == DecidedBy::no_target || decision.by == DecidedBy::target_name)) {
    lines.emplace_back("quantized_layers",
                       decision.by == DecidedBy::no_target
                           ? "no entry names " + layer.prefix + ": built dense"
                           : "names " + layer.prefix + " (" + decision.target + ")");
  }
  lines.emplace_back("verdict", verdict_text(decision));
  return lines;
}

Decision SkipListRules::listed_or_quantized(const Layer& layer,
                                            Decision decision,
                                            bool sglang_modelopt) const {
  decision.verdict = Verdict::quantized;
  decision.by = DecidedBy::target_class;
  if (!m_layers) {
    return decision;
  }
  std::string algo = sglang_modelopt ? sglang_resolve_algo(layer) : resolve_algo(layer);
  if (algo.rfind('!', 0) != 0) {
    algo = util::upper_ascii(std::move(algo));
    // An algo the engine has no method for is UnquantizedLinearMethod (a FusedMoE: None).
    const auto& built = m_skip.modelopt_mixed_algos;
    if (std::find(built.begin(), built.end(), algo) == built.end()) {
      algo.clear();
    }
  }
  if (algo.empty()) {
    decision.verdict = Verdict::dense;
    decision.by = DecidedBy::no_target;
    decision.target = "quantized_layers";
  } else if (algo.front() == '!') {
    decision.verdict = Verdict::load_error;
    decision.by = DecidedBy::fused_disagree;
    decision.error = "ValueError: Mixed quant_algo within fused layer " + layer.prefix + ": {" +
                     algo.substr(1) + "}. All shards must use the same quantization.";
  } else {
    decision.by = DecidedBy::target_name;
    decision.target = algo;
  }
  return decision;
}

Decision
SkipListRules::not_skipped(const Layer& layer, Decision decision, bool sglang_modelopt) const {
  if (sglang_modelopt) {
    if (const auto hit = modelopt_glob_excluded(layer.prefix)) {
      return skipped_by(decision, *hit);
    }
  }
  return listed_or_quantized(layer, decision, sglang_modelopt);
}

void SkipListRules::trace_renamed_away(
    const std::string& name,
    const std::string& key,
    std::vector<std::pair<std::string, std::string>>& lines) const {
  // An entry written as the name itself that the target's mapper renamed: why it misses.
  if (!m_draft) {
    return;
  }
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    if (m_entries[m_origin[i]] == name && m_mapped[i] != name) {
      lines.emplace_back(key + "[" + std::to_string(m_origin[i]) + "]",
                         "\"" + name + "\" is held as \"" + m_mapped[i] + "\" after " +
                             m_model.target_config_mapper.source);
      return;
    }
  }
}

const SkipListRules* SkipListRules::rules_for(std::string_view prefix) const {
  return m_draft && m_model.in_draft_model(prefix) ? m_draft.get() : this;
}

Decision SkipListRules::decide(const Layer& layer) const {
  if (const auto* draft = rules_for(layer.prefix); draft != this) {
    return draft->decide(layer);
  }
  Decision decision;
  decision.target = m_method == SkipListMethod::awq            ? "AWQ"
                    : m_method == SkipListMethod::fp8          ? "FP8"
                    : m_method == SkipListMethod::bitsandbytes ? "bitsandbytes"
                    : m_method == SkipListMethod::quark        ? "Quark"
                                                               : "ModelOpt";
  if (m_method == SkipListMethod::modelopt && m_skip.modelopt_unsupported) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  if (m_skip.transformers_convert) {
    return transformers_decide(layer, decision);
  }
  if (built_dense_reason(layer)) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  if (m_method == SkipListMethod::quark) {
    return quark_decide(layer, decision);
  }
  // SGLang's ModelOpt: is_layer_skipped (the FP8 path below) or is_layer_excluded, then for
  // MIXED_PRECISION the algo _resolve_quant_algo gives (ModelOptMixedPrecisionConfig.
  // get_quant_method tests both the same way).
  const bool sglang_modelopt = is_sglang_modelopt();
  if (m_skip.awq_built_name_only && m_method == SkipListMethod::awq) {
    // Every layer, fused or experts, is tested under the one name the engine builds it as.
    if (const auto hit = skipping_entry(layer.prefix)) {
      return skipped_by(decision, *hit);
    }
    decision.verdict = Verdict::quantized;
    decision.by = DecidedBy::target_class;
    return decision;
  }
  // ModelOptMixedPrecisionConfig.get_quant_method resolves the algo first, for every layer: a
  // fused layer whose shards disagree raises even when an entry excludes it.
  if (sglang_modelopt && m_layers) {
    if (const std::string algo = sglang_resolve_algo(layer); algo.rfind('!', 0) == 0) {
      return listed_or_quantized(layer, decision, sglang_modelopt);
    }
  }
  if (sglang_modelopt && layer.kind == LayerKind::experts) {
    if (m_skip.modelopt_excluded_per_class) {
      return listed_or_quantized(layer, decision, sglang_modelopt); // never excluded
    }
    return not_skipped(layer, decision, sglang_modelopt); // a FusedMoE asks is_layer_excluded
  }
  if (m_method == SkipListMethod::modelopt && !sglang_modelopt) {
    if (const auto hit = modelopt_excluded(layer, decision)) {
      return skipped_by(decision, *hit);
    }
    if (decision.verdict == Verdict::load_error) {
      return decision;
    }
    decision.shards.clear();
    decision.shard_ignored.clear();
    return listed_or_quantized(layer, decision, sglang_modelopt);
  }
  const bool exact_mode = m_method == SkipListMethod::fp8 || sglang_modelopt;
  return decide_by_names(layer, decision, exact_mode, sglang_modelopt);
}

Decision SkipListRules::decide_by_names(const Layer& layer,
                                        Decision decision,
                                        bool exact_mode,
                                        bool sglang_modelopt) const {
  const std::string last(last_component(layer.prefix));
  // SGLang's Fp8Config before #18742: no fused mapping, and a FusedMoE is always FP8.
  const bool fp8_unmapped = m_method == SkipListMethod::fp8 && m_skip.fp8_without_fused_mapping;
  if (fp8_unmapped && layer.kind == LayerKind::experts) {
    decision.verdict = Verdict::quantized;
    decision.by = DecidedBy::target_class;
    return decision;
  }
  // The mapping of the quant config that builds the layer (a draft's own, SGLang's Qwen3.5
  // MTP: {} before #35887, so its qkv_proj is tested by that name); SGLang's fallback shards
  // (#23467) for a name the mapping lacks.
  const auto* layer_shards = fp8_unmapped ? nullptr : m_model.shards_of_layer(layer.prefix);
  if (layer_shards == nullptr && exact_mode && !fp8_unmapped) {
    for (const auto& [fused_name, shards] : m_skip.fallback_fused_shards) {
      if (fused_name == last) {
        layer_shards = &shards;
      }
    }
  }
  const bool fused = layer_shards != nullptr;
  // SGLang's is_layer_skipped (quantization/utils/utils.py @c5bef61): an unfused name holding
  // "gate_up_proj" takes that branch, not the experts one (`if ... elif "experts" in prefix`).
  const bool gate_up_by_parts = exact_mode && m_skip.fp8_gate_up_by_parts && !fused &&
                                layer.prefix.find("gate_up_proj") != std::string::npos;
  // is_layer_skipped's exact mode (fp8.py): any name holding "experts" that is not fused, a
  // Linear too (DeepSeek's mlp.shared_experts.down_proj), takes the experts rule.
  if (exact_mode && !fused && !gate_up_by_parts &&
      layer.prefix.find("experts") != std::string::npos) {
    // From #18742 `is_skipped = is_skipped or any(...)`: the general hit stands.
    if (const auto hit =
            m_skip.experts_keep_general_hit ? skipping_entry(layer.prefix) : std::nullopt) {
      return skipped_by(decision, *hit);
    }
    if (const auto hit = experts_entry(layer.prefix)) {
      return skipped_by(decision, *hit);
    }
    return not_skipped(layer, decision, sglang_modelopt);
  }
  if (layer.kind == LayerKind::experts) {
    if (const auto hit = m_method == SkipListMethod::bitsandbytes && m_skip.bnb_experts_ignore_list
                             ? std::nullopt
                             : skipping_entry(layer.prefix)) {
      return skipped_by(decision, *hit);
    }
    return listed_or_quantized(layer, decision, sglang_modelopt);
  }
  // A fused name listed (or, for AWQ, contained) verbatim is honoured first; before #43981 a
  // fused layer was judged through its shards only (a layer no mapping fuses is its own name).
  if (const auto direct =
          fused && !m_skip.fused_name_skips && m_method != SkipListMethod::bitsandbytes
              ? std::nullopt
              : skipping_entry(layer.prefix)) {
    return skipped_by(decision, *direct);
  }
  if (m_method == SkipListMethod::bitsandbytes) {
    decision.verdict = Verdict::quantized; // bitsandbytes tests the fused name only
    decision.by = DecidedBy::target_class;
    return decision;
  }
  std::vector<std::string> names{layer.prefix};
  if (const auto* shards = layer_shards) {
    names.clear();
    for (const std::string& shard : *shards) {
      names.push_back(replace_all(layer.prefix, last, shard));
    }
  }
  const auto [first, hits] = test_shards(names, decision);
  if (hits != 0 && hits != names.size()) {
    decision.verdict = Verdict::load_error;
    decision.by = DecidedBy::fused_disagree;
    decision.ignore_index = first;
    decision.error = "ValueError: Detected some but not all shards of " + layer.prefix +
                     " are quantized. All shards of fused layers to have the same precision.";
    return decision;
  }
  if (first) {
    return skipped_by(decision, *first);
  }
  if (gate_up_by_parts) {
    // `if prefix_gate in ignored_layers and prefix_up in ignored_layers: is_skipped = True`,
    // each name prefix.replace("gate_up_proj", ...).
    const auto gate = exact_entry(replace_all(layer.prefix, "gate_up_proj", "gate_proj"));
    if (gate && exact_entry(replace_all(layer.prefix, "gate_up_proj", "up_proj"))) {
      return skipped_by(decision, *gate);
    }
  }
  return not_skipped(layer, decision, sglang_modelopt);
}

std::pair<std::optional<size_t>, size_t>
SkipListRules::test_shards(const std::vector<std::string>& names, Decision& decision) const {
  std::optional<size_t> first;
  size_t hits = 0;
  for (const std::string& name : names) {
    const auto hit = skipping_entry(name);
    decision.shards.push_back(name);
    decision.shard_ignored.push_back(hit.has_value());
    hits += hit ? 1U : 0U;
    first = first ? first : hit;
  }
  return {first, hits};
}

std::optional<std::string> SkipListRules::quark_raises(const std::string& name) const {
  // check_equal_or_regex_match is any() over the targets in order: a target that does not
  // compile raises unless an earlier one already matched (quark/utils.py, vLLM 017e9f4).
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    if (!m_quark_errors[i].empty()) {
      return "re.error: exclude entry \"" + m_entries[m_origin[i]] + "\" is not a Python regex (" +
             m_quark_errors[i] + ")";
    }
    if (m_mapped[i].rfind("re:", 0) == 0
            ? m_quark_patterns[i]->matches(name, MatchMode::match).value_or(false)
            : matches(m_mapped[i], name)) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

Decision SkipListRules::quark_decide(const Layer& layer, Decision decision) const {
  const auto skipped_by = [&](size_t i) {
    decision.verdict = Verdict::dense;
    decision.by = DecidedBy::ignore_entry;
    decision.ignore_index = i;
    return decision;
  };
  // check_children (#46757): `target == layer_name or target.startswith(layer_name + ".")` over
  // the plain targets, before any other test.
  if (layer.kind == LayerKind::experts && m_skip.quark_experts_by_children) {
    for (size_t i = 0; i < m_mapped.size(); ++i) {
      const std::string& entry = m_mapped[i];
      if (entry.rfind("re:", 0) != 0 &&
          (entry == layer.prefix || entry.rfind(layer.prefix + ".", 0) == 0)) {
        return skipped_by(m_origin[i]);
      }
    }
  }
  const std::string last(last_component(layer.prefix));
  const auto* shards = m_model.shards_of_layer(layer.prefix);
  std::vector<std::string> tested{layer.prefix};
  if (shards != nullptr) {
    tested.clear();
    for (const std::string& shard : *shards) {
      tested.push_back(replace_all(layer.prefix, last, shard));
    }
  }
  for (const std::string& name : tested) {
    if (auto error = quark_raises(name)) {
      decision.verdict = Verdict::load_error;
      decision.by = DecidedBy::undecidable;
      decision.error = std::move(*error);
      return decision;
    }
  }
  if (shards == nullptr) {
    if (const auto hit = skipping_entry(layer.prefix)) {
      return skipped_by(*hit);
    }
    decision.verdict = Verdict::quantized;
    decision.by = DecidedBy::target_class;
    return decision;
  }
  // `layer_name.replace(proj_name, shard_proj_name)` for each shard; the first shard sets the
  // verdict and every other must agree.
  std::vector<std::string> names;
  std::string listed;
  for (const std::string& shard : *shards) {
    names.push_back(replace_all(layer.prefix, last, shard));
    listed += (listed.empty() ? "'" : ", '") + shard + "'";
  }
  const auto [first, hits] = test_shards(names, decision);
  if (hits != 0 && hits != names.size()) {
    decision.verdict = Verdict::load_error;
    decision.by = DecidedBy::fused_disagree;
    decision.ignore_index = first;
    decision.error = "ValueError: Found a different quantization schemes for [" + listed + "] in " +
                     layer.prefix + ". vLLM requires all to use the same scheme.";
    return decision;
  }
  if (first) {
    return skipped_by(*first);
  }
  decision.verdict = Verdict::quantized;
  decision.by = DecidedBy::target_class;
  return decision;
}

} // namespace qpatch::engine
