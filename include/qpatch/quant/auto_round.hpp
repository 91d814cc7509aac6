// SPDX-License-Identifier: Apache-2.0
// A read-only view of an auto-round config (quant_method "auto-round", vLLM's INCConfig;
// engines.md §5): the global `bits`, `group_size` and `sym`, `extra_config` in file order (order
// decides among regex keys), and `block_name_to_quantize` / `to_quant_block_names` (a list or a
// comma-separated string), and what the auto_round library reads (`library`). Values are kept as
// written where vLLM compares them as Python values (a fused layer's shards must resolve to one
// (bits, group_size, sym) tuple). `dynamic` is not an INC key, but vLLM's Qwen3.5 MTP code reads it
// whatever the method.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/quant/gptq.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::quant {

struct IncEntry {
  std::string key;
  // absent: vLLM's cfg.get("bits", default) takes the default (16 for the exact-name early exit,
  // else the global bits when the layer is quantized by default, else 16). "bits": null is read
  // as absent (vLLM would compare None with 16 and raise TypeError; not modelled yet).
  std::optional<int64_t> bits;
  std::optional<json::Json> group_size;    // as written; absent: the default
  std::optional<json::Json> sym;           // as written; absent: the default
  json::Json value = json::Json::object(); // the whole object (the auto_round library reads it all)
};

// What the auto_round library's get_layer_config (inference/convert_model.py, v0.14.2 e98f1c1)
// reads besides extra_config, as transformers' AutoRoundConfig holds it (every key of the config
// becomes an attribute: utils/quantization_config.py AutoRoundConfig.__init__, 6ed74f1).
struct AutoRoundLibraryConfig {
  std::string data_type = "int"; // getattr(config, "data_type", "int")
  json::Json act_bits;           // getattr(config, "act_bits", None): null is None
  // AutoRoundConfig.__init__ sets "auto_round:gptq", then the config's own packing_format;
  // convert_hf_model normalises "auto" and "auto_round:gptq" to "auto_round:auto_gptq" and
  // "auto_round:awq" to "auto_round:auto_awq".
  std::string packing_format = "auto_round:auto_gptq";
  // get_layer_config: quant_block_list when not None (a nested list: each inner list's
  // os.path.commonprefix, "." stripped); else block_name_to_quantize unless None, else
  // to_quant_block_names; a list flattened (flatten_list), a string split on ",". Nothing:
  // get_block_names(model, quant_vision=True), every outermost nn.ModuleList.
  std::optional<std::vector<std::string>> blocks;
  std::string blocks_key; // the key the list came from ("" for none)
  // skip_not_convert_modules: getattr(config, "modules_to_not_convert", []) handed to
  // get_modules_to_not_convert(add_default_skips=True), so "lm_head" first, then the entries.
  std::vector<std::string> modules_to_not_convert{"lm_head"};
  // modules_in_block_to_quantize when truthy, flattened.
  std::optional<std::vector<std::string>> modules_in_block;
  // dynamic (a non-empty object) through convert_from_autogptq_dynamic: "+:R" -> (R, the
  // value), "-:R" -> (R, {"bits": 16, "act_bits": 16}); other keys are dropped.
  std::vector<std::pair<std::string, json::Json>> dynamic;
};

struct IncConfig {
  int64_t bits = 4;
  json::Json group_size; // as written (null when absent: vLLM then rejects the config)
  json::Json sym;        // as written (null when absent)
  std::vector<IncEntry> extra_config;
  bool has_extra_config = false;
  // vLLM's get_from_keys_or: the first of block_name_to_quantize, to_quant_block_names that is
  // present, even when null; a string is split at every comma (Python str.split(",")). Absent,
  // null or empty: no block list, every layer but lm_head defaults to quantized.
  std::optional<std::vector<std::string>> block_names;
  std::string block_names_key; // which key was read ("" when neither is present)
  std::vector<GptqRule> dynamic;
  AutoRoundLibraryConfig library;
  // As SGLang's AutoRoundConfig.from_config reads them (get_from_keys_or: the first key present,
  // as Python's str() of its value): which kernel family routing.py builds for a layer.
  std::string packing_format = "auto_round:auto_gptq"; // packing_format
  std::string backend = "auto";                        // backend, vllm_backend, sglang_backend
};

Result<IncConfig> read_auto_round(const ConfigFile& file);

// True when vLLM's INC parser treats an extra_config key as a regex: it holds one of
// * + ? ^ $ ( ) [ ] { } | \ (a '.' alone does not count).
bool is_inc_regex_key(const std::string& key);

} // namespace qpatch::quant
