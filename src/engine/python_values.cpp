// SPDX-License-Identifier: Apache-2.0
#include "engine/python_values.hpp"

namespace qpatch::engine::py {

using json::Json;

std::string str(const Json& value) {
  if (value.is_boolean()) {
    return value.get<bool>() ? "True" : "False";
  }
  if (value.is_null()) {
    return "None";
  }
  if (value.is_string()) {
    return value.get<std::string>();
  }
  return value.dump();
}

std::string list(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) {
    out += (i == 0 ? "'" : ", '") + keys[i] + "'";
  }
  return out + "]";
}

const Json* get_from_keys(const Json& config,
                          const std::vector<std::string>& keys,
                          std::optional<std::string>& error) {
  for (const std::string& key : keys) {
    if (config.contains(key)) {
      return &config[key];
    }
  }
  if (!error) {
    error = "ValueError: Cannot find any of " + list(keys) + " in the model's quantization config.";
  }
  return nullptr;
}

bool is_int(const Json& value, int64_t n) {
  return value.is_number_integer() && value.get<int64_t>() == n;
}

bool is_true(const Json& value) {
  return value.is_boolean() && value.get<bool>();
}

} // namespace qpatch::engine::py
