// SPDX-License-Identifier: Apache-2.0
// How vLLM decides whether a layer is quantized under an auto-round config (INCConfig; vLLM main
// 017e9f4: inc/inc.py get_quant_method, inc/config_parser.py _resolve_raw; engines.md §5). The
// keys are those of extra_config after apply_vllm_mapper (every key renamed by the model's
// prefix renames, regex keys too; a later key renamed onto an earlier one replaces its value in
// place). For vLLM prefix P:
//   0. (get_quant_method) a key equal to P or to "model." + P whose bits, 16 when absent, are
//      >= 16: dense at once;
//   1-2. a key equal to P, else the first key K with P ending in "." + K, gives the tuple;
//   3. the default: quantized unless the layer is a ParallelLMHead; with a non-empty block list,
//      quantized iff P starts with one of its (renamed) entries, lm_head included;
//   4. (the "fusedmoe" class-name branch never fires: vLLM's experts class is RoutedExperts);
//   5. for each (fusion key F, sub keys) of the model class's packed_modules_mapping in order,
//      where F occurs exactly once in P (anywhere, as a substring): the names P.replace(F, sub);
//      skipped unless one of them is configured explicitly (an exact key, or a regex key that
//      re.search finds in it); their tuples must all be equal, else ValueError;
//   6. get_config(P): an exact key, then the first regex key (a key with a regex metacharacter)
//      re.search finds in P, else the default.
// A key gives the tuple (bits, group_size, sym) as cfg.get(field, default), where the default is
// the global value when the layer is quantized by default and (16, -1, True) when not (steps 1-2
// always use the global values). Quantized iff the tuple's bits are < 16. MoE experts are judged
// on "...mlp.experts".
//
// transformers (dialect auto_round.library_convert) converts the model with the auto_round
// library instead (auto_round_rules.cpp cites each step of convert_hf_model/get_layer_config):
// every nn.Linear under its module name, no renames, nothing fused.
#pragma once

#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/engine/versions.hpp>
#include <qpatch/quant/auto_round.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace qpatch::engine {

using PackedMapping = std::vector<std::pair<std::string, std::vector<std::string>>>;

// The packed_modules_mapping of the model class vLLM builds for `model`, in its dict order: what
// the INC parser consults (not only the fusions qpatch builds layers from: Qwen3-VL's
// "qkv": ["qkv"] for its vision tower reaches the Qwen3.5 VLM's in_proj_qkvz first).
PackedMapping inc_packed_mapping(const ModelInfo& model);

class AutoRoundRules {
public:
  // `version`: vLLM before #48589 has no dot-suffix keys (step 2); before #40601 step 5 runs
  // for every layer a fusion key occurs in, configured or not; before #48816 no Qwen3.5 MTP
  // special case.
  // `built`: the layers the engine builds (the auto_round library reads the model's whole
  // nn.Linear set: regex keys fall back to it, and without a block list its ModuleLists are the
  // blocks); vLLM's rules do not need it.
  AutoRoundRules(const quant::IncConfig& config,
                 const ModelInfo& model,
                 const EngineVersion& version = newest_version(Engine::vllm),
                 const std::vector<Layer>* built = nullptr);

  Decision decide(const Layer& layer) const;
  // Return every rule that bears on `layer`, in the order vLLM tries them, as (label, text).
  std::vector<std::pair<std::string, std::string>> trace(const Layer& layer) const;
  // True when the Qwen3.5 MTP special case applies (a "-:" dynamic key containing "mtp").
  bool mtp_special_case() const;
  const quant::IncConfig& config() const { return m_config; }
  // The name vLLM holds extra_config entry `index` under (renamed by the model's mapper).
  const std::string& vllm_key(size_t index) const { return m_entry_names.at(index); }
  // True when vLLM keeps extra_config entry `index` (no later entry is renamed onto its name).
  bool entry_kept(size_t index) const;
  // True when the auto_round library's conversion decides (transformers).
  bool library_convert() const { return m_library; }
  // The library's whole-load refusal that depends on the layers: a layer it quantizes whose
  // scheme no backend of BackendInfos serves on any device ("No compatible backend found"), or
  // a modules_to_not_convert / modules_in_block_to_quantize entry that is no regex.
  std::optional<std::string> library_refusal(const std::vector<Layer>& built) const;

private:
  // Where the library's per-layer dict for a layer came from.
  struct LibraryChoice {
    enum class From { entry, dynamic, skip, module_list };
    json::Json cfg;
    From from = From::entry;
    size_t entry = 0; // the extra_config entry (From::entry)
    std::string key;  // the key, rule or skip entry
  };
  void convert_like_library(const std::vector<Layer>& built);
  // _expand_regex_config(regex_config, base_config=m_lib_extra, layer_names, model).
  void expand_regex(const std::vector<std::pair<std::string, LibraryChoice>>& regex_config);
  LibraryChoice* lib_find(const std::string& name);
  void lib_set(const std::string& name, LibraryChoice choice);
  Decision decide_library(const Layer& layer) const;
  std::vector<std::pair<std::string, std::string>> trace_library(const Layer& layer) const;

