// SPDX-License-Identifier: Apache-2.0
#include "support/golden.hpp"

#include "run.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"

#include <qpatch/util/names.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace qpatch::test {

using util::replace_all;
namespace fs = std::filesystem;

namespace {

const fs::path k_golden_dir = fs::path(QPATCH_TESTDATA_DIR) / "golden";

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> read_args(const fs::path& file) {
  std::vector<std::string> args;
  std::istringstream in(read_bytes(file));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      args.push_back(line);
    }
  }
  return args;
}

// Every regular file under `root`, relative path -> bytes, skipping the sparse shards.
std::map<std::string, std::string> small_files(const fs::path& root) {
  std::map<std::string, std::string> out;
  if (!fs::exists(root)) {
    return out;
  }
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    // .qpatch/ (lock, manifest) is qpatch's own state, pinned by tests/cli/nothing_lost_test.cpp.
    const bool state = fs::relative(entry.path(), root).string().starts_with(".qpatch");
    if (entry.is_regular_file() && entry.path().extension() != ".safetensors" && !state) {
      out[fs::relative(entry.path(), root).string()] = read_bytes(entry.path());
    }
  }
  return out;
}

} // namespace

void write_sample(const fs::path& dir) {
  synth::CheckpointSpec spec = synth::qwen35_27b_w4a16_mtp();
  spec.config_json =
      read_bytes(fs::path(QPATCH_TESTDATA_DIR) / "sample" / "qwen3.5-27b-w4a16-mtp.config.json");
  ASSERT_TRUE(synth::write_checkpoint(dir, spec).ok());
}

std::vector<std::string> golden_case_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(k_golden_dir)) {
    if (entry.is_directory()) {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

void run_golden_case(const std::string& name) {
  const fs::path case_dir = k_golden_dir / name;
  std::string work = (fs::temp_directory_path() / "qpatch-golden-XXXXXX").string();
  ASSERT_NE(::mkdtemp(work.data()), nullptr);
  const fs::path dir = fs::path(work) / "in";
  const fs::path sample = fs::path(work) / "sample";
  if (fs::exists(case_dir / "in")) {
    fs::copy(case_dir / "in", dir, fs::copy_options::recursive);
  }
  std::vector<std::string> args = read_args(case_dir / "args");
  bool uses_sample = false;
  for (std::string& arg : args) {
    uses_sample = uses_sample || arg.find("{sample}") != std::string::npos;
    arg = replace_all(replace_all(arg, "{dir}", dir.string()), "{sample}", sample.string());
  }
  if (uses_sample) {
    write_sample(sample);
  }
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run(args, out, err, cli::Terminal{});
  const auto normalize = [&](const std::string& text) {
    return replace_all(replace_all(text, dir.string(), "{dir}"), sample.string(), "{sample}");
  };
  const std::string got_out = normalize(out.str());
  const std::string got_err = normalize(err.str());
  const std::string got_code = std::to_string(code) + "\n";
  const fs::path written = uses_sample ? sample : dir;
  const fs::path expected = case_dir / "expected";
  if (const char* update = std::getenv("QPATCH_UPDATE_GOLDEN"); update && *update == '1') {
    fs::remove_all(expected);
    write_text(expected / "stdout", got_out);
    write_text(expected / "stderr", got_err);
    write_text(expected / "exit_code", got_code);
    if (fs::exists(case_dir / "expect_files")) {
      for (const auto& [file, bytes] : small_files(written)) {
        write_text(expected / "files" / file, bytes);
      }
    }
  } else {
    EXPECT_EQ(got_out, read_bytes(expected / "stdout"));
    EXPECT_EQ(got_err, read_bytes(expected / "stderr"));
    EXPECT_EQ(got_code, read_bytes(expected / "exit_code"));
    if (fs::exists(expected / "files")) {
      EXPECT_EQ(small_files(written), small_files(expected / "files"));
    }
  }
  std::error_code ec;
  fs::remove_all(work, ec);
}

} // namespace qpatch::test
