// SPDX-License-Identifier: Apache-2.0
// SGLang's rules as one day of its main had them, for tests that pin a version: the version
// versions_to_judge gives at that day, and a skip-list verdict under its naming row.
#pragma once

#include <qpatch/engine/skip_list_rules.hpp>
#include <qpatch/engine/versions.hpp>

#include <string>
#include <vector>

namespace qpatch::test {

// The one SGLang version judged for `method` on `architecture` with `--engine sglang@DAY`.
engine::EngineVersion
sglang_at(const std::string& day, const std::string& method, const std::string& architecture);

// What that version's `method` rules (SkipListRules, the day's naming row) make of `layer` under
// `entries`: verdict_text of the decision.
struct SkipListAt {
  std::string day;
  engine::SkipListMethod method{};
  std::string architecture;
  bool nvfp4 = false;
};
std::string skip_list_verdict(const SkipListAt& at,
                              std::vector<std::string> entries,
                              const engine::Layer& layer);

} // namespace qpatch::test
