// SPDX-License-Identifier: Apache-2.0
// A quantization config as the engines' Python sees it after json.load: str() and repr() of a
// value, its type name and truthiness, the list repr in their messages, and
// QuantizationConfig.get_from_keys (the same in vLLM's and SGLang's base_config.py). The config
// views (quant/) and the engines' checks and rules (engine/) build their readings and error
// texts from these, once.
#pragma once

#include <qpatch/json/strict_json.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::py {

// str() of a JSON value as Python prints the object json.load gives (True, None, 3, text).
std::string str(const json::Json& value);
// repr() of it: strings quoted ('text'), the rest as str().
std::string repr(const json::Json& value);
// The name of its Python type, as TypeError messages spell it (NoneType, bool, int, float, str,
// list, dict).
std::string type_name(const json::Json& value);
// bool() of it: None, False, 0, "", [] and {} are false.
bool truthy(const json::Json& value);
// repr() of a list of strings: ['bits', 'w_bit'].
std::string list(const std::vector<std::string>& keys);
// get_from_keys: the first key present, else (once: the first missing key set wins) the
// ValueError "Cannot find any of [...] in the model's quantization config." in `error`.
const json::Json* get_from_keys(const json::Json& config,
                                const std::vector<std::string>& keys,
                                std::optional<std::string>& error);
// get_from_keys_or(config, keys, default) as str(): the first key present, even when null.
std::string str_from_keys_or(const json::Json& config,
                             std::initializer_list<const char*> keys,
                             const std::string& fallback);
// Python's == on two values json.load gives: bool is an int (True == 1 == 1.0).
bool equal(const json::Json& a, const json::Json& b);
bool is_int(const json::Json& value, int64_t n);
bool is_true(const json::Json& value);

} // namespace qpatch::py
