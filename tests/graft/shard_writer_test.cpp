// SPDX-License-Identifier: Apache-2.0
// The shard writer on its own: tensors that sit back to back in their source are copied as one
// range (a rewritten multi-GB shard is a few ranges, not thousands of copies), the bytes land
// exactly where the header says, and verification catches one changed byte on either side.
#include "support/temp_dir.hpp"

#include <qpatch/graft/shard_writer.hpp>
#include <qpatch/util/file_descriptor.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

namespace qpatch::test {
namespace {

class ShardWriterTest : public TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    // A 10-byte and a 6-byte tensor back to back, then a 4-byte one further on.
    write("source.bin", std::string("AAAAAAAAAA") + "BBBBBB" + std::string(84, '.') + "CCCC");
    layout.file = "out.safetensors";
    layout.tensors = {tensor("a", {10}, 0, 10), tensor("b", {6}, 10, 6), tensor("c", {4}, 100, 4)};
  }
  static graft::TensorCopy
  tensor(const std::string& name, safetensors::Shape shape, uint64_t offset, uint64_t size) {
    graft::TensorCopy copy;
    copy.name = name;
    copy.dtype = safetensors::Dtype::U8;
    copy.shape = std::move(shape);
    copy.source_offset = offset;
    copy.size = size;
    return copy;
  }
  // Write the layout into out.safetensors; return the progress calls as "done/total" words.
  std::string write_out() {
    const util::FileDescriptor source(::open((dir() / "source.bin").c_str(), O_RDONLY));
    const util::FileDescriptor out(
        ::open((dir() / "out.safetensors").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644));
    std::string calls;
    auto stats = graft::write_shard(
        out.get(), layout, {source.get()}, "DIR/out", [&](uint64_t d, uint64_t t) {
          calls += std::to_string(d) + "/" + std::to_string(t) + " ";
        });
    EXPECT_TRUE(stats.ok()) << (stats ? "" : stats.error().to_string());
    return calls;
  }
  std::string verify() {
    const util::FileDescriptor source(::open((dir() / "source.bin").c_str(), O_RDONLY));
    const auto status = graft::verify_shard(
        dir() / "out.safetensors", "DIR/out", layout, {source.get()}, {"DONOR/source.bin"});
    return status ? "ok" : status.error().to_string();
  }
  void overwrite(const std::string& name, uint64_t offset, char byte) {
    std::fstream file(dir() / name, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(offset));
    file.put(byte);
  }
  graft::ShardLayout layout;
};

TEST_F(ShardWriterTest, TensorsBackToBackInTheSourceAreCopiedAsOneRange) {
  EXPECT_EQ(write_out(), "16/20 20/20 ");
  const std::string header = graft::encode_header(layout);
  EXPECT_EQ(read_bytes(dir() / "out.safetensors"), header + "AAAAAAAAAABBBBBBCCCC");
  EXPECT_EQ(header.substr(8),
            "{\"a\":{\"dtype\":\"U8\",\"shape\":[10],\"data_offsets\":[0,10]},"
            "\"b\":{\"dtype\":\"U8\",\"shape\":[6],\"data_offsets\":[10,16]},"
            "\"c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[16,20]}}     ");
  EXPECT_EQ(verify(), "ok");
}

TEST_F(ShardWriterTest, VerificationNamesTheTensorWhoseWrittenByteChanged) {
  write_out();
  overwrite("out.safetensors", graft::encode_header(layout).size() + 12, 'x');
  EXPECT_EQ(verify(),
            "DIR/out: tensor 'b': the written bytes differ from the bytes in DONOR/source.bin");
}

TEST_F(ShardWriterTest, VerificationNamesTheTensorWhoseSourceChangedMeanwhile) {
  write_out();
  overwrite("source.bin", 101, 'x');
  EXPECT_EQ(verify(),
            "DIR/out: tensor 'c': the written bytes differ from the bytes in DONOR/source.bin");
}

} // namespace
} // namespace qpatch::test
