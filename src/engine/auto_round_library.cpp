// SPDX-License-Identifier: Apache-2.0
// How the auto_round library picks the layers an auto-round config quantizes, as transformers
// runs it: quantizers/quantizer_auto_round.py (cea4241) AutoRoundQuantizer.
// _process_model_before_weight_loading calls intel/auto-round v0.14.2 (e98f1c1)
// inference/convert_model.py convert_hf_model, which builds get_layer_config(model, config) and
// hands it to _replace_by_quant_layers. Every step below cites its function there. The module
// names are the checkpoint's: Qwen3.5's _checkpoint_conversion_mapping is {} and
// conversion_mapping.py (44bcb9d) has no qwen3_5 entry, so get_layer_config's _should_remap is
// False and _remap_paths_for_text_model renames nothing.
#include "json/python_values.hpp"

#include <qpatch/engine/auto_round_rules.hpp>

#include <algorithm>
#include <cmath>

namespace qpatch::engine {

namespace {

// utils/model.py check_to_quantized: int(bits) if bits is not None else 16 (alike act_bits).
// Nothing: a value int() refuses (the layer is left undecided).
std::optional<int64_t> bits_of(const json::Json& value) {
  if (value.is_null()) {
    return 16;
  }
  if (value.is_boolean()) {
    return value.get<bool>() ? 1 : 0;
  }
  if (value.is_number_integer()) {
    return value.get<int64_t>();
  }
  if (value.is_number()) {
    return static_cast<int64_t>(std::trunc(value.get<double>()));
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos &&
        text.size() < 18) {
      return std::stoll(text);
    }
  }
  return std::nullopt;
}

// `cfg.get(key, fallback)` for the layer's dict.
json::Json field(const json::Json& cfg, const char* key, const json::Json& fallback) {
  if (cfg.is_object()) {
    if (const auto it = cfg.find(key); it != cfg.end()) {
      return *it;
    }
  }
  return fallback;
}

// inference/backend.py BackendInfos (v0.14.2): per backend its packing formats, weight data
// types and bits. check_compatible also asks the device, the system, group_size, sym, act_bits,
// the feature checkers and the requirements; those depend on the machine, so only a scheme no
// row accepts on these three counts is known, from the config alone, to find no backend.
struct BackendRow {
  std::vector<std::string_view> formats;
  std::vector<std::string_view> data_types;
  std::vector<int64_t> bits;
};

const std::vector<BackendRow>& backend_rows() {
  static const std::vector<std::string_view> gptq = {"auto_round:auto_gptq"};
  static const std::vector<std::string_view> gptq_no_zp = {"auto_round", "auto_round:gptqmodel"};
  static const std::vector<std::string_view> awq = {"auto_round:auto_awq"};
  static const std::vector<std::string_view> mx = {"mx_fp", "mx_fp_rceil", "mx_int"};
  static const std::vector<std::string_view> ints = {"int"};
  static const std::vector<BackendRow> rows = {
      {gptq, ints, {4}},                               // auto_gptq:exllamav2
      {gptq, ints, {2, 4, 8}},                         // auto_gptq:tritonv2
      {gptq, ints, {2, 3, 4, 8}},                      // auto_gptq:cuda
      {{"auto_round:fp8_static"}, {"fp"}, {8}},        // auto_round:torch_fp8_static
      {{"auto_round:llm_compressor"}, mx, {8}},        // auto_round:torch_mxfp8
      {{"auto_round:llm_compressor"}, mx, {4}},        // auto_round:torch_mxfp4
      {{"auto_round"}, mx, {4}},                       // auto_round:torch_mxint4
      {{"auto_round:llm_compressor"}, {"nv_fp"}, {4}}, // auto_round:torch_nvfp4
      {gptq_no_zp, ints, {2, 4, 8}},                   // auto_round:tritonv2
      {gptq, ints, {2, 4, 8}},                         // auto_round:tritonv2_zp
      {gptq_no_zp, ints, {2, 3, 4, 8}},                // auto_round:torch
      {gptq, ints, {2, 3, 4, 8}},                      // auto_round:torch_zp
      {gptq_no_zp, ints, {4, 8}},                      // gptqmodel:marlin
      {gptq, ints, {4, 8}},                            // gptqmodel:marlin_zp
      {{"auto_round:auto_gptq", "auto_round", "auto_round:gptqmodel"}, ints, {4}}, // exllamav2
      {awq, ints, {4, 8}},           // gptqmodel:awq_*, auto_awq
      {gptq_no_zp, ints, {2, 4, 8}}, // auto_round_kernel(_xpu)
      {gptq, ints, {2, 4, 8}},       // auto_round_kernel_zp(_xpu)
      {awq, ints, {4}},              // auto_round_kernel_awq(_xpu)
      {gptq_no_zp, ints, {4}},       // hpu
      {gptq, ints, {4}},             // hpu_zp
      {{"mlx", "auto_round:auto_gptq", "auto_round", "auto_round:gptqmodel"},
       ints,
       {2, 3, 4, 5, 6, 8}}, // mlx
  };
  return rows;
}

bool some_backend(const std::string& format, const std::string& data_type, int64_t bits) {
  const auto& rows = backend_rows();
  return std::any_of(rows.begin(), rows.end(), [&](const BackendRow& row) {
    return std::find(row.formats.begin(), row.formats.end(), format) != row.formats.end() &&
           std::find(row.data_types.begin(), row.data_types.end(), data_type) !=
               row.data_types.end() &&
           std::find(row.bits.begin(), row.bits.end(), bits) != row.bits.end();
  });
}

// utils/model.py get_block_names(model, quant_vision=True) -> _get_vlm_block_names: the
// outermost nn.ModuleList on every path (_search_block), each as the os.path.commonprefix of
// its children's names with "." stripped: "X" for a list of two or more ("X.0", "X.1", ...),
// "X.0" for one, which prefix the same nn.Linear. A module name's first all-digit component
// is an index into that list. (No audio list in Qwen3.5; qwen3_5 is not in
// SPECIAL_MULTIMODAL_BLOCK.)
std::vector<std::string> module_lists(const std::vector<std::string>& linears) {
  std::vector<std::string> lists;
  for (const std::string& name : linears) {
    size_t start = 0;
    while (start < name.size()) {
      const size_t dot = name.find('.', start);
      const size_t end = dot == std::string::npos ? name.size() : dot;
      const bool digits = end > start && std::all_of(name.begin() + static_cast<long>(start),
                                                     name.begin() + static_cast<long>(end),
                                                     [](char c) { return c >= '0' && c <= '9'; });
      if (digits && start > 0 && dot != std::string::npos) {
        const std::string list = name.substr(0, start - 1);
        if (std::find(lists.begin(), lists.end(), list) == lists.end()) {
          lists.push_back(list);
        }
        break;
      }
      if (dot == std::string::npos) {
        break;
      }
      start = dot + 1;
    }
  }
  return lists;
}

} // namespace

