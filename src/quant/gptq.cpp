// SPDX-License-Identifier: Apache-2.0
#include <qpatch/quant/gptq.hpp>

namespace qpatch::quant {
Result<GptqConfig> read_gptq(const ConfigFile& file) {
  const json::Json& config = file.config();
  const std::string base = pointer_text(file.pointer);
  GptqConfig gptq;
  if (const auto it = config.find("lm_head"); it != config.end() && it->is_boolean()) {
    gptq.lm_head = it->get<bool>();
  }
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
      gptq.dynamic.push_back(std::move(rule));
    }
  }
  if (const auto it = config.find("modules_in_block_to_quantize");
      it != config.end() && !it->is_null()) {
    if (!it->is_array()) {
      return field_error(file, base + "/modules_in_block_to_quantize", "expected a list");
    }
    std::vector<std::string> names;
    for (const auto& item : *it) {
      // vLLM flattens a list of lists.
      if (item.is_array()) {
        for (const auto& inner : item) {
          if (inner.is_string()) {
            names.push_back(inner.get<std::string>());
          }
        }
      } else if (item.is_string()) {
        names.push_back(item.get<std::string>());
      }
    }
    gptq.modules_in_block = std::move(names);
  }
  return gptq;
}

} // namespace qpatch::quant
