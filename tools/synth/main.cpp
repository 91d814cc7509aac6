// SPDX-License-Identifier: Apache-2.0
// qpatch-synth LAYOUT DIR [--config FILE]: write a synthetic checkpoint with real shapes and
// sparse data. Layouts: qwen3.5-27b-w4a16-mtp (the bundled sample), kimi-k2-w4a16 (benchmarks).
// Without --config each layout writes its own config.json (synth/layout_configs.hpp).
#include "synth/synthetic_checkpoint.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

namespace {

constexpr const char* k_usage =
    "usage: qpatch-synth LAYOUT DIR [--config FILE]\n"
    "layouts: qwen3.5-27b-w4a16-mtp, qwen3.6-27b-w4a16-packed-mtp, kimi-k2-w4a16\n";

} // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << k_usage; // asked for: a result, on stdout, exit 0
    return 0;
  }
  if (argc != 3 && argc != 5) {
    std::cerr << k_usage;
    return 2;
  }
  const std::string layout = argv[1];
  qpatch::synth::CheckpointSpec spec;
  if (layout == "qwen3.5-27b-w4a16-mtp") {
    spec = qpatch::synth::qwen35_27b_w4a16_mtp();
  } else if (layout == "qwen3.6-27b-w4a16-packed-mtp") {
    spec = qpatch::synth::qwen35_27b_w4a16_mtp(true);
  } else if (layout == "kimi-k2-w4a16") {
    spec = qpatch::synth::kimi_k2_w4a16();
  } else {
    std::cerr << "qpatch-synth: error: unknown layout '" << layout << "'\n" << k_usage;
    return 2;
  }
  if (argc == 5) {
    std::ifstream in(argv[4], std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      std::cerr << "qpatch-synth: cannot read " << argv[4] << "\n";
      return 2;
    }
    spec.config_json = text.str();
  }
  if (const auto status = qpatch::synth::write_checkpoint(argv[2], spec); !status) {
    std::cerr << "qpatch-synth: " << status.error().to_string() << "\n";
    return 1;
  }
  return 0;
}