AutoRoundRules::LibraryChoice* AutoRoundRules::lib_find(const std::string& name) {
  const auto it = m_lib_index.find(name);
  return it == m_lib_index.end() ? nullptr : &m_lib_extra[it->second].second;
}

void AutoRoundRules::lib_set(const std::string& name, LibraryChoice choice) {
  if (LibraryChoice* same = lib_find(name)) {
    *same = std::move(choice); // a dict assignment keeps the key's place
    return;
  }
  m_lib_index.emplace(name, m_lib_extra.size());
  m_lib_extra.emplace_back(name, std::move(choice));
}

// inference/utils.py _expand_regex_config: every key that is not the name of a supported layer
// (nn.Linear) is a regex; one that does not compile is skipped; it is re.search'ed over
// layer_names (the block layers) first, and only when it finds none there over every nn.Linear;
// a value of {} is skipped; a layer already in base_config keeps its dict (so the first key
// that reaches a layer wins, and an exact key is never overwritten).
void AutoRoundRules::expand_regex(
    const std::vector<std::pair<std::string, LibraryChoice>>& regex_config) {
  for (const auto& [key, choice] : regex_config) {
    if (m_lib_linear_set.count(key) != 0) {
      continue;
    }
    const auto pattern = Pattern::compile(key, "extra_config");
    if (!pattern) {
      continue;
    }
    const auto search = [&](const std::vector<std::string>& names) {
      std::vector<std::string> found;
      for (const std::string& name : names) {
        const auto hit = pattern->matches(name, MatchMode::search);
        if (!hit) {
          m_lib_undecidable = true;
          return found;
        }
        if (*hit) {
          found.push_back(name);
        }
      }
      return found;
    };
    std::vector<std::string> matched = search(m_lib_in_blocks);
    if (matched.empty()) {
      matched = search(m_lib_linears);
    }
    if (m_lib_undecidable) {
      return;
    }
    if (matched.empty() || (choice.cfg.is_object() && choice.cfg.empty())) {
      continue;
    }
    for (const std::string& name : matched) {
      if (lib_find(name) == nullptr) {
        lib_set(name, choice);
      }
    }
  }
}

