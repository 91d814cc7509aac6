// SPDX-License-Identifier: Apache-2.0
// transformers' dialect: compressed-tensors through the library's own matching
// (vllm-project/compressed-tensors ac8e2ba8, quantization/lifecycle/apply.py and
// utils/match.py, read in the fetched repository).
#include "engine/registry.hpp"

#include <qpatch/engine/dialect.hpp>

namespace qpatch::engine {

Dialect transformers_dialect(const EngineVersion& /*version*/, const ModelInfo& /*model*/) {
  Dialect dialect;
  dialect.engine_name = "transformers";
  // apply.py apply_quantization_config calls match_named_modules(model, target_to_scheme,
  // config.ignore, warn_on_fail=True) with no `fused` mapping, so match.py match_name is
  // `target == name` or re.match; _match_class compares the MRO's class names for equality
  // ("will never match against a regex pattern"), and is_match tests ignore by name or class.
  dialect.compressed_tensors.library_matching = true;
  return dialect;
}

} // namespace qpatch::engine
