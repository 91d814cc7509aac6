// SPDX-License-Identifier: Apache-2.0
#include "support/temp_dir.hpp"

#include <qpatch/checkpoint/index_file.hpp>

#include <gtest/gtest.h>

#include <fstream>

namespace qpatch::checkpoint {
namespace {

constexpr const char* k_path = "model.safetensors.index.json";

std::string error_of(const std::string& text) {
  const auto index = parse_index(text, k_path);
  return index.ok() ? "accepted" : index.error().to_string();
}

TEST(IndexFile, KeepsEntriesAndShardsInFileOrder) {
  const auto index = parse_index(R"({"metadata":{"total_size":0},"weight_map":{
      "b.weight":"model-00002-of-00002.safetensors",
      "a.weight":"model-00001-of-00002.safetensors",
      "c.weight":"model-00002-of-00002.safetensors"}})",
                                 k_path);
  ASSERT_TRUE(index.ok()) << index.error().to_string();
  ASSERT_EQ(index->entries.size(), 3U);
  EXPECT_EQ(index->entries[0].tensor, "b.weight");
  EXPECT_EQ(index->entries[1].shard, 1U);
  EXPECT_EQ(index->find("c.weight"), 2U);
  EXPECT_EQ(index->find("d.weight"), std::nullopt);
  EXPECT_EQ(index->shards,
            (std::vector<std::string>{"model-00002-of-00002.safetensors",
                                      "model-00001-of-00002.safetensors"}));
}

// Runs of one shard, as transformers writes them; a name that extends the shard before it is
// another shard.
TEST(IndexFile, RunsOfOneShardKeepTheirShard) {
  const auto index = parse_index(R"({"weight_map": {
    "a": "model-00001-of-00002.safetensors",
    "b": "model-00001-of-00002.safetensors",
    "c": "model-00002-of-00002.safetensors",
    "d": "model-00002-of-00002.safetensors",
    "e": "model-00001-of-00002.safetensors",
    "f": "x-model-00001-of-00002.safetensors",
    "g": "model-00001-of-00002.safetensors"}})",
                                 k_path);
  ASSERT_TRUE(index.ok()) << index.error().to_string();
  std::vector<uint32_t> shards;
  for (const auto& entry : index->entries) {
    shards.push_back(entry.shard);
  }
  EXPECT_EQ(shards, (std::vector<uint32_t>{0, 0, 1, 1, 0, 2, 0}));
  EXPECT_EQ(index->shards.size(), 3U);
}

// A mapped index gives its pages back every 4 MiB as the scan passes them; the names that point
// into them must still read right (they refault from the page cache). 12 MB of index, with the
// duplicate key at the very end, after every page before it was released.
class IndexFileReadTest : public test::TempDirTest {};

TEST_F(IndexFileReadTest, NamesReadRightAfterTheScanGaveTheirPagesBack) {
  std::string text = "{\"weight_map\": {\n";
  const auto name = [](int i) {
    return "model.layers." + std::to_string(i) + ".mlp.experts.0.down_proj.weight_packed";
  };
  for (int i = 0; i < 120'000; ++i) {
    text += "    \"" + name(i) + "\": \"model-0000" + std::to_string(1 + i % 4) +
            "-of-00004.safetensors\",\n";
  }
  text += "    \"last.weight\": \"model-00004-of-00004.safetensors\"\n  }\n}\n";
  // Trailing spaces leave the last page the slack the mapped path needs (simdjson's padding).
  const auto write_mapped = [&](std::string json) {
    json.append((4096 + 100 - json.size() % 4096) % 4096, ' ');
    write(k_path, json);
  };
  write_mapped(text);
  const auto index = read_index(dir() / k_path, k_path);
  ASSERT_TRUE(index.ok()) << index.error().to_string();
  ASSERT_EQ(index->entries.size(), 120'001U);
  EXPECT_EQ(index->entries[0].tensor, name(0));
  EXPECT_EQ(index->entries[77'777].tensor, name(77'777));
  EXPECT_EQ(index->shards[index->entries[77'777].shard], "model-00002-of-00004.safetensors");
  EXPECT_EQ(index->find(name(3)), 3U);
  EXPECT_EQ(index->find("last.weight"), 120'000U);
  const std::string duplicate = "\"" + name(5) + "\": \"model-00001-of-00004.safetensors\"";
  text.insert(text.rfind('\n', text.size() - 5), ",\n    " + duplicate);
  write_mapped(text);
  const auto rejected = read_index(dir() / k_path, k_path);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().to_string(),
            "model.safetensors.index.json: at /weight_map: key \"" + name(5) +
                "\" appears twice in one object");
  // UTF-8 is checked a stretch at a time behind the scan: a bad byte in a stretch checked
  // mid-scan, in the last stretch, and a NUL byte all still reach the general path's error.
  for (const std::string& spoiled : {name(20'000), std::string("last.weight")}) {
    std::string bad = text;
    const size_t at = bad.find("\"" + spoiled + "\"") + 3;
    bad[at] = '\xFF';
    write_mapped(bad);
    const auto refused = read_index(dir() / k_path, k_path);
    ASSERT_FALSE(refused.ok()) << spoiled;
    EXPECT_EQ(refused.error().to_string(),
              "model.safetensors.index.json: byte " + std::to_string(at) +
                  ": syntax error while parsing object key - invalid string: ill-formed UTF-8 "
                  "byte; last read: '\"" +
                  spoiled.substr(0, 2) + "\xFF'; expected string literal")
        << spoiled;
    bad[at] = '\0';
    write_mapped(bad);
    const auto nul = read_index(dir() / k_path, k_path);
    ASSERT_FALSE(nul.ok()) << spoiled;
    EXPECT_EQ(nul.error().to_string(),
              "model.safetensors.index.json: byte " + std::to_string(at) +
                  ": NUL byte in JSON text")
        << spoiled;
  }
}

TEST(IndexFile, MetadataMayBeMissing) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"x.safetensors"}})"), "accepted");
}

TEST(IndexFile, RejectsAbsolutePath) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"/etc/x.safetensors"}})"),
            "model.safetensors.index.json: at /weight_map/a: file name \"/etc/x.safetensors\" "
            "is an absolute path");
}