void AutoRoundRules::convert_like_library(const std::vector<Layer>& built) {
  const quant::AutoRoundLibraryConfig& lib = m_config.library;
  // SUPPORTED_LAYER_TYPES (nn.Linear, Conv1D): the layers built as nn.Linear.
  for (const Layer& layer : built) {
    if (layer.kind == LayerKind::linear || layer.kind == LayerKind::lm_head) {
      m_lib_linears.push_back(layer.prefix);
    }
  }
  m_lib_linear_set.insert(m_lib_linears.begin(), m_lib_linears.end());
  // get_layer_config: the block list, then layer_names = the supported layers whose names
  // start with a block name (utils/model.py check_start_with_block_name: str.startswith, no
  // dot boundary).
  m_lib_blocks = lib.blocks ? *lib.blocks : module_lists(m_lib_linears);
  for (const std::string& name : m_lib_linears) {
    if (std::any_of(m_lib_blocks.begin(), m_lib_blocks.end(), [&](const std::string& block) {
          return name.rfind(block, 0) == 0;
        })) {
      m_lib_in_blocks.push_back(name);
    }
  }
  // extra_config = getattr(quantization_config, "extra_config", {}), in file order.
  for (size_t i = 0; i < m_config.extra_config.size(); ++i) {
    const quant::IncEntry& entry = m_config.extra_config[i];
    lib_set(entry.key, {entry.value, LibraryChoice::From::entry, i, entry.key});
  }
  const auto compile_or_refuse = [&](const std::string& entry, const char* key) {
    auto pattern = Pattern::compile(entry, key);
    if (!pattern && !m_lib_refusal) {
      m_lib_refusal = "re.error: " + std::string(key) + " entry \"" + entry +
                      "\" is not a Python regex (" + pattern.error().message + ")";
    }
    return pattern;
  };
  // modules_in_block_to_quantize (truthy, flattened): a block layer no entry re.search'es
  // gets {"bits": 16}.
  if (lib.modules_in_block && !m_lib_in_blocks.empty()) {
    for (const std::string& name : m_lib_in_blocks) {
      bool listed = false;
      for (const std::string& entry : *lib.modules_in_block) {
        const auto pattern = compile_or_refuse(entry, "modules_in_block_to_quantize");
        const auto hit = pattern ? pattern->matches(name, MatchMode::search) : false;
        m_lib_undecidable = m_lib_undecidable || !hit;
        listed = listed || hit.value_or(false);
      }
      if (!listed) {
        lib_set(name, {json::Json{{"bits", 16}}, LibraryChoice::From::module_list, 0, ""});
      }
    }
  }
  // dynamic through convert_from_autogptq_dynamic, expanded into extra_config.
  if (!lib.dynamic.empty()) {
    std::vector<std::pair<std::string, LibraryChoice>> converted;
    for (const auto& [regex, cfg] : lib.dynamic) {
      converted.emplace_back(regex, LibraryChoice{cfg, LibraryChoice::From::dynamic, 0, regex});
    }
    expand_regex(converted);
  }
  // skip_not_convert_modules: ["lm_head"] + modules_to_not_convert, each re.search'ed over the
  // block layers; a match sets {"bits": 16}, over any dict already there.
  if (!m_lib_in_blocks.empty()) {
    for (const std::string& name : m_lib_in_blocks) {
      for (const std::string& entry : lib.modules_to_not_convert) {
        const auto pattern = compile_or_refuse(entry, "modules_to_not_convert");
        const auto hit = pattern ? pattern->matches(name, MatchMode::search) : false;
        m_lib_undecidable = m_lib_undecidable || !hit;
        if (hit.value_or(false)) {
          lib_set(name, {json::Json{{"bits", 16}}, LibraryChoice::From::skip, 0, entry});
          break;
        }
      }
    }
  }
  // _expand_regex_config(regex_config=extra_config, base_config=extra_config, ...): the keys
  // as they stand now (the dynamic and skip entries are layer names, so not regex keys).
  expand_regex(std::vector<std::pair<std::string, LibraryChoice>>(m_lib_extra));
}

