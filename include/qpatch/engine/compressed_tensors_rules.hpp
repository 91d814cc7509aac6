// SPDX-License-Identifier: Apache-2.0
// How vLLM decides whether a layer is quantized under a compressed-tensors config, as vLLM main
// (017e9f4, 2026-08-17) does it (engines.md §3.1-3.3):
//   1. ignore, always first (should_ignore_layer, compressed_tensors/utils.py): an entry equal to
//      the prefix, or a "re:" entry that re.match-es it; a fused layer not listed verbatim is
//      judged through its shards, which must agree ("Found a different quantization schemes").
//      Class names in ignore are never consulted.
//   2. targets (find_matched_target): by name (exact or re:), then fused (every shard matches a
//      name target), then class (target.lower() a substring of the class name, or a re: target
//      that re.match-es it); since #41965 a layer no target matches is dense.
// Dotted, non-regex ignore entries and targets are renamed like the layers (apply_vllm_mapper);
// regexes are not. MoE experts are judged through expert 0's gate/up/down names, with "Linear"
// copied to "RoutedExperts" (compressed_tensors_moe.py).
#pragma once

#include <qpatch/engine/decision.hpp>
#include <qpatch/engine/dialect.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/engine/versions.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/util/substring_set.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qpatch::engine {

class CompressedTensorsRules {
public:
  // `engine` selects the dialect (engines.md §3.4-3.5): vLLM; SGLang (plain ignore entries
  // match as case-insensitive substrings; Qwen3.5 mtp.fc is a plain nn.Linear); transformers
  // through the compressed-tensors library (judged on its own layers, transformers_view: class
  // names in ignore are honoured). Targets match the same way in all three.
  // `version` says which engine and which of its versions: vLLM before #41965 raises for a
  // Linear no target matches; before #49483 it tries a class target before the fused shards.
  CompressedTensorsRules(const quant::CtConfig& config,
                         const ModelInfo& model,
                         const EngineVersion& version = newest_version(Engine::vllm));
  CompressedTensorsRules(const CompressedTensorsRules&) = delete; // m_substring_first views
  CompressedTensorsRules& operator=(const CompressedTensorsRules&) = delete;
  CompressedTensorsRules(CompressedTensorsRules&&) = default;
  CompressedTensorsRules& operator=(CompressedTensorsRules&&) = default;

  // The version-dependent rules that can change a verdict under `config` in `version`, as a
  // key: versions with equal keys (and equal naming) judge every layer alike, so one is judged
  // for all of them (a "Linear" target leaves no Linear untargeted; one target cannot be matched
  // two ways; a class target never reaches the head).
  static std::string rules_key(const quant::CtConfig& config, const EngineVersion& version);

  // Return what vLLM builds for `layer`.
  Decision decide(const Layer& layer) const;
  // Return the `re:` entries (ignore, then targets) whose regex gave up on some name.
  std::vector<std::string> exhausted_entries() const;
  // Return every rule that bears on `layer`, in the order vLLM tries them, as (label, text).
  std::vector<std::pair<std::string, std::string>> trace(const Layer& layer) const;
  // Return the index of the first ignore entry that matches vLLM name `prefix`, or nothing.
  // Sets `undecidable` when a regex gave up.
  std::optional<size_t>
  match_ignore(const std::string& prefix, bool& undecidable, const std::string& cls = "") const;
  const Dialect& dialect() const { return m_dialect; }
  // True when an entry matches `prefix` read exactly (equality or re.match, no substrings):
  // how a substring hit is told apart.
  bool matches_exactly(const std::string& prefix) const;
  // Return whether ignore entry `index` matches vLLM name `prefix`.
  bool entry_matches(size_t index, const std::string& prefix) const;
  const quant::CtConfig& config() const { return m_config; }
  const ModelInfo& model() const { return m_model; }

private:
  struct Entry {
    std::string text;               // as written
    std::optional<Pattern> pattern; // for "re:" entries
    // Renamed like layer names (dotted plain entries only), and that lower-cased for SGLang's
    // case-insensitive substring test: each kept only where it differs (in most entries of a
    // long list neither does, and every rules object holds every entry).
    std::optional<std::string> renamed;
    std::optional<std::string> renamed_lower;
    const std::string& mapped() const { return renamed ? *renamed : text; }
    const std::string& mapped_lower() const { return renamed_lower ? *renamed_lower : mapped(); }
  };
  struct Target {
    std::string group;
    Entry entry;
  };
  Entry make_entry(const std::string& text) const;
  // The rules that judge the layer the engine names `prefix`: m_draft's for a draft layer when
  // the target's config is renamed by its class's mapper, else these.
  const CompressedTensorsRules* rules_for(std::string_view prefix) const;
  // trace's ignore lines for `names` (the layer's own, its shards, or expert 0's); returns how
  // many of them an entry ignores.
  size_t trace_ignore(const std::vector<std::string>& names,
                      const Layer& layer,
                      std::vector<std::pair<std::string, std::string>>& lines) const;
  // What trace adds after an entry held under another name than `written`.
  std::string renamed_note(const std::string& held, const std::string& written) const;
  // trace's line for an entry written as `name` that the target's mapper renamed away.
  void trace_renamed_away(const std::string& name,
                          std::vector<std::pair<std::string, std::string>>& lines) const;
  // The engine gives a ParallelLMHead no compressed-tensors method: always dense (SGLang; vLLM
  // before #37291).
  bool head_without_method(const Layer& layer) const;
  bool matches(const Entry& entry, const std::string& name, bool& undecidable) const;
  // find_matched_target's class step for one target.
  bool matches_class(const Entry& entry, const std::string& cls, bool& undecidable) const;
  bool ignores(const Entry& entry,
               const std::string& name,
               const std::string& cls,
               bool& undecidable) const;
  Decision decide_ignore_and_targets(const Layer& layer,
                                     const std::string& prefix,
                                     const std::vector<Target>& targets) const;
  std::optional<Target> find_target(const std::string& prefix,
                                    const std::string& cls,
                                    const std::vector<Target>& targets,
                                    DecidedBy& by,
                                    bool class_targets,
                                    bool& undecidable) const;

