// SPDX-License-Identifier: Apache-2.0
// Headers read on worker threads reach the caller in file order, whatever the timing, and an
// exception from the caller's callback stops the workers and reaches the caller.
#include "checkpoint/header_pipeline.hpp"
#include "support/builder.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace qpatch::checkpoint {
namespace {

class HeaderPipelineTest : public test::TempDirTest {
protected:
  // 24 shards, each with one tensor named after its file; every fifth one is broken.
  std::vector<std::string> write_shards() {
    std::vector<std::string> names;
    for (int i = 0; i < 24; ++i) {
      const std::string name = "s" + std::to_string(100 + i) + ".safetensors";
      uint64_t data_size = 0;
      const std::string header =
          test::header_json({{"t" + std::to_string(i), "U8", {4}}}, data_size);
      write(name, test::shard_bytes(header, i % 5 == 4 ? data_size + 1 : data_size));
      names.push_back(name);
    }
    return names;
  }
};

TEST_F(HeaderPipelineTest, ResultsArriveInFileOrderOnEveryThreadCount) {
  const auto names = write_shards();
  for (const unsigned threads : {1U, 2U, 4U, 0U}) {
    std::vector<std::string> seen;
    read_headers_in_order(
        dir(),
        names,
        {},
        [&](size_t i, Result<safetensors::Header>& header) {
          seen.push_back(
              std::to_string(i) + ":" +
              (header ? std::string(header->tensors.at(0).name) : "error " + header.error().path));
        },
        threads);
    std::vector<std::string> expected;
    for (size_t i = 0; i < names.size(); ++i) {
      expected.push_back(std::to_string(i) + ":" +
                         (i % 5 == 4 ? "error " + names[i] : "t" + std::to_string(i)));
    }
    EXPECT_EQ(seen, expected) << threads << " threads";
  }
}

TEST_F(HeaderPipelineTest, AnExceptionFromTheCallbackStopsTheWorkers) {
  const auto names = write_shards();
  size_t calls = 0;
  EXPECT_THROW(read_headers_in_order(
                   dir(),
                   names,
                   {},
                   [&](size_t i, const Result<safetensors::Header>&) {
                     ++calls;
                     if (i == 2) {
                       throw std::runtime_error("stop");
                     }
                   },
                   2),
               std::runtime_error);
  EXPECT_EQ(calls, 3U);
}

} // namespace
} // namespace qpatch::checkpoint
