// SPDX-License-Identifier: Apache-2.0
#include "support/engine_labels.hpp"

#include <vector>

namespace qpatch::test {

std::string judged_for(const std::string& architecture, const std::string& method) {
  using engine::Engine;
  std::vector<std::string> names;
  for (const Engine engine : {Engine::vllm, Engine::sglang, Engine::transformers}) {
    const auto versions = engine::versions_to_judge(engine, method, architecture);
    const engine::History& history = engine::history(engine);
    std::string name(engine::display_name(engine));
    if (versions.size() > 1) {
      name += " (" + std::to_string(versions.size()) + " versions, main " + versions.front().from +
              ".." + std::string(history.newest_date) + ")";
    } else if (engine == Engine::vllm) {
      name += " (main, " + std::string(history.newest_date) + ")";
    }
    names.push_back(name);
  }
  return names[0] + ", " + names[1] + " and " + names[2];
}

} // namespace qpatch::test