  quant::CtConfig m_config;
  ModelInfo m_model;
  Dialect m_dialect;
  CtDialect m_ct; // m_dialect.compressed_tensors
  std::vector<Entry> m_ignore;
  // Per m_ignore: the index of the config's ignore entry it stands for. m_ignore holds each
  // entry and, right after it, its copy as a draft's own quant config renames it
  // (ModelInfo::draft_config_mapper), so list order is kept and a decision names the entry
  // as written.
  std::vector<size_t> m_ignore_origin;
  // Where exact matching applies (not SGLang's substrings), each plain entry's first index by
  // its renamed text (and by its text as written, for transformers' class names), and the
  // regex entries in order: match_ignore looks up instead of scanning hundreds of entries. The
  // keys view m_ignore's strings (as m_substring_first's do), so a name's dotted suffixes are
  // looked up without a copy each (SGLang from #32736).
  std::unordered_map<std::string_view, size_t> m_plain_first;
  std::unordered_map<std::string_view, size_t> m_text_first;
  std::vector<size_t> m_regex_entries;
  // Under SGLang's substring test, each plain entry's first index by its lower-cased text, for
  // lists longer than k_substring_scan_limit (match_ignore); empty otherwise.
  // The keys view m_ignore's strings: a moved vector keeps its elements where they are, and the
  // class is never copied (the copy constructor is deleted).
  static constexpr size_t k_substring_scan_limit = 4096;
  std::unordered_map<std::string_view, size_t> m_substring_first;
  size_t m_longest_substring_entry = 0;
  // Under SGLang's substring test, the plain entries of a list up to k_substring_scan_limit
  // long, lower-cased, by index (util/substring_set.hpp).
  util::SubstringSet m_substrings;
  // The first regex entry before index `plain` that matches, else `plain` (list order).
  // match_ignore's search: the index in m_ignore (a draft's renamed copy included).
  std::optional<size_t>
  first_ignoring(const std::string& prefix, bool& undecidable, const std::string& cls) const;
  std::optional<size_t> first_regex_before(std::optional<size_t> plain,
                                           const std::string& prefix,
                                           const std::string& cls,
                                           bool& undecidable) const;
  // The first plain entry that is a substring of `lowered`, by m_substring_first.
  std::optional<size_t> first_substring(const std::string& lowered) const;
  // The first index among exact hits, class hits and fused-alias hits of `name`, or nothing.
  std::optional<size_t> first_exact(const std::string& name, const std::string& cls) const;
  std::vector<Target> m_targets;
  std::vector<Target> m_moe_targets; // with "Linear" copied to "RoutedExperts"
  // The draft's rules when the target's config is renamed by its class's mapper
  // (ModelInfo::target_config_mapper): the same config as written, judging the draft's layers.
  std::unique_ptr<CompressedTensorsRules> m_draft;
};

} // namespace qpatch::engine
