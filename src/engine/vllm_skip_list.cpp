// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/vllm_skip_list.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>

namespace qpatch::engine {

using util::last_component;
using util::replace_all;

VllmSkipList::VllmSkipList(SkipListMethod method,
                           std::vector<std::string> entries,
                           const ModelInfo& model)
    : m_method(method), m_entries(std::move(entries)), m_model(model) {
  for (const std::string& entry : m_entries) {
    m_mapped.push_back(entry.find('.') != std::string::npos ? m_model.to_vllm(entry) : entry);
  }
}

std::optional<size_t> VllmSkipList::skipping_entry(const std::string& name) const {
  for (size_t i = 0; i < m_mapped.size(); ++i) {
    const bool hit = m_method == SkipListMethod::awq ? name.find(m_mapped[i]) != std::string::npos
                                                     : name == m_mapped[i];
    if (hit) {
      return i;
    }
  }
  return std::nullopt;
}

Decision VllmSkipList::decide(const Layer& layer) const {
  Decision decision;
  decision.target = m_method == SkipListMethod::awq ? "AWQ" : "FP8";
  if (layer.kind == LayerKind::built_dense || layer.kind == LayerKind::embedding ||
      layer.kind == LayerKind::lm_head) {
    decision.by = DecidedBy::built_dense;
    return decision;
  }
  const auto skipped_by = [&](size_t i) {
    decision.verdict = Verdict::dense;
    decision.by = DecidedBy::ignore_entry;
    decision.ignore_index = i;
    return decision;
  };
  if (layer.kind == LayerKind::experts) {
    for (size_t i = 0; i < m_mapped.size(); ++i) {
      const std::string& entry = m_mapped[i];
      const bool hit = m_method == SkipListMethod::awq
                           ? layer.prefix.find(entry) != std::string::npos
                           : entry.find("experts") != std::string::npos &&
                                 entry.find(layer.prefix) != std::string::npos;
      if (hit) {
        return skipped_by(i);
      }
    }
    decision.verdict = Verdict::quantized;
    decision.by = DecidedBy::target_class;
    return decision;
  }
  // A fused name listed (or, for AWQ, contained) verbatim is honoured first.
  if (const auto direct = skipping_entry(layer.prefix)) {
    return skipped_by(*direct);
  }
  const std::string last(last_component(layer.prefix));
  std::vector<std::string> names{layer.prefix};
  if (const auto* shards = m_model.shards_of(last)) {
    names.clear();
    for (const std::string& shard : *shards) {
      names.push_back(replace_all(layer.prefix, last, shard));
    }
  }
  std::optional<size_t> first;
  size_t hits = 0;
  for (const std::string& name : names) {
    const auto hit = skipping_entry(name);
    decision.shards.push_back(name);
    decision.shard_ignored.push_back(hit.has_value());
    hits += hit ? 1U : 0U;
    first = first ? first : hit;
  }
  if (hits != 0 && hits != names.size()) {
    decision.verdict = Verdict::load_error;
    decision.by = DecidedBy::fused_disagree;
    decision.ignore_index = first;
    decision.error = "ValueError: Detected some but not all shards of " + layer.prefix +
                     " are quantized. All shards of fused layers to have the same precision.";
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
