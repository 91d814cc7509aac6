// SPDX-License-Identifier: Apache-2.0
#include "support/engine_labels.hpp"

#include <vector>

namespace qpatch::test {

std::string
judged_for(engine::Engine engine, const std::string& architecture, const std::string& method) {
  const auto versions = engine::versions_to_judge(engine, method, architecture);
  const engine::History& history = engine::history(engine);
  std::string name(engine::display_name(engine));
  if (versions.size() > 1) {
    name += " (main " + versions.front().from + ".." + std::string(history.newest_date) + ")";
  } else if (engine == engine::Engine::vllm) {
    name += " (main, " + std::string(history.newest_date) + ")";
  } else if (!history.judged_as.empty()) {
    name += " (" + std::string(history.judged_as) + ")";
  }
  return name;
}

std::string judged_for(const std::string& architecture, const std::string& method) {
  using engine::Engine;
  return judged_for(Engine::vllm, architecture, method) + ", " +
         judged_for(Engine::sglang, architecture, method) + " and " +
         judged_for(Engine::transformers, architecture, method);
}

std::string
traced_as(engine::Engine engine, const std::string& architecture, const std::string& method) {
  const auto versions = engine::versions_to_judge(engine, method, architecture);
  return engine::versions_text(versions, method);
}

std::string traced_as(const std::string& architecture, const std::string& method) {
  using engine::Engine;
  return traced_as(Engine::vllm, architecture, method) + ", " +
         traced_as(Engine::sglang, architecture, method) + " and " +
         traced_as(Engine::transformers, architecture, method);
}

} // namespace qpatch::test