TEST(IndexFile, RejectsParentDirectory) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"..x.safetensors"}})"),
            "model.safetensors.index.json: at /weight_map/a: file name \"..x.safetensors\" "
            "contains \"..\"");
}

// "." was reported as containing ".." (issue 25): it names the directory itself.
TEST(IndexFile, RejectsADirectoryName) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"."}})"),
            "model.safetensors.index.json: at /weight_map/a: file name \".\" names a directory, "
            "not a file");
  EXPECT_EQ(error_of(R"({"weight_map":{"a":".."}})"),
            "model.safetensors.index.json: at /weight_map/a: file name \"..\" names a "
            "directory, not a file");
}

TEST(IndexFile, RejectsSubdirectory) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"sub/x.safetensors"}})"),
            "model.safetensors.index.json: at /weight_map/a: file name \"sub/x.safetensors\" has "
            "a path separator (shards must sit beside the index)");
}

TEST(IndexFile, RejectsUrl) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"https://x.safetensors"}})"),
            "model.safetensors.index.json: at /weight_map/a: file name "
            "\"https://x.safetensors\" is a URL");
}

TEST(IndexFile, RejectsControlCharacter) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"x\u0001.safetensors"}})"),
            "model.safetensors.index.json: at /weight_map/a: file name \"x\x01.safetensors\" "
            "has a control character");
}

TEST(IndexFile, RejectsOtherSuffix) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"pytorch_model.bin"}})"),
            "model.safetensors.index.json: at /weight_map/a: file name \"pytorch_model.bin\" "
            "does not end in .safetensors");
}

TEST(IndexFile, RejectsDuplicateTensor) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":"x.safetensors","a":"y.safetensors"}})"),
            "model.safetensors.index.json: at /weight_map: key \"a\" appears twice in one "
            "object");
}

TEST(IndexFile, RejectsNonStringValue) {
  EXPECT_EQ(error_of(R"({"weight_map":{"a":3}})"),
            "model.safetensors.index.json: at /weight_map/a: value is a number, expected a file "
            "name");
}

TEST(IndexFile, RejectsMissingWeightMap) {
  EXPECT_EQ(error_of(R"({"metadata":{}})"),
            "model.safetensors.index.json: no \"weight_map\" object");
}

TEST(IndexFile, RejectsMetadataArray) {
  EXPECT_EQ(error_of(R"({"metadata":[],"weight_map":{}})"),
            "model.safetensors.index.json: at /metadata: metadata is an array, expected an "
            "object");
}

TEST(IndexFile, SyntaxErrorNamesTheByte) {
  EXPECT_EQ(error_of("{\"weight_map\": {\"a\": \"x.safetensors\",}}"),
            "model.safetensors.index.json: byte 37: syntax error while parsing object key - "
            "unexpected '}'; expected string literal");
}

} // namespace
} // namespace qpatch::checkpoint
