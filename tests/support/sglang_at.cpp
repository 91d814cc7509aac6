// SPDX-License-Identifier: Apache-2.0
#include "support/sglang_at.hpp"

#include <qpatch/engine/model_info.hpp>

namespace qpatch::test {

engine::EngineVersion
sglang_at(const std::string& day, const std::string& method, const std::string& architecture) {
  engine::VersionPins pins;
  pins.of(engine::Engine::sglang) = day;
  return engine::versions_to_judge(engine::Engine::sglang, method, architecture, pins).front();
}

std::string skip_list_verdict(const SkipListAt& at,
                              std::vector<std::string> entries,
                              const engine::Layer& layer) {
  const engine::EngineVersion version =
      sglang_at(at.day, std::string(engine::method_name(at.method)), at.architecture);
  return engine::verdict_text(
      engine::SkipListRules(at.method,
                            std::move(entries),
                            engine::sglang_model_info(at.architecture, 0, version),
                            at.nvfp4,
                            version)
          .decide(layer));
}

} // namespace qpatch::test
