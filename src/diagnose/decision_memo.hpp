// SPDX-License-Identifier: Apache-2.0
// Every layer's decision under one engine version and one config, remembered by what decides
// it. The fixer's rounds, the report's problems and the plan's re-judgement of the config it
// wrote ask the same question of the same list again: on the 1T-parameter Kimi layout, building
// the rules and deciding ~500 layers for each of 7 versions was asked 8 times for 4 distinct
// lists.
#pragma once

#include <qpatch/engine/decision.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace qpatch::diagnose::detail {

struct EngineView;

// Per view of an engine version (EngineView::views), its decision; nothing for a view not
// decided (stored inconsistently, or not on disk).
using ViewDecisions = std::vector<std::optional<engine::Decision>>;

// A 128-bit XXH3 digest. Keys are digests, not the text they digest: a 42,000-entry ignore list
// is 2.8 MB, asked about dozens of times. An accidental collision of XXH3-128 is as likely as a
// bit flip in RAM many times over; nothing here is adversarial (the user's own config).
using MemoKey = std::array<uint64_t, 2>;

// The digest of `text`, and of `text` appended to an earlier digest.
MemoKey memo_key(std::string_view text);
MemoKey memo_key(const MemoKey& base, std::string_view text);

// What decides a layer besides the config: the layers judged (their views' address, which the
// layer cache keeps alive for as long as it keeps decisions) and the engine version (its naming
// row follows from the version, the architecture and the layer count, which the layers were
// built for). `method` keeps two methods' configs apart.
MemoKey view_key(const EngineView& view, std::string_view method, const MemoKey& config);

class DecisionMemo {
public:
  std::shared_ptr<const ViewDecisions> find(const MemoKey& key) const;
  void store(const MemoKey& key, std::shared_ptr<const ViewDecisions> decisions);

private:
  // A bound on what is kept (the oldest goes first): a fix of a 1T-parameter MoE stores ~40,
  // each ~500 decisions.
  static constexpr size_t k_capacity = 256;
  mutable std::mutex m_mutex;
  std::map<MemoKey, std::shared_ptr<const ViewDecisions>> m_decisions;
  std::deque<MemoKey> m_order;
};

} // namespace qpatch::diagnose::detail
