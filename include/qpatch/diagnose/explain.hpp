// SPDX-License-Identifier: Apache-2.0
// `qpatch explain`: for one module, how it is stored, the layer the engine builds it into, every
// rule of the config that bears on it in the order the engine tries them, and the verdict: the
// question users ask when a load fails.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/engine/versions.hpp>
#include <qpatch/quant/config_files.hpp>

#include <string>
#include <utility>
#include <vector>

namespace qpatch::diagnose {

struct Explanation {
  std::vector<std::pair<std::string, std::string>> lines; // (label, text)
  bool consistent = true;                                 // the verdict matches the disk
};

// Explain `name`: a checkpoint module name, or the name of a layer vLLM builds (a fused name).
// For compressed-tensors every engine of `engines` is traced in turn; the other methods model
// vLLM's rules only.
Result<Explanation> explain(const checkpoint::Inventory& inventory,
                            const checkpoint::ModuleList& modules,
                            const quant::ConfigSet& configs,
                            const std::string& name,
                            engine::EngineSet engines = engine::EngineSet::all(),
                            const engine::VersionPins& pins = {});

} // namespace qpatch::diagnose
