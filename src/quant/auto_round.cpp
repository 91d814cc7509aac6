// SPDX-License-Identifier: Apache-2.0
#include <qpatch/quant/auto_round.hpp>

namespace qpatch::quant {

bool is_inc_regex_key(const std::string& key) {
  return key.find_first_of("*+?^$()[]{}|\\") != std::string::npos;
}

Result<IncConfig> read_auto_round(const ConfigFile& file) {
  const json::Json& config = file.config();
  const std::string base = pointer_text(file.pointer);
  IncConfig inc;
  if (const auto it = config.find("bits"); it != config.end() && !it->is_null()) {
    if (!it->is_number_integer()) {
      return field_error(file, base + "/bits", "expected an integer");
    }
    inc.bits = it->get<int64_t>();
  }
  if (const auto it = config.find("extra_config"); it != config.end() && !it->is_null()) {
    if (!it->is_object()) {
      return field_error(file, base + "/extra_config", "expected an object of layer settings");
    }
    inc.has_extra_config = true;
    for (const auto& [key, value] : it->items()) {
      if (!value.is_object()) {
        return field_error(file, base + "/extra_config/" + key, "expected an object");
      }
      IncEntry entry{key, std::nullopt};
      if (const auto bits = value.find("bits"); bits != value.end() && !bits->is_null()) {
        if (!bits->is_number_integer()) {
          return field_error(file, base + "/extra_config/" + key + "/bits", "expected an integer");
        }
        entry.bits = bits->get<int64_t>();
      }
      inc.extra_config.push_back(std::move(entry));
    }
  }
  for (const char* key : {"block_name_to_quantize", "to_quant_block_names"}) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) {
      continue;
    }
    std::vector<std::string> names;
    if (it->is_string()) {
      // A comma-separated string, as auto-round writes for one block list.
      const std::string text = it->get<std::string>();
      for (size_t start = 0; start <= text.size();) {
        const size_t comma = std::min(text.find(',', start), text.size());
        if (comma > start) {
          names.push_back(text.substr(start, comma - start));
        }
        start = comma + 1;
      }
    } else if (it->is_array()) {
      for (const auto& item : *it) {
        if (!item.is_string()) {
          return field_error(file, base + "/" + key, "expected a list of block names");
        }
        names.push_back(item.get<std::string>());
      }
    } else {
      return field_error(file, base + "/" + key, "expected a list or a comma-separated string");
    }
    inc.block_names = std::move(names);
    inc.block_names_key = key;
    break; // vLLM reads block_name_to_quantize first
  }
  if (const auto it = config.find("dynamic"); it != config.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      const bool negative = key.rfind("-:", 0) == 0;
      inc.dynamic.push_back(
          {key, negative, negative || key.rfind("+:", 0) == 0 ? key.substr(2) : key});
    }
  }
  return inc;
}

} // namespace qpatch::quant
