// SPDX-License-Identifier: Apache-2.0
// What the quantization config makes each engine build for every module of a checkpoint: the
// column `qpatch inspect` prints beside how the module is stored, so a mismatch is visible in the
// table and not only in a finding. The same judges as `qpatch` and `explain`; values only.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>

#include <string_view>
#include <vector>

namespace qpatch::diagnose {

enum class Built : uint8_t {
  not_a_layer, // a norm or a parameter, or a layer this engine never builds (transformers' MTP)
  dense,
  quantized,
  load_error, // the engine raises while building the layer
};
// "—", "dense", "quant", "error": short enough for an 80-column table.
std::string_view to_string(Built built);

struct BuiltAs {
  Built built = Built::not_a_layer;
  bool matches_disk = true; // what the engine builds is what is stored
};

struct ModuleVerdicts {
  std::vector<engine::Engine> engines;  // the judged engines, one column each; empty: none judged
  std::vector<std::vector<BuiltAs>> of; // of[module][engine column]
};

// Judge every module of `modules` under each engine of `engines` whose rules are modelled for
// the checkpoint's method. A checkpoint without a quantization config is built dense by all; a
// method qpatch does not judge gives no columns. Fails only on a config that cannot be read as
// its method.
Result<ModuleVerdicts> module_verdicts(const checkpoint::Inventory& inventory,
                                       const checkpoint::ModuleList& modules,
                                       const quant::ConfigSet& configs,
                                       engine::EngineSet engines = engine::EngineSet::all());

} // namespace qpatch::diagnose
