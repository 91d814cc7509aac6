// SPDX-License-Identifier: Apache-2.0
// The loop every method's fix runs: re-judge every engine's layers under the patch so far, edit
// the patch where a verdict disagrees with the disk, until a round changes nothing. Each judge
// keeps its own edits (ignore entries, dynamic rules, extra_config keys, skip-list entries); the
// loop and its bound are written here once. Private to src/diagnose/.
#pragma once

#include "diagnose/judge_common.hpp"

#include <cstddef>

namespace qpatch::diagnose::detail {

// Rounds before a fix gives up: a bound, not a budget (a round that changes something adds or
// removes at least one entry, and the configs seen settle in a few rounds).
inline constexpr int max_fix_rounds = 16;

// Run `step` (returns whether it changed the patch) until a round changes nothing, at most
// `rounds` times. Returns whether that fixpoint was reached (false: the last round still
// changed something).
template <class Step> bool fix_to_fixpoint(Step&& step, int rounds = max_fix_rounds) {
  for (int round = 0; round < rounds; ++round) {
    if (!step()) {
      return true;
    }
  }
  return false;
}

// Call `on(view, decision)` for each layer of `views` stored wholly dense or wholly quantized
// (the others no config can fix) with `judge`'s decision for it: the body of every round.
template <class Judge, class On>
void each_decided(const std::vector<LayerView>& views, const Judge& judge, On&& on) {
  for (const LayerView& view : views) {
    if (view.disk != Disk::dense && view.disk != Disk::quantized) {
      continue;
    }
    on(view, judge.decide(*view.layer));
  }
}

} // namespace qpatch::diagnose::detail
