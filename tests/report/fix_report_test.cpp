// SPDX-License-Identifier: Apache-2.0
// The human report of judged checkpoints, word for word: the heading, findings with their
// consequences, changes, status and the next step; the total over several; shell quoting.
#include <qpatch/report/fix_report.hpp>

#include <gtest/gtest.h>

namespace qpatch::report {
namespace {

using diagnose::Finding;
using diagnose::FindingKind;

CheckpointOutcome flagship(Status status) {
  CheckpointOutcome outcome;
  outcome.path = "ck";
  outcome.quant_method = "compressed-tensors";
  outcome.engine_rules = "vllm main 017e9f4 (2026-08-17), sglang 2026 (#35887) and transformers";
  outcome.engines = {"vllm", "sglang", "transformers"};
  outcome.status = status;
  outcome.mtp = "2 linears BF16 in model_extra_tensors.safetensors";
  Finding finding;
  finding.kind = FindingKind::dense_quantized_by_config;
  finding.label = "mtp";
  finding.modules = {"mtp.fc", "mtp.layers.0.mlp.up_proj"};
  finding.detail = "mtp: 2 modules stored BF16 but quantized by targets [\"Linear\"]";
  finding.fixable = true;
  finding.engines = {"vllm", "sglang"};
  outcome.findings.push_back(finding);
  outcome.changes.push_back({"config.json", {"mtp.fc", "mtp.layers.0.mlp.up_proj"}, {}, ""});
  return outcome;
}

// `lines` as a run that wrote its patch renders them: what was fixable is fixed.
std::string fixed(std::string lines) {
  for (size_t at = lines.find("  fixable     "); at != std::string::npos;
       at = lines.find("  fixable     ", at)) {
    lines.replace(at, 14, "  fixed       ");
  }
  return lines;
}

// The lines flagship() renders between its heading and its changes.
const std::string k_flagship_lines =
    "  mtp head    2 linears BF16 in model_extra_tensors.safetensors\n"
    "  fixable     mtp: 2 modules stored BF16 but quantized by targets [\"Linear\"] [vllm, "
    "sglang]\n"
    "  breaks      vLLM: start-up fails once speculative decoding loads the MTP head: "
    "\"ValueError: There is no module or parameter named 'fc.weight' in ...\"; SGLang: loads, "
    "and drops the stored weights silently\n";

TEST(FixReportTest, CheckNamesTheFixAndHowToApplyIt) {
  TextOptions options;
  options.mode = Mode::check;
  EXPECT_EQ(
      render_fix_text({flagship(Status::needs_patch)}, options),
      "ck: compressed-tensors, judged for vLLM (main, 2026-08-17), SGLang and transformers\n" +
          k_flagship_lines +
          "  would patch config.json +2: mtp.fc, mtp.layers.0.mlp.up_proj\n"
          "  status      needs-patch\n"
          "  apply       qpatch ck\n");
}

TEST(FixReportTest, AFixNamesTheBackupAndTheUndo) {
  CheckpointOutcome outcome = flagship(Status::patched);
  outcome.path = "my ck";
  outcome.backups = {"config.json.bak"};
  TextOptions options;
  options.verbosity = Verbosity::verbose;
  EXPECT_EQ(
      render_fix_text({outcome}, options),
      "my ck: compressed-tensors, judged for vLLM (main, 2026-08-17), SGLang and "
      "transformers\n"
      "  rules       vllm main 017e9f4 (2026-08-17), sglang 2026 (#35887) and transformers\n" +
          fixed(k_flagship_lines) +
          "              mtp.fc\n"
          "              mtp.layers.0.mlp.up_proj\n"
          "  patched     config.json +2: mtp.fc, mtp.layers.0.mlp.up_proj\n"
          "  backup      config.json.bak\n"
          "  status      patched\n"
          "  undo        qpatch restore 'my ck'\n");
}

TEST(FixReportTest, AnUnfixableFindingPointsAtExplain) {
  CheckpointOutcome outcome;
  outcome.path = "ck";
  outcome.quant_method = "awq_marlin";
  outcome.engines = {"vllm"};
  outcome.status = Status::unfixable;
  Finding finding;
  finding.kind = FindingKind::unsupported_method;
  finding.label = "config.json";
  finding.detail = "config.json: quant_method \"awq_marlin\" is not judged";
  finding.engines = {"vllm"};
  outcome.findings.push_back(finding);
  Finding untargeted;
  untargeted.kind = FindingKind::quantized_untargeted;
  untargeted.modules = {"model.layers.0.mlp.up_proj"};
  untargeted.detail = "model.layers.0.mlp.up_proj: 1 module stored awq but no target";
  untargeted.engines = {"vllm"};
  outcome.findings.push_back(untargeted);
  outcome.notes = {"a note"};
  EXPECT_EQ(render_fix_text({outcome}, {}),
            "ck: awq_marlin, judged for vLLM (main, 2026-08-17)\n"
            "  note        a note\n"
            "  not fixable config.json: quant_method \"awq_marlin\" is not judged\n"
            "  not fixable model.layers.0.mlp.up_proj: 1 module stored awq but no target\n"
            "  breaks      vLLM: start-up fails: \"ValueError: There is no module or parameter "
            "named 'model.layers.0.mlp.up_proj.weight_scale' in ...\"\n"
            "  status      unfixable\n"
            "  why         qpatch explain ck model.layers.0.mlp.up_proj\n");
}

TEST(FixReportTest, QuietPrintsNothingAndAnErrorKeepsItsPlace) {
  TextOptions quiet;
  quiet.verbosity = Verbosity::quiet;
  EXPECT_EQ(render_fix_text({flagship(Status::needs_patch)}, quiet), "");
  CheckpointOutcome failed;
  failed.path = "bad";
  failed.status = Status::error;
  failed.error = make_error(ErrorCode::invalid_json, "config.json", 3, "", "expected a value");
  CheckpointOutcome plain;
  plain.path = "plain";
  EXPECT_EQ(render_fix_text({failed, plain}, {}),
            "bad: could not be judged (see the error)\n"
            "  status      error\n"
            "plain: not quantized\n"
            "  status      clean\n");
}

TEST(FixReportTest, TotalsCountEachStatus) {
  CheckpointOutcome clean;
  CheckpointOutcome unfixable;
  unfixable.status = Status::unfixable;
  CheckpointOutcome failed;
  failed.status = Status::error;
  const CheckpointOutcome patched = flagship(Status::patched);
  const CheckpointOutcome due = flagship(Status::needs_patch);
  EXPECT_EQ(render_total({patched, due, clean}, Mode::fix), "2 checkpoints patched, 1 clean\n");
  EXPECT_EQ(render_total({due, clean, clean}, Mode::check),
            "1 checkpoint would be patched, 2 clean\n");
  // An error holds every write back, so nothing was patched.
  EXPECT_EQ(render_total({due, unfixable, failed}, Mode::fix),
            "1 checkpoint would be patched, 1 not fixable, 1 error\n");
  // With nothing to patch the noun comes first.
  EXPECT_EQ(render_total({failed, failed}, Mode::dry_run), "2 checkpoints: 2 errors\n");
  EXPECT_EQ(render_total({clean}, Mode::check), "1 checkpoint: 1 clean\n");
}

TEST(FixReportTest, ShellCommandsQuoteWhatTheShellWouldSplit) {
  EXPECT_EQ(shell_command("qpatch", "models/Qwen3.5-27B_w4a16"), "qpatch models/Qwen3.5-27B_w4a16");
  EXPECT_EQ(shell_command("qpatch restore", "./my ck"), "qpatch restore './my ck'");
  EXPECT_EQ(shell_command("qpatch", "it's"), "qpatch 'it'\\''s'");
  EXPECT_EQ(shell_command("qpatch", ""), "qpatch ''");
}

} // namespace
} // namespace qpatch::report
