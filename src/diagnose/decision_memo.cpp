// SPDX-License-Identifier: Apache-2.0
#include "diagnose/decision_memo.hpp"

#include "diagnose/judge_common.hpp"

#include <xxhash.h>

#include <string>

namespace qpatch::diagnose::detail {

MemoKey memo_key(std::string_view text) {
  const XXH128_hash_t digest = XXH3_128bits(text.data(), text.size());
  return {digest.low64, digest.high64};
}

MemoKey memo_key(const MemoKey& base, std::string_view text) {
  std::string keyed(reinterpret_cast<const char*>(base.data()), sizeof(base));
  keyed.append(text);
  return memo_key(keyed);
}

MemoKey view_key(const EngineView& view, std::string_view method, const MemoKey& config) {
  const engine::EngineVersion& version = view.version;
  std::string text;
  const auto field = [&](std::string_view value) {
    text += std::to_string(value.size());
    text += ':';
    text += value;
  };
  field(std::to_string(reinterpret_cast<uintptr_t>(view.views.get())));
  field(engine::to_string(view.engine));
  field(version.from);
  field(version.until);
  for (const std::string_view pr : version.with) {
    field(pr);
  }
  field(version.spans_eras ? "spans" : "one");
  field(method);
  return memo_key(config, text);
}

std::shared_ptr<const ViewDecisions> DecisionMemo::find(const MemoKey& key) const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  const auto it = m_decisions.find(key);
  return it == m_decisions.end() ? nullptr : it->second;
}

void DecisionMemo::store(const MemoKey& key, std::shared_ptr<const ViewDecisions> decisions) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  if (!m_decisions.emplace(key, std::move(decisions)).second) {
    return;
  }
  m_order.push_back(key);
  if (m_order.size() > k_capacity) {
    m_decisions.erase(m_order.front());
    m_order.pop_front();
  }
}

} // namespace qpatch::diagnose::detail
