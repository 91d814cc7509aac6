// SPDX-License-Identifier: Apache-2.0
// Readable replacements for long runs of engine-named entries. Where the fix must reach names
// that no checkpoint module has (SGLang's model.layers.N.linear_attn.in_proj_b for a checkpoint
// that says model.language_model.layers.N...), a person would write one pattern, not 96 names:
// `re:.*linear_attn\.in_proj_(a|b)$`, `re:^visual\.`. These are only candidates: the caller
// keeps one when every engine and version judges the checkpoint exactly as with the names.
#include "diagnose/judge_common.hpp"

#include <algorithm>
#include <map>

namespace qpatch::diagnose::detail {

std::string spelling_past_mapper(const engine::ModelInfo& model,
                                 std::string_view method,
                                 const std::string& name,
                                 MapperSpelling spelling) {
  const engine::ConfigMapper& mapper = model.target_config_mapper;
  if (!mapper.maps(method) || model.in_draft_model(name) || mapper.map(name) == name) {
    return name;
  }
  constexpr std::string_view k_model = "model.";
  if (spelling != MapperSpelling::regex && name.rfind(k_model, 0) == 0) {
    std::string tail = name.substr(k_model.size());
    if (mapper.map(tail) == tail) {
      return tail;
    }
  }
  return spelling == MapperSpelling::dotted_tail ? name : "re:^" + escape_regex(name) + "$";
}

std::string escape_regex(const std::string& name) {
  std::string out;
  for (const char c : name) {
    if (std::string_view(".^$*+?()[]{}|\\-").find(c) != std::string_view::npos) {
      out += '\\';
    }
    out += c;
  }
  return out;
}

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> components(const std::string& name) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    out.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) {
      return out;
    }
    start = dot + 1;
  }
}

// "(a|b)" for {"in_proj_a", "in_proj_b"}, written as "in_proj_(a|b)".
std::string alternation(std::vector<std::string> lasts) {
  std::sort(lasts.begin(), lasts.end());
  lasts.erase(std::unique(lasts.begin(), lasts.end()), lasts.end());
  if (lasts.size() == 1) {
    return escape_regex(lasts.front());
  }
  size_t common = 0;
  while (std::all_of(lasts.begin(), lasts.end(), [&](const std::string& last) {
    return common < last.size() && last[common] == lasts.front()[common];
  })) {
    ++common;
  }
  std::string out = escape_regex(lasts.front().substr(0, common)) + "(";
  for (size_t i = 0; i < lasts.size(); ++i) {
    out += (i == 0 ? "" : "|") + escape_regex(lasts[i].substr(common));
  }
  return out + ")";
}

} // namespace

std::vector<EntryCandidate> readable_candidates(const std::vector<std::string>& names,
                                                const std::set<std::string>& checkpoint_roots) {
  std::vector<EntryCandidate> out;
  // A top-level component no checkpoint name starts with (SGLang's "visual"): one anchored
  // pattern for the whole subtree.
  std::map<std::string, std::vector<std::string>> by_root;
  std::vector<std::string> rest;
  for (const std::string& name : names) {
    const std::string root = components(name).front();
    (checkpoint_roots.count(root) == 0 ? by_root[root] : rest).push_back(name);
  }
  // The names stay candidates of the per-layer pattern below too: the subtree pattern is
  // refused where its engine reads it elsewhere (a dotted tail "layers.0..." that SGLang's
  // mapper era matches inside model.layers.0..., which "re:^layers\." does not).
  for (auto& [root, group] : by_root) {
    rest.insert(rest.end(), group.begin(), group.end());
    if (group.size() >= 3) {
      out.push_back({"re:^" + escape_regex(root) + "\\.", std::move(group), true});
    }
  }
  // The same module of every numbered layer: the path after the last layer index, with its last
  // components as alternatives.
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> by_stem;
  for (const std::string& name : rest) {
    const std::vector<std::string> parts = components(name);
    size_t index = parts.size();
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      if (all_digits(parts[i])) {
        index = i;
      }
    }
    if (index == parts.size() || index + 2 >= parts.size()) {
      continue; // no layer index, or nothing between it and the last component
    }
    std::string stem;
    for (size_t i = index + 1; i + 1 < parts.size(); ++i) {
      stem += escape_regex(parts[i]) + "\\.";
    }
    auto& [group, lasts] = by_stem[stem];
    group.push_back(name);
    lasts.push_back(parts.back());
  }
  for (auto& [stem, entry] : by_stem) {
    auto& [group, lasts] = entry;
    if (group.size() >= 3) {
      out.push_back({"re:.*" + stem + alternation(lasts) + "$", std::move(group)});
    }
  }
  return out;
}

} // namespace qpatch::diagnose::detail
