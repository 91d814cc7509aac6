// SPDX-License-Identifier: Apache-2.0
// The vocabulary every method's judge shares: a layer with its on-disk storage, the grouping of
// per-layer problems into findings, and the helpers that word them. Private to src/diagnose/.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/engine/layers.hpp>
#include <qpatch/engine/vllm_compressed_tensors.hpp>

#include <set>
#include <string>
#include <vector>

namespace qpatch::diagnose::detail {

inline constexpr const char* k_vllm_rules = "vllm main 017e9f4 (2026-08-17)";

enum class Disk { dense, quantized, mixed, inconsistent };

struct LayerView {
  const engine::Layer* layer = nullptr;
  Disk disk = Disk::dense;
  std::string stored; // "BF16" for dense, the format name for quantized
  size_t order = 0;   // checkpoint order of its first module
};

// One problem of one layer, before grouping.
struct LayerProblem {
  FindingKind kind{};
  std::string key; // what the grouped line says after the count
  std::vector<std::string> names;
  size_t order = 0;
};

std::vector<LayerView> layer_views(const std::vector<engine::Layer>& layers,
                                   const std::vector<checkpoint::Module>& modules,
                                   const checkpoint::Inventory& inventory,
                                   const DiagnoseOptions& options);
bool consistent(const LayerView& view, const engine::Decision& decision);
std::vector<std::string> ignore_names(const engine::Layer& layer,
                                      const std::vector<checkpoint::Module>& modules);
std::string common_label(const std::vector<std::string>& names);
std::string quoted(const std::string& text);
void add_grouped(std::vector<LayerProblem>& problems,
                 std::vector<Finding>& findings,
                 const std::set<FindingKind>& fixed_kinds);

// Judge a GPTQ config (gptq_judge.cpp).
Status judge_gptq(const checkpoint::Inventory& inventory,
                  const std::vector<checkpoint::Module>& modules,
                  const quant::ConfigSet& configs,
                  const quant::ConfigFile& active,
                  const DiagnoseOptions& options,
                  Diagnosis& diagnosis);

// Judge an AWQ or FP8 config, one skip list (skip_list_judge.cpp).
Status judge_skip_list(const checkpoint::Inventory& inventory,
                       const std::vector<checkpoint::Module>& modules,
                       const quant::ConfigSet& configs,
                       const quant::ConfigFile& active,
                       const DiagnoseOptions& options,
                       Diagnosis& diagnosis);

} // namespace qpatch::diagnose::detail
