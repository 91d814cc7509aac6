// SPDX-License-Identifier: Apache-2.0
// What transformers does with each mismatch.
#include "engine/registry.hpp"

#include <qpatch/engine/effects.hpp>

namespace qpatch::engine {

// transformers reports unexpected and missing keys as a warning and initialises the layer anew.
std::string transformers_effect(Mismatch mismatch, const MismatchContext& /*context*/) {
  switch (mismatch) {
  case Mismatch::dense_built_quantized:
  case Mismatch::quantized_built_dense:
  case Mismatch::quantized_without_config:
    return "loads with \"Some weights ... were not used\" and initialises the layer at random";
  default:
    return "";
  }
}

} // namespace qpatch::engine