Decision AutoRoundRules::decide_library(const Layer& layer) const {
  Decision decision;
  if (layer.kind != LayerKind::linear && layer.kind != LayerKind::lm_head) {
    decision.by = DecidedBy::built_dense; // no nn.Linear: _get_layer_features gives None
    return decision;
  }
  if (m_lib_undecidable) {
    decision.by = DecidedBy::undecidable;
    return decision;
  }
  const std::string& name = layer.prefix;
  // layer_names = set(layer_names) | extra_config.keys(); every other module stays nn.Linear.
  const auto at = m_lib_index.find(name);
  const bool in_blocks =
      std::find(m_lib_in_blocks.begin(), m_lib_in_blocks.end(), name) != m_lib_in_blocks.end();
  if (!in_blocks && at == m_lib_index.end()) {
    decision.target =
        m_config.library.blocks_key.empty()
            ? "no block of get_block_names starts the name and no extra_config key names it"
            : "no " + m_config.library.blocks_key +
                  " entry starts the name and no extra_config key names it";
    return decision;
  }
  // The scheme: each attribute from the layer's dict, else the config's (get_layer_config's
  // default_quant_scheme); quantized iff bits <= 8 or act_bits <= 8 (check_to_quantized).
  const json::Json cfg =
      at == m_lib_index.end() ? json::Json::object() : m_lib_extra[at->second].second.cfg;
  const auto bits = bits_of(field(cfg, "bits", m_config.bits));
  const auto act_bits = bits_of(field(cfg, "act_bits", m_config.library.act_bits));
  if (!bits || !act_bits) {
    decision.by = DecidedBy::undecidable;
    return decision;
  }
  decision.verdict = *bits <= 8 || *act_bits <= 8 ? Verdict::quantized : Verdict::dense;
  const bool quantized = decision.verdict == Verdict::quantized;
  if (at == m_lib_index.end()) {
    decision.by = DecidedBy::target_class;
    decision.target = m_config.library.blocks_key.empty()
                          ? "every block get_block_names finds, no block list given"
                          : m_config.library.blocks_key + " (prefix match)";
    return decision;
  }
  const LibraryChoice& choice = m_lib_extra[at->second].second;
  switch (choice.from) {
  case LibraryChoice::From::entry:
    decision.by = quantized ? DecidedBy::target_name : DecidedBy::ignore_entry;
    decision.ignore_index = choice.entry;
    decision.target = "extra_config[\"" + choice.key + "\"]";
    break;
  case LibraryChoice::From::dynamic:
    decision.by = quantized ? DecidedBy::target_name : DecidedBy::no_target;
    decision.target = "the dynamic rule for \"" + choice.key + "\"";
    break;
  case LibraryChoice::From::skip:
    decision.by = DecidedBy::no_target;
    decision.target = "modules_to_not_convert entry \"" + choice.key + "\"" +
                      (choice.key == "lm_head" ? " (transformers' default skip)" : "");
    break;
  case LibraryChoice::From::module_list:
    decision.by = DecidedBy::no_target;
    decision.target = "modules_in_block_to_quantize (no entry re.search'es it)";
    break;
  }
  return decision;
}

