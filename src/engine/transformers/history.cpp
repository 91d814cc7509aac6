// SPDX-License-Identifier: Apache-2.0
// transformers' history as qpatch models it: one version, the compressed-tensors library's
// matching at ac8e2ba (2026-08-06) under transformers' quantizer, transformers' own AWQ, FP8, GPTQ
// and bitsandbytes quantizers, and auto-round through the auto_round library (v0.14.2, e98f1c1)
// (files of several commits, tools/transformers_diff/SOURCES: the store holds no one release with
// them all).
#include <qpatch/engine/versions.hpp>

namespace qpatch::engine {

namespace {

History make_transformers_history() {
  History h;
  h.name = "transformers";
  h.display_name = "transformers";
  h.column = "tf";
  h.methods = "compressed-tensors gptq auto-round awq fp8 modelopt bitsandbytes quark";
  h.rules = "transformers + compressed-tensors ac8e2ba";
  h.method_rules = {
      {"gptq", "transformers quantizer_gptq.py 0276854 + optimum v2.1.0 convert_model"},
      {"auto-round",
       "transformers quantizer_auto_round.py cea4241 + auto-round v0.14.2 e98f1c1 "
       "convert_hf_model"},
      {"awq", "transformers quantizer_awq.py + quantizers_utils.py 0eb492c"},
      {"fp8", "transformers quantizer_finegrained_fp8.py + quantizers_utils.py 0eb492c"},
      {"modelopt", "transformers quantizers/auto.py 6ed74f1 (no ModelOpt quantizer)"},
      {"bitsandbytes", "transformers quantizer_bnb_4bit.py d91fa5a, bitsandbytes.py f6cf875"},
      {"quark",
       "transformers quantizer_quark.py 10cc83c + amd-quark 0.12 quant_config_parser.py "
       "(fnmatch)"}};
  h.cannot_load = {{"modelopt",
                    "it has no ModelOpt quantizer (quantizers/auto.py 6ed74f1: \"Unknown "
                    "quantization type, got modelopt ... Hence, we will skip the quantization\") "
                    "and loads every quantized module as a plain nn.Linear"}};
  h.engine = Engine::transformers;
  h.first = "2026-08-06";
  h.newest_commit = "ac8e2ba";
  h.newest_date = "2026-08-06";
  // No release: the files' commits span the 4.x quantizers (quantizer_gptq.py still has
  // update_torch_dtype, renamed in v4.56) to 5.5.0.dev0 (__init__.py at 6ed74f1), and the
  // repository's history cannot be read here (tools/transformers_diff/SOURCES).
  h.judged_as = "no one release: files of several commits";
  return h;
}

} // namespace

const History& transformers_history() {
  static const History h = make_transformers_history();
  return h;
}

} // namespace qpatch::engine
