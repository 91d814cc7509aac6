// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/qwen35_mtp.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>

namespace qpatch::engine {

using util::last_component;
using util::replace_all;

namespace {

bool is_regex(const std::string& text) {
  return text.rfind("re:", 0) == 0;
}

// True when "re:" target `target` re.match-es the class name of some layer an engine builds
// (layers.cpp's classes): only then can its class step match.
bool regex_matches_a_class(const std::string& target) {
  static const char* const k_classes[] = {"ColumnParallelLinear",
                                          "MergedColumnParallelLinear",
                                          "QKVParallelLinear",
                                          "RowParallelLinear",
                                          "ReplicatedLinear",
                                          "Linear",
                                          "RoutedExperts"};
  const auto pattern = Pattern::compile(target.substr(3), "quantization_config");
  if (!pattern) {
    return false;
  }
  return std::any_of(std::begin(k_classes), std::end(k_classes), [&](const char* cls) {
    return pattern->matches(cls, MatchMode::match).value_or(true);
  });
}

} // namespace

CompressedTensorsRules::Entry CompressedTensorsRules::make_entry(const std::string& text) const {
  Entry entry;
  entry.text = text;
  if (is_regex(text)) {
    auto pattern = Pattern::compile(text.substr(3), "quantization_config");
    if (pattern) {
      entry.pattern = *pattern;
    }
  } else if (text.find('.') != std::string::npos) { // apply_vllm_mapper renames only these
    std::string renamed = m_model.to_vllm(text);
    if (renamed != text) {
      entry.renamed = std::move(renamed);
    }
  }
  if (m_ct.substring_ignore) {
    std::string lower = util::lower_ascii(entry.mapped());
    if (lower != entry.mapped()) {
      entry.renamed_lower = std::move(lower);
    }
  }
  return entry;
}

CompressedTensorsRules::CompressedTensorsRules(const quant::CtConfig& config,
                                               const ModelInfo& model,
                                               const EngineVersion& version)
    : m_config(config), m_model(model), m_dialect(dialect_of(version, model)),
      m_ct(m_dialect.compressed_tensors) {
  // SGLang's Qwen3.5 VLM until #23471: the target's config holds its ignore list and targets as
  // the class's mapper renamed them (CompressedTensorsConfig.apply_weight_name_mapper); the
  // draft's, built by a class without one, as written: a second set of rules judges its layers.
  const ConfigMapper& mapper = model.target_config_mapper;
  if (mapper.maps("compressed-tensors")) {
    m_draft = std::make_unique<CompressedTensorsRules>(
        config, model.without_target_config_mapper(), version);
  }
  const auto as_held = [&](const std::string& text) { return m_draft ? mapper.map(text) : text; };
  m_ignore.reserve(config.ignore.size());
  for (size_t k = 0; k < config.ignore.size(); ++k) {
    m_ignore.push_back(make_entry(as_held(config.ignore[k])));
    m_ignore_origin.push_back(k);
    // SGLang's DeepSeek-V3 draft (#19425): compressed_tensors.py apply_weight_name_mapper
    // renames its own config's ignore list, the target's stays as written.
    const std::string renamed = model.draft_config_name(config.ignore[k]);
    if (renamed != config.ignore[k]) {
      m_ignore.push_back(make_entry(renamed));
      m_ignore_origin.push_back(k);
    }
  }
  // Sized once: an ignore list of 400k names (a 28 MB config) rehashed its way up otherwise.
  m_plain_first.reserve(m_ignore.size());
  if (m_ct.library_matching) {
    m_text_first.reserve(m_ignore.size());
  }
  const bool index_substrings = m_ct.substring_ignore && m_ignore.size() > k_substring_scan_limit;
  if (index_substrings) {
    m_substring_first.reserve(m_ignore.size());
  }
  for (size_t i = 0; i < m_ignore.size(); ++i) {
    if (is_regex(m_ignore[i].text)) {
      m_regex_entries.push_back(i);
    } else {
      m_plain_first.emplace(m_ignore[i].mapped(), i); // emplace keeps the first
      if (m_ct.library_matching) {
        m_text_first.emplace(m_ignore[i].text, i);
      }
      if (index_substrings) {
        m_substring_first.emplace(m_ignore[i].mapped_lower(), i);
        m_longest_substring_entry =
            std::max(m_longest_substring_entry, m_ignore[i].mapped_lower().size());
      } else if (m_ct.substring_ignore) {
        m_substrings.add(m_ignore[i].mapped_lower(), i);
      }
    }
  }
  m_substrings.build();
  bool has_linear = false;
  bool has_routed = false;
  for (const auto& group : config.groups) {
    for (const std::string& target : group.targets) {
      m_targets.push_back({group.name, make_entry(as_held(target))});
      has_linear = has_linear || target == "Linear";
      has_routed = has_routed || target == "RoutedExperts";
    }
  }
  m_moe_targets = m_targets;
  if (has_linear && !has_routed) {
    for (const auto& target : m_targets) {
      if (target.entry.text == "Linear") {
        m_moe_targets.push_back({target.group, make_entry("RoutedExperts")});
        break;
      }
    }
  }
}

std::string CompressedTensorsRules::rules_key(const quant::CtConfig& config,
                                              const EngineVersion& version) {
  size_t targets = 0;
  bool plain = false;       // a target that can match a class name
  bool linear = false;      // "Linear": every LinearBase matches by class
  bool head_target = false; // a target that can name the head (class targets cannot)
  for (const auto& group : config.groups) {
    for (const std::string& target : group.targets) {
      ++targets;
      const bool regex = is_regex(target);
      plain = plain || !regex || regex_matches_a_class(target);
      linear = linear || util::lower_ascii(target) == "linear";
      head_target = head_target || regex || target.find("lm_head") != std::string::npos;
    }
  }
  // The fields that depend on the version, never on the architecture.
  const CtDialect ct = dialect_of(version, ModelInfo{}).compressed_tensors;
  std::string key;
  key += !linear && ct.untargeted_raises ? "U" : "-";
  key += targets > 1 && plain && ct.class_before_fused ? "C" : "-";
  key += head_target && ct.head_without_method ? "H" : "-";
  key += ct.substring_ignore ? "S" : "-";
  key += ct.suffix_ignore ? "X" : "-";
  key += ct.library_matching ? "L" : "-";
  return key;
}

std::vector<std::string> CompressedTensorsRules::exhausted_entries() const {
  std::vector<std::string> out =
      m_draft ? m_draft->exhausted_entries() : std::vector<std::string>{};
  const auto add = [&](const Entry& entry) {
    if (entry.pattern && entry.pattern->exhausted() &&
        std::find(out.begin(), out.end(), entry.text) == out.end()) {
      out.push_back(entry.text);
    }
  };
  for (const Entry& entry : m_ignore) {
    add(entry);
  }
  for (const Target& target : m_targets) {
    add(target.entry);
  }
  for (const Target& target : m_moe_targets) {
    add(target.entry);
  }
  return out;
}

bool CompressedTensorsRules::matches(const Entry& entry,
                                     const std::string& name,
                                     bool& undecidable) const {
  if (is_regex(entry.text)) {
    if (!entry.pattern) {
      return false; // vLLM would raise re.error at load; the CLI reports the pattern
    }
    const auto matched = entry.pattern->matches(name, MatchMode::match);
    if (!matched) {
      undecidable = true;
      return false;
    }
    return *matched;
  }
  return entry.mapped() == name;
}

bool CompressedTensorsRules::matches_class(const Entry& entry,
                                           const std::string& cls,
                                           bool& undecidable) const {
  if (cls.empty()) {
    return false;
  }
  if (m_ct.library_matching) {
    // match.py _match_class: equality with a class name, never a regex ("Linear" for nn.Linear).
    return !is_regex(entry.text) && entry.text == cls;
  }
  if (is_regex(entry.text)) {
    if (!entry.pattern) {
      return false;
    }
    const auto matched = entry.pattern->matches(cls, MatchMode::match);
    undecidable = undecidable || !matched;
    return matched.value_or(false);
  }
  return util::lower_ascii(cls).find(util::lower_ascii(entry.text)) != std::string::npos;
}

bool CompressedTensorsRules::ignores(const Entry& entry,
                                     const std::string& name,
                                     const std::string& cls,
                                     bool& undecidable) const {
  if (is_regex(entry.text)) {
    return matches(entry, name, undecidable);
  }
  if (m_ct.substring_ignore) { // check_contains=True; `name` arrives lower-cased (match_ignore)
    return name.find(entry.mapped_lower()) != std::string::npos;
  }
  if (m_ct.suffix_ignore) {
    return util::is_dotted_suffix(entry.mapped(), name);
  }
  if (m_ct.library_matching) { // is_match also tests ignore against the class names
    return entry.mapped() == name || (!cls.empty() && entry.text == cls);
  }
  return entry.mapped() == name;
}

std::optional<size_t> CompressedTensorsRules::first_exact(const std::string& name,
                                                          const std::string& cls) const {
  std::optional<size_t> best;
  const auto consider = [&](const std::unordered_map<std::string_view, size_t>& index,
                            std::string_view key) {
    if (const auto hit = index.find(key); hit != index.end() && (!best || hit->second < *best)) {
      best = hit->second;
    }
  };
  consider(m_plain_first, name);
  if (m_ct.library_matching && !cls.empty()) { // is_match also tests the class names
    consider(m_text_first, cls);
  }
  return best;
}

std::optional<size_t> CompressedTensorsRules::first_regex_before(std::optional<size_t> plain,
                                                                 const std::string& prefix,
                                                                 const std::string& cls,
                                                                 bool& undecidable) const {
  for (const size_t i : m_regex_entries) {
    if (plain && i > *plain) {
      break;
    }
    if (ignores(m_ignore[i], prefix, cls, undecidable)) {
      return i;
    }
  }
  return plain;
}

std::optional<size_t> CompressedTensorsRules::first_substring(const std::string& lowered) const {
  std::optional<size_t> first;
  for (size_t begin = 0; begin <= lowered.size(); ++begin) {
    const size_t longest = std::min(m_longest_substring_entry, lowered.size() - begin);
    for (size_t length = begin == 0 ? 0 : 1; length <= longest; ++length) {
      const auto hit = m_substring_first.find(std::string_view(lowered).substr(begin, length));
      if (hit != m_substring_first.end() && (!first || hit->second < *first)) {
        first = hit->second;
      }
    }
  }
  return first;
}

std::optional<size_t> CompressedTensorsRules::match_ignore(const std::string& prefix,
                                                           bool& undecidable,
                                                           const std::string& cls) const {
  if (const auto* draft = rules_for(prefix); draft != this) {
    return draft->match_ignore(prefix, undecidable, cls);
  }
  const auto hit = first_ignoring(prefix, undecidable, cls);
  return hit ? std::optional<size_t>(m_ignore_origin[*hit]) : std::nullopt;
}

std::optional<size_t> CompressedTensorsRules::first_ignoring(const std::string& prefix,
                                                             bool& undecidable,
                                                             const std::string& cls) const {
  if (m_ct.suffix_ignore) {
    // The name and each of its dotted suffixes looked up (a few per name), the least index
    // kept; regex entries before it are tried in order.
    std::optional<size_t> best;
    for (size_t at = 0;;) {
      if (const auto it = m_plain_first.find(std::string_view(prefix).substr(at));
          it != m_plain_first.end()) {
        best = best && *best < it->second ? best : std::optional<size_t>(it->second);
      }
      const size_t dot = prefix.find('.', at);
      if (dot == std::string::npos) {
        break;
      }
      at = dot + 1;
    }
    return first_regex_before(best, prefix, cls, undecidable);
  }
  if (!m_ct.substring_ignore) {
    // The first entry that matches, in list order: the first exact hit, unless a regex entry
    // before it matches (a regex that gives up makes the verdict undecidable, as the scan did).
    return first_regex_before(first_exact(prefix, cls), prefix, cls, undecidable);
  }
  const std::string lowered = util::lower_ascii(prefix);
  if (!m_substring_first.empty()) {
    // A long list: the first plain entry that is a substring of the name is found by looking
    // up each of the name's substrings (a few thousand for a layer name) rather than testing
    // each of the list's entries (400k in a 28 MB config); regex entries before it are tried in
    // order, as the scan below tries them.
    return first_regex_before(first_substring(lowered), prefix, cls, undecidable);
  }
  // A shorter list: the plain entries in one automaton, one pass over the name (testing 489
  // entries one by one was 127M of the 950M instructions of `--check` on the Kimi layout).
  return first_regex_before(m_substrings.first_in(lowered), prefix, cls, undecidable);
}

bool CompressedTensorsRules::matches_exactly(const std::string& prefix) const {
  if (const auto* draft = rules_for(prefix); draft != this) {
    return draft->matches_exactly(prefix);
  }
  if (m_plain_first.count(prefix) > 0) {
    return true;
  }
  bool undecidable = false;
  return std::any_of(m_regex_entries.begin(), m_regex_entries.end(), [&](size_t i) {
    return matches(m_ignore[i], prefix, undecidable);
  });
}

bool CompressedTensorsRules::entry_matches(size_t index, const std::string& prefix) const {
  if (const auto* draft = rules_for(prefix); draft != this) {
    return draft->entry_matches(index, prefix);
  }
  for (size_t i = 0; i < m_ignore.size(); ++i) {
    if (m_ignore_origin[i] != index) {
      continue;
    }
    bool undecidable = false;
    const Entry& entry = m_ignore[i];
    const bool substring = m_ct.substring_ignore && !is_regex(entry.text);
    if (ignores(entry, substring ? util::lower_ascii(prefix) : prefix, "", undecidable)) {
      return true;
    }
  }
  return false;
}

std::optional<CompressedTensorsRules::Target>
CompressedTensorsRules::find_target(const std::string& prefix,
                                    const std::string& cls,
                                    const std::vector<Target>& targets,
                                    DecidedBy& by,
                                    bool class_targets,
                                    bool& undecidable) const {
  for (const Target& target : targets) {
    if (matches(target.entry, prefix, undecidable)) {
      by = DecidedBy::target_name;
      return target;
    }
  }
  // find_matched_target's class step, _find_first_match(module.__class__.__name__, targets,
  // check_contains=True) (compressed_tensors/utils.py, vLLM 017e9f4; SGLang's utils.py
  // @06b5b19 alike): a "re:" target is re.match-ed against the class name, a plain one is a
  // case-insensitive substring of it.
  const auto by_class = [&]() -> std::optional<Target> {
    if (!class_targets) {
      return std::nullopt;
    }
    for (const Target& target : targets) {
      if (matches_class(target.entry, cls, undecidable)) {
        return target;
      }
    }
    return std::nullopt;
  };
  if (m_ct.class_before_fused) {
    if (auto target = by_class()) {
      by = DecidedBy::target_class;
      return target;
    }
  }
  const std::string last(last_component(prefix));
  if (const auto* shards = m_model.shards_of_layer(prefix)) {
    std::optional<Target> first;
    bool all = true;
    for (const std::string& shard : *shards) {
      const std::string shard_name = replace_all(prefix, last, shard);
      std::optional<Target> hit;
      for (const Target& target : targets) {
        if (matches(target.entry, shard_name, undecidable)) {
          hit = target;
          break;
        }
      }
      all = all && hit.has_value();
      if (!first) {
        first = hit;
      }
    }
    if (all && first) {
      by = DecidedBy::target_fused;
      return first;
    }
  }
  if (!m_ct.class_before_fused) {
    if (auto target = by_class()) {
      by = DecidedBy::target_class;
      return target;
    }
  }
  by = DecidedBy::no_target;
  return std::nullopt;
}

Decision CompressedTensorsRules::decide_ignore_and_targets(
    const Layer& layer, const std::string& prefix, const std::vector<Target>& targets) const {
  Decision decision;
  bool undecidable = false;
  const std::string last(last_component(prefix));
  const auto* shards = m_model.shards_of_layer(prefix);
  // An entry naming the layer itself (a regex entry's `mapped` is its "re:" text, never a name).
  const bool listed = m_plain_first.count(prefix) > 0;
  std::optional<size_t> ignored;
  if (shards != nullptr && !listed) {
    for (const std::string& shard : *shards) {
      const std::string shard_name = replace_all(prefix, last, shard);
      const auto hit = first_ignoring(shard_name, undecidable, "");
      decision.shards.push_back(shard_name);
      decision.shard_ignored.push_back(hit.has_value());
      if (hit && !ignored) {
        ignored = hit;
      }
    }
    const bool any =
        std::find(decision.shard_ignored.begin(), decision.shard_ignored.end(), true) !=
        decision.shard_ignored.end();
    const bool all =
        std::find(decision.shard_ignored.begin(), decision.shard_ignored.end(), false) ==
        decision.shard_ignored.end();
    if (any && !all) {
      decision.verdict = Verdict::load_error;
      decision.by = DecidedBy::fused_disagree;
      decision.ignore_index = m_ignore_origin[*ignored];
      std::string names;
      for (const std::string& shard : *shards) {
        names += std::string(names.empty() ? "" : "', '") + shard;
      }
      decision.error = "ValueError: Found a different quantization schemes for ['" + names +
                       "'] in " + prefix + ". vLLM requires all to use the same scheme.";
      return decision;
    }
  } else {
    ignored = first_ignoring(prefix, undecidable, layer.cls);
  }
  if (undecidable) {
    decision.by = DecidedBy::undecidable;
    return decision;
  }
  if (ignored) {
    decision.verdict = Verdict::dense;
    decision.by = DecidedBy::ignore_entry;
    decision.ignore_index = m_ignore_origin[*ignored];
    return decision;
  }
  if (m_config.groups.empty()) {
    decision.by = DecidedBy::no_target;
    return decision;
  }
  DecidedBy by = DecidedBy::no_target;
  // lm_head is quantized only through a target naming it (a class target never reaches it).
  const bool class_targets = layer.kind != LayerKind::lm_head;
  const auto target = find_target(prefix, layer.cls, targets, by, class_targets, undecidable);
  decision.by = undecidable && !target ? DecidedBy::undecidable : by;
  if (target) {
    decision.verdict = Verdict::quantized;
    decision.group = target->group;
    decision.target = target->entry.text;
  } else if (m_ct.untargeted_raises && decision.by == DecidedBy::no_target &&
             layer.kind == LayerKind::linear) {
    decision.verdict = Verdict::load_error;
    decision.by = DecidedBy::untargeted;
    decision.error = "ValueError: Unable to find matching target for " + prefix +
                     " in the compressed-tensors config.";
  }
  return decision;
}

bool CompressedTensorsRules::head_without_method(const Layer& layer) const {
  return m_ct.head_without_method && layer.kind == LayerKind::lm_head;
}

const CompressedTensorsRules* CompressedTensorsRules::rules_for(std::string_view prefix) const {
  return m_draft && m_model.in_draft_model(prefix) ? m_draft.get() : this;
}

Decision CompressedTensorsRules::decide(const Layer& layer) const {
  if (const auto* draft = rules_for(layer.prefix); draft != this) {
    return draft->decide(layer);
  }
  if (layer.kind == LayerKind::built_dense || head_without_method(layer) ||
      m_model.built_without_compressed_tensors_config_for(layer.name)) {
    Decision decision;
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  if (layer.kind != LayerKind::experts) {
    return decide_ignore_and_targets(layer, layer.prefix, m_targets);
  }
  // Expert 0's three projections stand for every expert of the layer.
  Decision combined;
  Layer expert; // the layer's names without its ~1k per-expert modules, which decide never reads
  expert.kind = LayerKind::linear;
  expert.name = layer.name;
  expert.prefix = layer.prefix;
  expert.cls = layer.cls;
  bool first = true;
  for (const char* projection : {"gate_proj", "up_proj", "down_proj"}) {
    const std::string name = layer.prefix + ".0." + projection;
    Decision one = decide_ignore_and_targets(expert, name, m_moe_targets);
    combined.shards.push_back(name);
    combined.shard_ignored.push_back(one.by == DecidedBy::ignore_entry);
    if (first) {
      const auto shards = combined.shards;
      const auto ignored = combined.shard_ignored;
      combined = one;
      combined.shards = shards;
      combined.shard_ignored = ignored;
      first = false;
    } else if (one.verdict != combined.verdict || one.group != combined.group) {
      combined.verdict = Verdict::load_error;
      combined.by = DecidedBy::experts_disagree;
      combined.error = "ValueError: All MoE projections need to have same quantization scheme "
                       "but found multiple";
    }
  }
  return combined;
}

std::vector<std::pair<std::string, std::string>>
CompressedTensorsRules::trace(const Layer& layer) const {
  if (const auto* draft = rules_for(layer.prefix); draft != this) {
    return draft->trace(layer);
  }
  std::vector<std::pair<std::string, std::string>> lines;
  if (layer.kind == LayerKind::built_dense && m_model.is_plain_linear(layer.name)) {
    lines.emplace_back("built", "as a plain nn.Linear by the MTP draft: always dense");
    return lines;
  }
  if (layer.kind == LayerKind::built_dense) {
    lines.emplace_back("built", "without a quant config: dense whatever the config says");
    return lines;
  }
  if (m_model.built_without_compressed_tensors_config_for(layer.name)) {
    lines.emplace_back("built",
                       "without a quant config when the config is compressed-tensors: dense "
                       "whatever it says");
    return lines;
  }
  if (head_without_method(layer)) {
    lines.emplace_back("built",
                       "as a ParallelLMHead, which " + std::string(m_dialect.engine_name) +
                           "'s compressed-tensors gives no quant method: dense whatever the "
                           "config says");
    return lines;
  }
  std::vector<std::string> names{layer.prefix};
  const std::string last(last_component(layer.prefix));
  if (layer.kind == LayerKind::experts) {
    names = {
        layer.prefix + ".0.gate_proj", layer.prefix + ".0.up_proj", layer.prefix + ".0.down_proj"};
    lines.emplace_back("experts",
                       "judged through expert 0: " + names[0] + ", " + names[1] + ", " + names[2]);
  } else if (const auto* shards = m_model.shards_of_layer(layer.prefix);
             shards != nullptr && !(shards->size() == 1 && shards->front() == last)) {
    // (A layer mapped to itself, Qwen3-VL's "qkv": ["qkv"], is checked by its own name.)
    names.clear();
    for (const std::string& shard : *shards) {
      names.push_back(replace_all(layer.prefix, last, shard));
    }
    lines.emplace_back(
        "fused", layer.prefix + " = " + [&] {
          std::string joined;
          for (const std::string& name : names) {
            joined += (joined.empty() ? "" : " + ") + name;
          }
          return joined;
        }() + " (each shard is checked; they must agree)");
  }
  const size_t ignored = trace_ignore(names, layer, lines);
  const auto& targets = layer.kind == LayerKind::experts ? m_moe_targets : m_targets;
  const std::string& subject = layer.kind == LayerKind::experts ? names.front() : layer.prefix;
  if (ignored == names.size()) {
    lines.emplace_back("targets", "not consulted: ignore is checked first");
  }
  for (const Target& target : ignored == names.size() ? std::vector<Target>{} : targets) {
    bool undecidable = false;
    const bool by_name = matches(target.entry, subject, undecidable);
    const bool by_class =
        layer.kind != LayerKind::lm_head && matches_class(target.entry, layer.cls, undecidable);
    std::string how =
        by_name ? "matches by name"
        : by_class
            ? "matches class " + layer.cls +
                  (is_regex(target.entry.text) ? " (re.match)" : " (case-insensitive substring)")
            : "does not match";
    lines.emplace_back("target", target.group + " \"" + target.entry.text + "\" " + how);
  }
  lines.emplace_back("verdict", verdict_text(decide(layer)));
  return lines;
}

size_t CompressedTensorsRules::trace_ignore(
    const std::vector<std::string>& names,
    const Layer& layer,
    std::vector<std::pair<std::string, std::string>>& lines) const {
  size_t ignored = 0;
  for (const std::string& name : names) {
    bool undecidable = false;
    bool any = false;
    const std::string lowered = util::lower_ascii(name);
    for (size_t i = 0; i < m_ignore.size(); ++i) {
      const bool regex = is_regex(m_ignore[i].text);
      const bool substring = m_ct.substring_ignore && !regex;
      if (ignores(m_ignore[i], substring ? lowered : name, layer.cls, undecidable)) {
        const bool by_class = m_ct.library_matching && !regex && m_ignore[i].mapped() != name;
        const size_t origin = m_ignore_origin[i];
        lines.emplace_back("ignore[" + std::to_string(origin) + "]",
                           "\"" + m_config.ignore[origin] + "\"" +
                               renamed_note(m_ignore[i].text, m_config.ignore[origin]) +
                               " matches " + name +
                               (regex                          ? " (re.match)"
                                : substring                    ? " (case-insensitive substring)"
                                : by_class                     ? " (class name " + layer.cls + ")"
                                : m_ignore[i].mapped() != name ? " (dotted suffix)"
                                                               : " (exact)"));
        any = true;
        ++ignored;
        break;
      }
    }
    if (!any) {
      lines.emplace_back("ignore",
                         std::to_string(m_config.ignore.size()) +
                             " entries checked, none matches " + name +
                             (undecidable ? " (a regex gave up)" : ""));
      trace_renamed_away(name, lines);
    }
  }
  return ignored;
}

std::string CompressedTensorsRules::renamed_note(const std::string& held,
                                                 const std::string& written) const {
  if (held == written) {
    return "";
  }
  return m_draft ? " (held as \"" + held + "\" after " + m_model.target_config_mapper.source + ")"
                 : " (the draft's config reads \"" + held + "\")";
}

void CompressedTensorsRules::trace_renamed_away(
    const std::string& name, std::vector<std::pair<std::string, std::string>>& lines) const {
  // The first entry that would match the name as written, renamed away by the mapper: why it
  // misses.
  if (!m_draft) {
    return;
  }
  const std::string lowered = util::lower_ascii(name);
  for (size_t i = 0; i < m_ignore.size(); ++i) {
    const std::string& written = m_config.ignore[m_ignore_origin[i]];
    if (m_ignore[i].text == written) {
      continue;
    }
    bool undecidable = false;
    const bool substring = m_ct.substring_ignore && !is_regex(written);
    if (ignores(make_entry(written), substring ? lowered : name, "", undecidable)) {
      lines.emplace_back("ignore[" + std::to_string(m_ignore_origin[i]) + "]",
                         "\"" + written + "\" would match as written, but is held as \"" +
                             m_ignore[i].text + "\" after " + m_model.target_config_mapper.source);
      return;
    }
  }
}

} // namespace qpatch::engine
