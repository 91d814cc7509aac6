// SPDX-License-Identifier: Apache-2.0
#include "json/python_values.hpp"

namespace qpatch::py {

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

std::string repr(const Json& value) {
  return value.is_string() ? "'" + value.get<std::string>() + "'" : str(value);
}

std::string type_name(const Json& value) {
  if (value.is_null()) {
    return "NoneType";
  }
  if (value.is_boolean()) {
    return "bool";
  }
  if (value.is_number_integer() || value.is_number_unsigned()) {
    return "int";
  }
  if (value.is_number_float()) {
    return "float";
  }
  if (value.is_string()) {
    return "str";
  }
  return value.is_array() ? "list" : "dict";
}

bool truthy(const Json& value) {
  if (value.is_null()) {
    return false;
  }
  if (value.is_boolean()) {
    return value.get<bool>();
  }
  if (value.is_number_integer()) {
    return value.get<int64_t>() != 0;
  }
  if (value.is_number_unsigned()) {
    return value.get<uint64_t>() != 0;
  }
  if (value.is_number_float()) {
    return value.get<double>() != 0.0;
  }
  return !value.empty(); // str, list, dict
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

std::string str_from_keys_or(const Json& config,
                             std::initializer_list<const char*> keys,
                             const std::string& fallback) {
  for (const char* key : keys) {
    if (config.contains(key)) {
      return str(config[key]);
    }
  }
  return fallback;
}

bool equal(const Json& a, const Json& b) {
  const auto numeric = [](const Json& v) { return v.is_number() || v.is_boolean(); };
  if (numeric(a) && numeric(b)) {
    if (a.is_number_integer() && b.is_number_integer()) {
      return a == b;
    }
    const auto value = [](const Json& v) {
      return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
    };
    return value(a) == value(b);
  }
  return a == b;
}

bool is_true(const Json& value) {
  return value.is_boolean() && value.get<bool>();
}

} // namespace qpatch::py
