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
  // vLLM compares these as written (INCConfig.from_config reads them with get_from_keys).
  if (const auto it = config.find("group_size"); it != config.end()) {
    inc.group_size = *it;
  }
  if (const auto it = config.find("sym"); it != config.end()) {
    inc.sym = *it;
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
      IncEntry entry{key, std::nullopt, std::nullopt, std::nullopt};
      if (const auto bits = value.find("bits"); bits != value.end() && !bits->is_null()) {
        if (!bits->is_number_integer()) {
          return field_error(file, base + "/extra_config/" + key + "/bits", "expected an integer");
        }
        entry.bits = bits->get<int64_t>();
      }
      if (const auto group_size = value.find("group_size"); group_size != value.end()) {
        entry.group_size = *group_size;
      }
      if (const auto sym = value.find("sym"); sym != value.end()) {
        entry.sym = *sym;
      }
      inc.extra_config.push_back(std::move(entry));
    }
  }
  // INCConfig.from_config reads get_from_keys_or(config, ["block_name_to_quantize",
  // "to_quant_block_names"], None): the first key present wins even when its value is null
  // (base_config.py get_from_keys, vLLM main 017e9f4).
  for (const char* key : {"block_name_to_quantize", "to_quant_block_names"}) {
    const auto it = config.find(key);
    if (it == config.end()) {
      continue;
    }
    inc.block_names_key = key;
    if (it->is_null()) {
      break;
    }
    std::vector<std::string> names;
    if (it->is_string()) {
      // INCConfig.__init__: block_name_to_quantize.split(","), empty pieces included ("" is a
      // prefix of every name).
      const std::string text = it->get<std::string>();
      for (size_t start = 0;;) {
        const size_t comma = text.find(',', start);
        names.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
        if (comma == std::string::npos) {
          break;
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
    // _resolve_raw tests `if self._config.block_name_to_quantize:`: an empty list is none.
    if (!names.empty()) {
      inc.block_names = std::move(names);
    }
    break;
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
