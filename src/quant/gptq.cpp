// SPDX-License-Identifier: Apache-2.0
#include "json/python_values.hpp"

#include <qpatch/quant/gptq.hpp>

namespace qpatch::quant {

namespace {

// The code points of `text` (UTF-8), each as a string: what iterating a Python str yields.
std::vector<std::string> code_points(const std::string& text) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < text.size();) {
    size_t n = 1;
    while (pos + n < text.size() && (static_cast<unsigned char>(text[pos + n]) & 0xC0U) == 0x80U) {
      ++n;
    }
    out.push_back(text.substr(pos, n));
    pos += n;
  }
  return out;
}

struct ListReader {
  std::vector<std::string>& names;
  std::vector<GptqListEntry>& entries;

  void add(std::string name, std::vector<std::string> array, size_t index) {
    names.push_back(std::move(name));
    entries.push_back({std::move(array), index});
  }
  // flatten_list (utils/gptq_utils.py): nested lists are flattened at any depth.
  void flatten(const json::Json& value, const std::vector<std::string>& array) {
    size_t i = 0;
    for (const auto& item : value) {
      if (item.is_string()) {
        add(item.get<std::string>(), array, i);
      } else if (item.is_array()) {
        std::vector<std::string> inner = array;
        inner.push_back(std::to_string(i));
        flatten(item, inner);
      }
      ++i;
    }
  }
};

} // namespace

// optimum v2.1.0 gptq/quantizer.py convert_model: `layers_to_keep =
// sum(self.modules_in_block_to_quantize, [])` when the value is not None, then
// `name.endswith(layer)` for each; get_layers (gptq/utils.py) tests `name.startswith(prefix)`
// with block_name_to_quantize. transformers hands both over unchanged (GPTQConfig.to_dict_optimum,
// quantizer_gptq.py GptqHfQuantizer.__init__).
OptimumList read_optimum_list(const json::Json& config) {
  OptimumList out;
  if (const auto it = config.find("block_name_to_quantize"); it != config.end() && !it->is_null()) {
    if (it->is_string()) {
      out.block = it->get<std::string>();
    } else {
      out.block_error = "TypeError: startswith first arg must be str or a tuple of str, not " +
                        py::type_name(*it);
    }
  }
  const auto it = config.find("modules_in_block_to_quantize");
  if (it == config.end() || it->is_null()) {
    return out;
  }
  out.given = true;
  const json::Json& list = *it;
  if (!list.is_array() && !list.is_string() && !list.is_object()) {
    out.error = "TypeError: '" + py::type_name(list) + "' object is not iterable";
    out.simple = false;
    return out;
  }
  if (!list.is_array()) {
    // A str or dict iterates as str items: sum() cannot add the first to a list.
    out.error = "TypeError: can only concatenate list (not \"str\") to list";
    out.simple = false;
    return out;
  }
  bool all_strings = !list.empty();
  for (const auto& item : list) {
    all_strings = all_strings && item.is_string();
  }
  if (all_strings) {
    out.flat = true;
    out.error = "TypeError: can only concatenate list (not \"str\") to list";
    for (const auto& item : list) {
      out.summed.push_back(item.get<std::string>());
    }
    return out;
  }
  for (const auto& item : list) {
    if (!item.is_array()) {
      out.error =
          "TypeError: can only concatenate list (not \"" + py::type_name(item) + "\") to list";
      out.simple = false;
      return out;
    }
    for (const auto& name : item) {
      if (!name.is_string()) {
        // endswith raises for the first layer whose scan reaches it: every layer of a block
        // whose entries do not all end the names before it.
        out.error = "TypeError: endswith first arg must be str or a tuple of str, not " +
                    py::type_name(name);
        out.simple = false;
        return out;
      }
      out.summed.push_back(name.get<std::string>());
    }
  }
  return out;
}

Result<GptqConfig> read_gptq(const ConfigFile& file) {
  const json::Json& config = file.config();
  const std::string base = pointer_text(file.pointer);
  GptqConfig gptq;
  gptq.in_hf_config =
      file.name == "config.json" && file.pointer == std::vector<std::string>{"quantization_config"};
  // AutoGPTQConfig.from_config reads get_from_keys_or(config, ["lm_head"], default=False) and
  // get_linear_quant_method tests it by truthiness (auto_gptq.py, utils/gptq_utils.py, vLLM
  // main 017e9f4).
  if (const auto it = config.find("lm_head"); it != config.end()) {
    gptq.lm_head = py::truthy(*it);
  }
  // The fields override_config can replace per layer (utils/gptq_utils.py): integers and
  // booleans only, as its isinstance tests take them.
  const auto read_fields = [](const json::Json& object,
                              std::optional<int64_t>& bits,
                              std::optional<int64_t>& group_size,
                              std::optional<bool>& sym) {
    if (!object.is_object()) {
      return;
    }
    const auto integer = [&](const char* key) -> std::optional<int64_t> {
      const auto it = object.find(key);
      if (it == object.end() || !it->is_number_integer()) {
        return std::nullopt;
      }
      return it->get<int64_t>();
    };
    bits = integer("bits");
    group_size = integer("group_size");
    if (const auto it = object.find("sym"); it != object.end() && it->is_boolean()) {
      sym = it->get<bool>();
    }
  };
  read_fields(config, gptq.bits, gptq.group_size, gptq.sym);
  if (const auto it = config.find("dynamic"); it != config.end() && !it->is_null()) {
    if (!it->is_object()) {
      return field_error(file, base + "/dynamic", "expected an object of rules");
    }
    gptq.has_dynamic = true;
    for (const auto& [key, value] : it->items()) {
      GptqRule rule;
      rule.key = key;
      rule.negative = key.rfind("-:", 0) == 0;
      rule.pattern = rule.negative || key.rfind("+:", 0) == 0 ? key.substr(2) : key;
      if (!rule.negative) {
        read_fields(value, rule.bits, rule.group_size, rule.sym);
      }
      gptq.dynamic.push_back(std::move(rule));
    }
  }
  gptq.optimum = read_optimum_list(config);
  const std::string list_key = "modules_in_block_to_quantize";
  const auto found = config.find(list_key);
  if (found == config.end()) {
    return gptq;
  }
  const json::Json& raw = found.value();
  gptq.has_list = raw.is_array();
  gptq.list_append_to = {list_key};
  // maybe_update_config (auto_gptq.py, vLLM main 017e9f4) keeps the list only when it is truthy:
  // absent, null and [] alike make vLLM derive it from the headers.
  if (!py::truthy(raw)) {
    return gptq;
  }
  if (!raw.is_array()) {
    return field_error(file, base + "/" + list_key, "expected a list");
  }
  std::vector<std::string> names;
  ListReader reader{names, gptq.list_entries};
  bool nested = false;
  for (const auto& item : raw) {
    nested = item.is_array();
    break;
  }
  if (nested) {
    // is_list_of(..., list) looks at the first item only; maybe_update_config then iterates
    // every item one level down, so a string beside the lists is cut into its characters.
    size_t i = 0;
    for (const auto& item : raw) {
      if (item.is_array()) {
        const std::vector<std::string> array{list_key, std::to_string(i)};
        reader.flatten(item, array);
        gptq.list_append_to = array;
      } else if (item.is_string()) {
        for (std::string& piece : code_points(item.get<std::string>())) {
          reader.add(std::move(piece), {list_key}, i);
        }
      }
      ++i;
    }
  } else {
    reader.flatten(raw, {list_key});
  }
  gptq.modules_in_block = std::move(names);
  return gptq;
}

} // namespace qpatch::quant
