// SPDX-License-Identifier: Apache-2.0
// vLLM's history as qpatch models it: every merged change that moves a verdict qpatch gives,
// read in the vLLM repository (upstream main; `git log --grep='(#N)'` finds each merge commit,
// `git show <commit>` the change). The rules that depend on a change ask
// `version.has("#N")`; docs/research/vllm-versions.md has the before/after of each row.
#include <qpatch/engine/versions.hpp>

namespace qpatch::engine {

namespace {

// Merged up to 2026-06-15.
std::vector<Change> changes_merged_to_06_15() {
  return {
      {"#37291",
       "e8b055a5a",
       "2026-03-30",
       "0.18",
       "compressed_tensors.py get_quant_method: a ParallelLMHead a target names is quantized "
       "(before: never)",
       "compressed-tensors",
       ""},
      {"#38832",
       "771913e4a",
       "2026-04-03",
       "0.19",
       "qwen3_5_mtp.py: mtp.fc built without a quant config when the method is modelopt_fp4",
       "modelopt",
       "Qwen3_5"},
      {"#41965",
       "c1819ca28",
       "2026-05-07",
       "0.21",
       "compressed_tensors.py get_scheme: a Linear no target matches is dense (before: "
       "ValueError \"Unable to find matching target\")",
       "compressed-tensors",
       ""},
      {"#38288",
       "fa2a33b89",
       "2026-05-15",
       "0.22",
       "auto_gptq.py AutoGPTQConfig: every gptq config goes through it, and bits other than 4/8 "
       "or sym false raise at start-up (before: GPTQConfig served them)",
       "gptq",
       ""},
      {"#42566",
       "e203006a8",
       "2026-05-22",
       "0.22",
       "modelopt.py ModelOptMixedPrecisionConfig.get_quant_method: a W4A16_NVFP4 quantized_layers "
       "entry builds the layer quantized (before: dense, as any algo but FP8 and NVFP4)",
       "modelopt",
       ""},
      {"#42124",
       "6f5b53324",
       "2026-05-26",
       "0.22",
       "qwen3_5.py, qwen3_5_mtp.py: Qwen3.5's lm_head (the target's and the draft's) is built "
       "with the quant config (before: always dense)",
       "",
       "Qwen3_5"},
      // The same PR: ModelOpt gives a ParallelLMHead a quant method (modelopt.py
      // get_quant_method), for every architecture.
      {"#42124",
       "6f5b53324",
       "2026-05-26",
       "0.22",
       "modelopt.py get_quant_method: a ParallelLMHead is quantized unless excluded (before: "
       "always dense)",
       "modelopt",
       ""},
      {"#43981",
       "a3195fab7",
       "2026-06-15",
       "0.24",
       "quant_utils.py is_layer_skipped: a fused layer's own name in the skip list skips it "
       "(before: only its shards' names)",
       "fp8 modelopt awq",
       ""},
  };
}

// Merged from 2026-06-17 on.
std::vector<Change> changes_merged_from_06_17() {
  return {
      {"#40601",
       "bcb518ad7",
       "2026-06-17",
       "0.24",
       "inc/inc.py get_quant_method: the fused-module step runs only when a shard name is "
       "configured explicitly (before: for every layer a packed key occurs in)",
       "auto-round",
       ""},
      {"#46316",
       "e45b27992",
       "2026-06-25",
       "0.24",
       "qwen3_next_mtp.py: mtp.fc built without a quant config when the method is modelopt_fp4",
       "modelopt",
       "Qwen3Next"},
      {"#46756",
       "debec6440",
       "2026-06-29",
       "0.24",
       "modelopt.py ModelOptMixedPrecisionConfig.get_quant_method: an MXFP8 quantized_layers "
       "entry builds the layer quantized (before: dense)",
       "modelopt",
       ""},
      {"#46757",
       "02bf9c790",
       "2026-07-16",
       "0.26",
       "quark/utils.py should_ignore_layer: an experts layer is excluded when an entry equals it "
       "or names one of its children (before: only an entry matching its own name)",
       "quark",
       ""},
      {"#48816",
       "c8db00b16",
       "2026-07-23",
       "0.26",
       "qwen3_5_mtp.py: a \"-:\" dynamic key containing \"mtp\" builds the MTP decoder layers "
       "without a quant config",
       "gptq auto-round",
       "Qwen3_5"},
      {"#48589",
       "948107acf",
       "2026-07-28",
       "0.27",
       "inc/config_parser.py _resolve_raw: an extra_config key K also applies to a layer whose "
       "name ends with \".K\"",
       "auto-round",
       ""},
      {"#49483",
       "8a7b3c299",
       "2026-07-28",
       "0.27",
       "compressed_tensors/utils.py find_matched_target: name, then fused, then class (before: "
       "name, class, fused)",
       "compressed-tensors",
       ""},
      {"#51249",
       "5fba75aef",
       "2026-08-06",
       "0.27",
       "kimi_k3/nvidia/model.py KimiLinearModel.packed_modules_mapping: fused_qkv_a_proj = "
       "[q_a_proj, kv_a_proj_with_mqa] (before: judged by its fused name)",
       "",
       "KimiK3ForConditionalGeneration"},
      {"#50355",
       "febea17f6",
       "2026-08-06",
       "0.27",
       "qwen3_5.py: the text-only classes map model.language_model. to model. for the quant "
       "config (before: entries stayed unmapped while layers are model.layers.N)",
       "",
       "Qwen3_5ForCausalLM Qwen3_5MoeForCausalLM"},
  };
}

History make_vllm_history() {
  History h;
  h.name = "vllm";
  h.display_name = "vLLM";
  h.column = "vllm";
  h.methods = "compressed-tensors gptq auto-round awq fp8 modelopt bitsandbytes quark";
  h.rules = "vllm main 017e9f4 (2026-08-17)";
  // bitsandbytes left vLLM's tree in #43529 (073c510c9); main loads it only with the
  // vllm-bnb-plugin package installed, whose rules (v0.0.2, 85de847) are the ones judged.
  h.method_rules = {
      {"bitsandbytes", "vllm main 017e9f4 (2026-08-17) with vllm-bnb-plugin 85de847"}};
  h.engine = Engine::vllm;
  // Qwen3.5 landed on 2026-02-09 (#34110, 9562912ce), and its naming changed five times in the
  // next three weeks (#34313, #34492 and its revert #34683, #34723, #34697, #35581; no release is
  // known to ship any of those days): qpatch models main from 2026-02-28 (#35581, 63d7972f1),
  // when the Qwen3.5 naming took the form it keeps to 017e9f4.
  h.first = "2026-02-28";
  h.newest_commit = "017e9f4";
  h.newest_date = "2026-08-17";
  // Architectures vLLM registered later than `first` (models/registry.py).
  h.support = {
      // #50210: the text-only Qwen3.5 classes.
      {"Qwen3_5ForCausalLM Qwen3_5MoeForCausalLM", "2026-07-29"},
      // DeepSeek-V4 landed with #40860 (4d51588e2, 2026-04-26), but until #44821 (4673ca1d7,
      // 2026-06-10) its draft built e_proj and h_proj with prefix "", which no ignored_layers
      // entry reaches; that span is not modelled.
      {"DeepseekV4ForCausalLM", "2026-06-10"},
      // Kimi-K3 registered with #50000 (aeeb36b1f, 2026-07-30); its quant config got the packed
      // mapping and the model's mapper with #50500 (d87d2ca74, 2026-07-31).
      {"KimiK3ForConditionalGeneration", "2026-07-31"}};
  // bitsandbytes: the rules modelled are vllm-bnb-plugin's (85de847), which vLLM loads the
  // method through since #43529 (073c510c9, 2026-08-09); the in-tree bitsandbytes.py before it
  // is not modelled, so earlier days are judged as of then.
  h.method_support = {{"bitsandbytes", "2026-08-09"}};
  // Only the changes whose rules qpatch models (the rule cites the change), by merge date; the
  // others of the window are listed in docs/research/vllm-versions.md with why they are left out.
  h.changes = joined_changes({changes_merged_to_06_15, changes_merged_from_06_17});
  // Where each release was cut from main: the last main commit the day before the release
  // (vLLM tags on a release branch, not on main); dates from release announcements, so each is
  // inferred but 0.28's tag (2cf0a6915ce5, after 017e9f4). docs/research/vllm-versions.md.
  h.releases = {
      {"0.16", "2026-03-02", "96fc09503a2d", true},
      {"0.17", "2026-03-14", "458c1a4b2d21", true},
      {"0.18", "2026-03-31", "31a719bcd37a", true},
      {"0.19", "2026-04-06", "00d7b497b336", true},
      {"0.20", "2026-04-28", "e68fa1b90a7b", true},
      {"0.21", "2026-05-13", "ca7e4546da4c", true},
      {"0.22", "2026-05-28", "325a1ec4fbc0", true},
      {"0.23", "2026-06-12", "1a369783e9a0", true},
      {"0.24", "2026-06-29", "75698e60b3b0", true},
      {"0.25", "2026-07-10", "ed908cf0a08a", true},
      {"0.26", "2026-07-24", "213f681f8117", true},
      {"0.27", "2026-08-06", "d35eb6c44071", true},
      {"0.28", "2026-08-26", "2cf0a6915ce5", false},
      {"0.29", "2026-09-08", "", true},
      {"0.30", "2026-09-23", "", true},
  };
  return h;
}

} // namespace

const History& vllm_history() {
  static const History h = make_vllm_history();
  return h;
}

} // namespace qpatch::engine