std::optional<std::string> AutoRoundRules::library_refusal(const std::vector<Layer>& built) const {
  if (m_lib_refusal) {
    return m_lib_refusal;
  }
  // _replace_by_quant_layers: for each layer to quantize, get_layer_backend(...); none found:
  // ValueError(f"No compatible backend found for layer {layer_name} with config {config}").
  // The layers are taken in set order (list(set(layer_names).union(...))), so which one Python
  // names varies from run to run; this names the first in checkpoint order.
  const quant::AutoRoundLibraryConfig& lib = m_config.library;
  for (const Layer& layer : built) {
    const Decision decision = decide_library(layer);
    if (decision.verdict != Verdict::quantized) {
      continue;
    }
    const auto at = m_lib_index.find(layer.prefix);
    const json::Json cfg =
        at == m_lib_index.end() ? json::Json::object() : m_lib_extra[at->second].second.cfg;
    const json::Json data_type = field(cfg, "data_type", lib.data_type);
    const auto bits = bits_of(field(cfg, "bits", m_config.bits));
    if (!data_type.is_string() || !bits ||
        some_backend(lib.packing_format, data_type.get<std::string>(), *bits)) {
      continue;
    }
    const json::Json group_size =
        m_config.group_size.is_null() ? json::Json(128) : m_config.group_size;
    const json::Json sym = m_config.sym.is_null() ? json::Json(true) : m_config.sym;
    return "ValueError: No compatible backend found for layer " + layer.prefix +
           " with config QuantizationScheme(bits=" + std::to_string(*bits) +
           ", group_size=" + py::repr(field(cfg, "group_size", group_size)) +
           ", sym=" + py::repr(field(cfg, "sym", sym)) + ", data_type=" + py::repr(data_type) +
           ", act_bits=" + py::repr(field(cfg, "act_bits", lib.act_bits)) + ", ...)";
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>>
AutoRoundRules::trace_library(const Layer& layer) const {
  std::vector<std::pair<std::string, std::string>> lines;
  std::string blocks;
  for (const std::string& block : m_lib_blocks) {
    blocks += (blocks.empty() ? "\"" : ", \"") + block + "\"";
  }
  const bool in_blocks = std::find(m_lib_in_blocks.begin(), m_lib_in_blocks.end(), layer.prefix) !=
                         m_lib_in_blocks.end();
  lines.emplace_back(m_config.library.blocks_key.empty() ? "blocks" : m_config.library.blocks_key,
                     "[" + blocks + "]: " + layer.prefix +
                         (in_blocks ? " starts with one" : " starts with none"));
  if (const auto at = m_lib_index.find(layer.prefix); at != m_lib_index.end()) {
    const LibraryChoice& choice = m_lib_extra[at->second].second;
    lines.emplace_back(
        "dict",
        choice.cfg.dump() + " (" +
            (choice.from == LibraryChoice::From::entry ? "extra_config key \"" + choice.key + "\""
             : choice.from == LibraryChoice::From::dynamic ? "dynamic rule \"" + choice.key + "\""
             : choice.from == LibraryChoice::From::skip
                 ? "modules_to_not_convert entry \"" + choice.key + "\""
                 : std::string("modules_in_block_to_quantize")) +
            ")");
  }
  lines.emplace_back("verdict", verdict_text(decide_library(layer)));
  return lines;
}

} // namespace qpatch::engine
