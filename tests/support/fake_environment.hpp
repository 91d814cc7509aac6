// SPDX-License-Identifier: Apache-2.0
// An environment for the hub library's tests: `fake({{"HF_HOME", "/x"}})` answers those
// variables and nothing else, as hub::Environment asks them.
#pragma once

#include <qpatch/hub/hub_cache.hpp>

#include <map>
#include <memory>
#include <string>

namespace qpatch::test {

inline hub::Environment fake_environment(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    const auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

} // namespace qpatch::test
