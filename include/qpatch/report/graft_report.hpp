// SPDX-License-Identifier: Apache-2.0
// The outcome of `qpatch graft` and its two renderings: a human report (what leaves each shard,
// what comes in, bytes to copy, disk needed, the config changes) and the --json document
// (schema_version 2, documented in README.md). Renders only; never prints.
#pragma once

#include <qpatch/graft/graft_commit.hpp>
#include <qpatch/graft/graft_plan.hpp>
#include <qpatch/json/strict_json.hpp>

#include <string>
#include <vector>

namespace qpatch::report {

enum class GraftStatus { nothing_to_graft, would_graft, grafted };
std::string_view to_string(GraftStatus status);

struct GraftOutcome {
  std::string path;  // DIR as typed
  std::string donor; // DONOR as typed
  GraftStatus status = GraftStatus::nothing_to_graft;
  const graft::GraftPlan* plan = nullptr;
  graft::GraftResult result;                         // when grafted
  graft::Recovery recovered = graft::Recovery::none; // an interrupted graft found first
  std::string diff;                                  // the config files' unified diff
  bool config_needs_patch = false; // nothing to graft, but `qpatch DIR` has a patch to make
};

std::string render_graft_text(const GraftOutcome& outcome);
json::Json render_graft_json(const GraftOutcome& outcome);

} // namespace qpatch::report
