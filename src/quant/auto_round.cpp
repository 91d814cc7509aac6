// SPDX-License-Identifier: Apache-2.0
#include "json/python_values.hpp"

#include <qpatch/quant/auto_round.hpp>

#include <algorithm>

namespace qpatch::quant {

namespace {

// auto_round inference/convert_model.py flatten_list (v0.14.2 e98f1c1): lists inside lists are
// spliced in place; only the strings are kept (a block name is compared with startswith).
void flatten_into(const json::Json& list, std::vector<std::string>& out) {
  for (const auto& item : list) {
    if (item.is_array()) {
      flatten_into(item, out);
    } else if (item.is_string()) {
      out.push_back(item.get<std::string>());
    }
  }
}

// Python's str.split(","): every piece, empty ones included.
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> names;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    names.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) {
      return names;
    }
    start = comma + 1;
  }
}

// os.path.commonprefix of a list of strings, then .rstrip(".").
std::string common_prefix(const json::Json& list) {
  std::optional<std::string> prefix;
  for (const auto& item : list) {
    const std::string name = item.is_string() ? item.get<std::string>() : std::string();
    if (!prefix) {
      prefix = name;
      continue;
    }
    size_t n = 0;
    while (n < prefix->size() && n < name.size() && (*prefix)[n] == name[n]) {
      ++n;
    }
    prefix->resize(n);
  }
  std::string out = prefix.value_or("");
  while (!out.empty() && out.back() == '.') {
    out.pop_back();
  }
  return out;
}

// The auto_round library's reading (convert_model.py get_layer_config, skip_not_convert_modules,
// convert_hf_model; export/export_to_autogptq/export.py convert_from_autogptq_dynamic).
AutoRoundLibraryConfig read_library(const json::Json& config) {
  AutoRoundLibraryConfig lib;
  if (const auto it = config.find("data_type"); it != config.end() && it->is_string()) {
    lib.data_type = it->get<std::string>();
  }
  if (const auto it = config.find("act_bits"); it != config.end()) {
    lib.act_bits = *it;
  }
  if (const auto it = config.find("packing_format"); it != config.end() && it->is_string()) {
    const std::string format = it->get<std::string>();
    lib.packing_format = format == "auto" || format == "auto_round:gptq" ? "auto_round:auto_gptq"
                         : format == "auto_round:awq"                    ? "auto_round:auto_awq"
                                                                         : format;
  }
  const auto given = [&](const char* key) {
    const auto it = config.find(key);
    return it != config.end() && !it->is_null() ? &*it : nullptr;
  };
  if (const json::Json* list = given("quant_block_list")) {
    lib.blocks_key = "quant_block_list";
    std::vector<std::string> blocks;
    if (list->is_array() && !list->empty() && list->front().is_array()) {
      for (const auto& inner : *list) {
        blocks.push_back(common_prefix(inner));
      }
    } else if (list->is_array()) {
      flatten_into(*list, blocks);
    }
    lib.blocks = std::move(blocks);
  } else {
    const char* key = given("block_name_to_quantize") ? "block_name_to_quantize"
                      : given("to_quant_block_names") ? "to_quant_block_names"
                                                      : nullptr;
    const json::Json* names = key != nullptr ? given(key) : nullptr;
    if (names != nullptr && names->is_array()) {
      lib.blocks.emplace();
      flatten_into(*names, *lib.blocks);
      lib.blocks_key = key;
    } else if (names != nullptr && names->is_string()) {
      lib.blocks = split_commas(names->get<std::string>());
      lib.blocks_key = key;
    }
  }
  if (const json::Json* list = given("modules_to_not_convert"); list && list->is_array()) {
    for (const auto& entry : *list) {
      if (entry.is_string()) {
        lib.modules_to_not_convert.push_back(entry.get<std::string>());
      }
    }
  }
  if (config.contains("modules_in_block_to_quantize")) {
    const json::Json& list = config["modules_in_block_to_quantize"];
    if (py::truthy(list) && list.is_array()) {
      lib.modules_in_block.emplace();
      flatten_into(list, *lib.modules_in_block);
    }
  }
  if (const auto it = config.find("dynamic"); it != config.end() && it->is_object()) {
    for (const auto& [key, value] : it->items()) {
      const bool plus = key.rfind("+:", 0) == 0;
      if (!plus && key.rfind("-:", 0) != 0) {
        continue;
      }
      json::Json cfg = plus ? value : json::Json{{"bits", 16}, {"act_bits", 16}};
      const std::string regex = key.substr(2);
      const auto same = std::find_if(
          lib.dynamic.begin(), lib.dynamic.end(), [&](const auto& e) { return e.first == regex; });
      if (same != lib.dynamic.end()) {
        same->second = std::move(cfg); // a dict: the later value, the first key's place
      } else {
        lib.dynamic.emplace_back(regex, std::move(cfg));
      }
    }
  }
  return lib;
}

} // namespace

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
      IncEntry entry{key, std::nullopt, std::nullopt, std::nullopt, value};
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
  inc.library = read_library(config);
  inc.packing_format = py::str_from_keys_or(config, {"packing_format"}, inc.packing_format);
  inc.backend =
      py::str_from_keys_or(config, {"backend", "vllm_backend", "sglang_backend"}, inc.backend);
  return inc;
}

} // namespace qpatch::quant
