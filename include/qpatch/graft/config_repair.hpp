// SPDX-License-Identifier: Apache-2.0
// The config keys a graft takes back from DONOR's config.json, edited in DIR's text so every
// other byte stays: the head declaration an exporter dropped with the head
// (mtp_num_hidden_layers, num_nextn_predict_layers), and the per-layer lists it cut short with
// the draft layers (layer_types, partial_rotary_factors, swiglu_limits: Step-3.7 NVFP4 lost
// layers 45-47 and three such lists, eugr #268).
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/graft/selection.hpp>
#include <qpatch/quant/config_files.hpp>

#include <string>
#include <vector>

namespace qpatch::graft {

struct ConfigRepair {
  std::string declared_key; // head declaration added to config.json, or ""
  uint64_t declared_value = 0;
  std::vector<std::string> lists; // "layer_types: 45 -> 48 items", one per list put back
  bool empty() const { return declared_key.empty() && lists.empty(); }
  // What the report and the plan's "added" list show, declaration first.
  std::vector<std::string> describe() const;
};

// Edit DIR's config.json (configs.files.front()) with what DONOR's holds and DIR's lost; return
// what was repaired. A list is put back only when DIR's is a proper prefix of DONOR's, item for
// item: any other difference is the quantizer's business and stays.
Result<ConfigRepair>
repair_config(quant::ConfigSet& configs, const Checkpoint& dir, const Checkpoint& donor);

} // namespace qpatch::graft