  // An extra_config key as vLLM holds it: renamed, with the entry whose value it keeps.
  struct Key {
    std::string name;
    size_t entry = 0;
    bool regex = false;
    std::optional<Pattern> pattern; // for regex keys vLLM can compile
  };
  // A resolved (bits, group_size, sym), and the key that gave it (nothing: the default).
  struct Tuple {
    int64_t bits = 16;
    json::Json group_size;
    json::Json sym;
    std::optional<size_t> key;
  };
  // The packed_modules_mapping entry step 5 uses for P, with its names, or nothing.
  struct Fused {
    size_t entry = 0;
    std::vector<std::string> names;
  };

  std::optional<size_t> exact_key(const std::string& name) const;
  Tuple from_key(size_t key, bool quantized) const;
  Tuple by_default(bool quantized) const;
  // get_config(name, quantized): exact key, first regex key, default.
  Tuple get_config(const std::string& name, bool quantized, bool& undecidable) const;
  bool explicitly_configured(const std::string& name, bool& undecidable) const;
  bool default_quantized(const Layer& layer) const;
  std::optional<Fused> fused_entry(const std::string& prefix, bool& undecidable) const;
  Decision decision_of(const Tuple& tuple, const Layer& layer, bool quantized) const;
  std::string tuple_text(const Tuple& tuple) const;
  // True when every tuple equals the first (a fused layer's or a FusedMoE's configs agree).
  static bool all_alike(const std::vector<Tuple>& tuples);
  // The trace's block-list line: the entry `prefix` starts with, or none.
  std::pair<std::string, std::string> block_line(const std::string& prefix) const;
  // The trace's last line: the verdict, and the key or rule that gave it.
  static std::pair<std::string, std::string> verdict_line(const Decision& decision);
  // SGLang (dialect auto_round.sglang_routing; auto_round_sglang.cpp).
  Decision decide_sglang(const Layer& layer) const;
  std::vector<std::pair<std::string, std::string>> trace_sglang(const Layer& layer) const;
  // get_config's regex step: the first regex key that re.fullmatch-es `name` (nothing: none;
  // `undecidable` when a match could not be decided).
  std::optional<size_t> sglang_regex_key(const std::string& name, bool& undecidable) const;
  // The GPTQ/AWQ config SGLang builds for a quantized layer's tuple refuses it: the error.
  std::optional<std::string> sglang_kernel_refusal(const Tuple& tuple) const;

  quant::IncConfig m_config;
  ModelInfo m_model;
  PackedMapping m_packed;
  bool m_suffix_keys = true;              // #48589
  bool m_fused_needs_explicit = true;     // #40601
  bool m_mtp_special_case = true;         // #48816
  std::vector<Key> m_keys;                // vLLM's extra_config keys, in dict order
  std::vector<std::string> m_entry_names; // per extra_config entry: its renamed name
  std::vector<std::string> m_blocks;      // renamed block names
  bool m_sglang = false;                  // SGLang's routing.py
  // The auto_round library (transformers).
  bool m_library = false;
  bool m_lib_undecidable = false;
  std::optional<std::string> m_lib_refusal;
  std::vector<std::string> m_lib_linears; // every nn.Linear, in checkpoint order
  std::set<std::string> m_lib_linear_set;
  std::vector<std::string> m_lib_blocks;    // the block list get_layer_config uses
  std::vector<std::string> m_lib_in_blocks; // layer_names: the Linear under a block
  std::vector<std::pair<std::string, LibraryChoice>> m_lib_extra; // extra_config, expanded
  std::map<std::string, size_t> m_lib_index;                      // name -> m_lib_extra position
};

} // namespace qpatch::engine
