// SPDX-License-Identifier: Apache-2.0
// The index checked against the headers (safetensors.md §8.3, §8.5).
#include "support/builder.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>

#include <gtest/gtest.h>

namespace qpatch::checkpoint {
namespace {

class InventoryTest : public test::TempDirTest {
protected:
  void shard(const std::string& name, const std::vector<test::TensorDesc>& tensors) {
    uint64_t data_size = 0;
    const std::string header = test::header_json(tensors, data_size);
    write(name, test::shard_bytes(header, data_size));
  }
  // Read the checkpoint twice, with and without the name-sum shortcut: both must agree on every
  // tensor and problem, whichever path the shortcut takes.
  Inventory read_ok() {
    InventoryOptions joined;
    joined.name_sum_shortcut = false;
    auto inventory = read_inventory(dir(), "ckpt");
    auto reference = read_inventory(dir(), "ckpt", joined);
    EXPECT_TRUE(inventory.ok()) << inventory.error().to_string();
    EXPECT_TRUE(reference.ok()) << reference.error().to_string();
    if (inventory.ok() && reference.ok()) {
      EXPECT_EQ(problems(*inventory), problems(*reference));
      EXPECT_EQ(tensors(*inventory), tensors(*reference));
    }
    return inventory.take_value();
  }
  static std::vector<std::string> tensors(const Inventory& inventory) {
    std::vector<std::string> out;
    for (const Tensor& tensor : inventory.tensors) {
      out.push_back(std::string(tensor.name) + "@" + inventory.files[tensor.file].name +
                    (tensor.shadowed ? " shadowed" : ""));
    }
    return out;
  }
  static std::vector<std::string> problems(const Inventory& inventory) {
    std::vector<std::string> out;
    for (const auto& p : inventory.problems) {
      out.push_back(std::string(to_string(p.severity)) + " " + std::string(to_string(p.code)) +
                    " " + p.path + " " + p.subject + ": " + p.message);
    }
    for (const auto& e : inventory.errors) {
      out.push_back("error " + e.to_string());
    }
    return out;
  }
  void SetUp() override {
    TempDirTest::SetUp();
    write("config.json", "{}");
  }
};

using Lines = std::vector<std::string>;

TEST_F(InventoryTest, WithoutAnIndexEveryFileIsLoaded) {
  shard("b.safetensors", {{"b.weight", "BF16", {2}}});
  shard("a.safetensors", {{"a.weight", "BF16", {2}}});
  const Inventory inventory = read_ok();
  ASSERT_EQ(inventory.files.size(), 2U);
  EXPECT_EQ(inventory.files[0].name, "a.safetensors");
  EXPECT_TRUE(inventory.loaded(0));
  EXPECT_TRUE(inventory.loaded(1));
  EXPECT_EQ(problems(inventory), Lines{});
}

TEST_F(InventoryTest, UnindexedSidecarIsNeverLoaded) {
  shard("model.safetensors", {{"a.weight", "BF16", {2}}});
  shard("model_extra_tensors.safetensors",
        {{"mtp.fc.weight", "BF16", {2, 4}}, {"mtp.norm.weight", "BF16", {2}}});
  write("model.safetensors.index.json",
        R"({"metadata":{},"weight_map":{"a.weight":"model.safetensors"}})");
  const Inventory inventory = read_ok();
  EXPECT_EQ(inventory.files[1].name, "model_extra_tensors.safetensors");
  EXPECT_FALSE(inventory.loaded(1));
  EXPECT_EQ(problems(inventory),
            (Lines{"warning unindexed_file model_extra_tensors.safetensors : holds 2 tensors but "
                   "the index does not name it: vLLM and transformers never load it"}));
}

TEST_F(InventoryTest, MissingIndexedFileIsAnError) {
  shard("model-00001-of-00002.safetensors", {{"a.weight", "BF16", {2}}});
  write("model.safetensors.index.json",
        R"({"weight_map":{"a.weight":"model-00001-of-00002.safetensors",)"
        R"("b.weight":"model-00002-of-00002.safetensors"}})");
  const Inventory inventory = read_ok();
  EXPECT_TRUE(inventory.has_errors());
  EXPECT_EQ(problems(inventory),
            (Lines{"error missing_file model-00002-of-00002.safetensors : the index names this "
                   "file but it does not exist (vLLM: \"Weight files referenced in index but "
                   "missing\")"}));
}

TEST_F(InventoryTest, TensorInTwoLoadedFilesIsAnError) {
  shard("a.safetensors", {{"x.weight", "BF16", {2}}});
  shard("b.safetensors", {{"x.weight", "BF16", {2}}});
  const Inventory inventory = read_ok();
  EXPECT_TRUE(inventory.tensors[1].shadowed);
  EXPECT_EQ(problems(inventory),
            (Lines{"error duplicate_tensor b.safetensors x.weight: tensor is also in "
                   "a.safetensors: which copy an engine uses depends on the loader"}));
}

TEST_F(InventoryTest, SidecarDuplicatingIndexedTensorsIsAWarning) {
  shard("model.safetensors", {{"mtp.fc.weight", "BF16", {2}}});
  shard("mtp.safetensors", {{"mtp.fc.weight", "BF16", {2}}});
  write("model.safetensors.index.json", R"({"weight_map":{"mtp.fc.weight":"model.safetensors"}})");
  const Inventory inventory = read_ok();
  EXPECT_FALSE(inventory.has_errors());
  EXPECT_EQ(problems(inventory),
            (Lines{"warning unindexed_file mtp.safetensors : holds 1 tensors but the index does "
                   "not name it: vLLM and transformers never load it (1 of them duplicate "
                   "tensors in indexed files)"}));
}

TEST_F(InventoryTest, IndexClaimsAreCheckedAgainstHeaders) {
  shard("a.safetensors", {{"x.weight", "BF16", {2}}, {"y.weight", "BF16", {2}}});
  shard("b.safetensors", {{"z.weight", "BF16", {2}}});
  write("model.safetensors.index.json", R"({"weight_map":{"x.weight":"a.safetensors"}})");
  const Inventory inventory = read_ok();
  EXPECT_EQ(problems(inventory),
            (Lines{"warning unindexed_file b.safetensors : holds 1 tensors but the index does "
                   "not name it: vLLM and transformers never load it",
                   "info unlisted_tensor a.safetensors y.weight: 1 tensor(s) in this file are not "
                   "in the index's weight_map (vLLM loads them anyway)"}));
}

TEST_F(InventoryTest, WrongFileAndOrphanEntries) {
  shard("a.safetensors", {{"x.weight", "BF16", {2}}});
  shard("b.safetensors", {{"z.weight", "BF16", {2}}, {"w.weight", "BF16", {2}}});
  write("model.safetensors.index.json",
        R"({"weight_map":{"x.weight":"a.safetensors","z.weight":"a.safetensors",)"
        R"("w.weight":"b.safetensors","ghost.weight":"b.safetensors",)"
        R"("ghost2.weight":"b.safetensors"}})");
  const Inventory inventory = read_ok();
  EXPECT_EQ(problems(inventory),
            (Lines{"warning wrong_file model.safetensors.index.json z.weight: the index maps it "
                   "to a.safetensors but it is in b.safetensors",
                   "warning orphan_entry model.safetensors.index.json ghost.weight: 2 weight_map "
                   "entries map to b.safetensors but no file holds them"}));
}

// Each file holds as many tensors as the index maps to it, so only the names can tell: the
// name-sum shortcut must fall back to the join (read_ok also compares both paths).
TEST_F(InventoryTest, EqualCountsWithOtherNamesAreStillCaught) {
  shard("a.safetensors", {{"x.weight", "BF16", {2}}, {"y.weight", "BF16", {2}}});
  shard("b.safetensors", {{"z.weight", "BF16", {2}}});
  write("model.safetensors.index.json",
        R"({"weight_map":{"x.weight":"a.safetensors","z.weight":"a.safetensors",)"
        R"("y.weight":"b.safetensors"}})");
  EXPECT_EQ(problems(read_ok()),
            (Lines{"warning wrong_file model.safetensors.index.json z.weight: the index maps it "
                   "to a.safetensors but it is in b.safetensors",
                   "warning wrong_file model.safetensors.index.json y.weight: the index maps it "
                   "to b.safetensors but it is in a.safetensors"}));
  write("model.safetensors.index.json",
        R"({"weight_map":{"x.weight":"a.safetensors","y2.weight":"a.safetensors",)"
        R"("z.weight":"b.safetensors"}})");
  EXPECT_EQ(problems(read_ok()),
            (Lines{"warning orphan_entry model.safetensors.index.json y2.weight: 1 weight_map "
                   "entry maps to a.safetensors but no file holds it",
                   "info unlisted_tensor a.safetensors y.weight: 1 tensor(s) in this file are not "
                   "in the index's weight_map (vLLM loads them anyway)"}));
}

// Three files, no index: the shortcut cannot rule out a name in two files, so the join runs.
TEST_F(InventoryTest, WithoutAnIndexDuplicatesAcrossFilesAreFound) {
  shard("a.safetensors", {{"x.weight", "BF16", {2}}});
  shard("b.safetensors", {{"y.weight", "BF16", {2}}});
  shard("c.safetensors", {{"x.weight", "BF16", {2}}});
  EXPECT_EQ(problems(read_ok()),
            (Lines{"error duplicate_tensor c.safetensors x.weight: tensor is also in "
                   "a.safetensors: which copy an engine uses depends on the loader"}));
}

// Modules grouped a file at a time while the headers are read equal build_modules on the final
// inventory: a module across a file boundary, one split into two stretches (merged, then
// classified again), and the two cases where the inventory changes after a file was fed.
class ModulesWhileReadingTest : public InventoryTest {
protected:
  static std::vector<std::string> render(const Inventory& inventory, const ModuleList& modules) {
    std::vector<std::string> out;
    for (const Module& m : modules) {
      std::string line = std::string(m.name) + " " + std::string(to_string(m.kind)) + " " +
                         std::string(to_string(m.format)) + " [" + m.detail + "] primary " +
                         std::string(inventory.tensors[m.primary].name) + " tensors";
      for (const uint32_t t : m.tensors) {
        line += " " + std::to_string(t);
      }
      line += " files";
      for (const uint32_t f : m.files) {
        line += " " + inventory.files[f].name;
      }
      line += std::string(m.loaded ? " loaded" : " not-loaded") + " fused " + m.fused_name +
              " experts " + std::string(m.experts_name) +
              (m.expert_index ? " #" + std::to_string(*m.expert_index) : "");
      out.push_back(line);
    }
    return out;
  }
  // Modules as qpatch --check builds them (fed while reading), checked against build_modules.
  std::vector<std::string> modules_while_reading() {
    ModuleBuilder builder;
    size_t calls = 0;
    InventoryOptions options;
    options.on_tensors = [&](const Inventory& partial, uint32_t first, uint32_t end) {
      ++calls;
      builder.add(partial, first, end);
    };
    auto inventory = read_inventory(dir(), "ckpt", options);
    EXPECT_TRUE(inventory.ok()) << inventory.error().to_string();
    size_t read = 0; // every file that exists is fed once, unreadable ones included (0 tensors)
    for (const ShardFile& file : inventory->files) {
      read += file.exists ? 1 : 0;
    }
    EXPECT_EQ(calls, read);
    const auto fed = render(*inventory, builder.finish(*inventory));
    EXPECT_EQ(fed, render(*inventory, build_modules(*inventory)));
    return fed;
  }
};

TEST_F(ModulesWhileReadingTest, AcrossFileBoundariesAndSplitStretches) {
  shard("model-00001-of-00002.safetensors",
        {{"m.q_proj.weight", "BF16", {2, 2}},
         {"m.e.experts.3.up_proj.weight_packed", "I32", {2, 1}},
         {"m.split.weight", "I8", {2, 2}},
         {"m.k_proj.weight", "BF16", {2, 2}}});
  shard("model-00002-of-00002.safetensors",
        {{"m.k_proj.bias", "BF16", {2}},
         {"m.split.weight_scale", "F32", {2, 1}},
         {"m.e.experts.3.up_proj.weight_scale", "BF16", {2, 1}}});
  write("model.safetensors.index.json",
        R"({"weight_map":{"m.q_proj.weight":"model-00001-of-00002.safetensors",)"
        R"("m.e.experts.3.up_proj.weight_packed":"model-00001-of-00002.safetensors",)"
        R"("m.split.weight":"model-00001-of-00002.safetensors",)"
        R"("m.k_proj.weight":"model-00001-of-00002.safetensors",)"
        R"("m.k_proj.bias":"model-00002-of-00002.safetensors",)"
        R"("m.split.weight_scale":"model-00002-of-00002.safetensors",)"
        R"("m.e.experts.3.up_proj.weight_scale":"model-00002-of-00002.safetensors"}})");
  EXPECT_EQ(
      modules_while_reading(),
      (Lines{"m.q_proj linear dense [] primary m.q_proj.weight tensors 0 files "
             "model-00001-of-00002.safetensors loaded fused m.qkv_proj experts ",
             "m.e.experts.3.up_proj linear ct-pack-quantized [] primary "
             "m.e.experts.3.up_proj.weight_packed tensors 1 6 files "
             "model-00001-of-00002.safetensors model-00002-of-00002.safetensors loaded fused  "
             "experts m.e.experts #3",
             "m.split linear ct-int8 [] primary m.split.weight tensors 2 5 files "
             "model-00001-of-00002.safetensors model-00002-of-00002.safetensors loaded fused  "
             "experts ",
             "m.k_proj linear dense [] primary m.k_proj.weight tensors 3 4 files "
             "model-00001-of-00002.safetensors model-00002-of-00002.safetensors loaded fused "
             "m.qkv_proj experts "}));
}

TEST_F(ModulesWhileReadingTest, StartsOverWhenTensorsMoveOrAreShadowed) {
  // "a.safetensors" is not in the index and sorts first: its tensors move behind the indexed
  // file's, after both were fed. It also repeats an indexed tensor, which is then shadowed.
  shard("a.safetensors", {{"x.weight", "BF16", {2, 2}}, {"side.weight", "BF16", {2, 2}}});
  shard("b.safetensors", {{"x.weight", "BF16", {2, 2}}, {"y.weight", "BF16", {2, 2}}});
  write("model.safetensors.index.json",
        R"({"weight_map":{"x.weight":"b.safetensors","y.weight":"b.safetensors"}})");
  EXPECT_EQ(modules_while_reading(),
            (Lines{"x linear dense [] primary x.weight tensors 0 files b.safetensors loaded "
                   "fused  experts ",
                   "y linear dense [] primary y.weight tensors 1 files b.safetensors loaded "
                   "fused  experts ",
                   "side linear dense [] primary side.weight tensors 3 files a.safetensors "
                   "not-loaded fused  experts "}));
}

// Headers are read in name order while the index is parsed; the inventory then puts the files
// the index names first (by name, missing ones included) and moves the tensors of a file it does
// not name that sorted before them. Ids, the join and the owner of a duplicate follow the move.
TEST_F(InventoryTest, FilesTheIndexNamesComeFirstByName) {
  shard("a.safetensors", {{"x.weight", "BF16", {2}}, {"sidecar.weight", "BF16", {2}}});
  shard("b.safetensors", {{"w.weight", "BF16", {2}}, {"x.weight", "BF16", {2}}});
  shard("c.safetensors", {{"y.weight", "BF16", {2}}, {"z.weight", "BF16", {2}}});
  write("model.safetensors.index.json",
        R"({"weight_map":{"y.weight":"c.safetensors","z.weight":"b.safetensors",)"
        R"("w.weight":"b.safetensors","x.weight":"b.safetensors","v.weight":"bb.safetensors"}})");
  const Inventory inventory = read_ok();
  std::vector<std::string> files;
  for (const ShardFile& file : inventory.files) {
    files.push_back(file.name + (file.indexed ? " indexed" : "") + (file.exists ? "" : " missing"));
  }
  EXPECT_EQ(files,
            (Lines{"b.safetensors indexed",
                   "bb.safetensors indexed missing",
                   "c.safetensors indexed",
                   "a.safetensors"}));
  std::vector<std::string> tensors;
  for (const Tensor& tensor : inventory.tensors) {
    tensors.push_back(std::string(tensor.name) + "@" + inventory.files[tensor.file].name +
                      (tensor.shadowed ? " shadowed" : ""));
  }
  EXPECT_EQ(tensors,
            (Lines{"w.weight@b.safetensors",
                   "x.weight@b.safetensors",
                   "y.weight@c.safetensors",
                   "z.weight@c.safetensors",
                   "x.weight@a.safetensors shadowed",
                   "sidecar.weight@a.safetensors"}));
  EXPECT_EQ(problems(inventory),
            (Lines{"error missing_file bb.safetensors : the index names this file but it does not "
                   "exist (vLLM: \"Weight files referenced in index but missing\")",
                   "warning unindexed_file a.safetensors : holds 2 tensors but the index does not "
                   "name it: vLLM and transformers never load it (1 of them duplicate tensors in "
                   "indexed files)",
                   "warning wrong_file model.safetensors.index.json z.weight: the index maps it "
                   "to b.safetensors but it is in c.safetensors"}));
}

TEST_F(InventoryTest, EveryUnreadableShardIsCollected) {
  write("a.safetensors", "tiny");
  write("b.safetensors", "version https://git-lfs.github.com/spec/v1\n");
  shard("c.safetensors", {{"c.weight", "BF16", {2}}});
  const Inventory inventory = read_ok();
  EXPECT_EQ(problems(inventory),
            (Lines{"error a.safetensors: byte 0: file is 4 bytes, too short for the 8-byte "
                   "header length (HeaderTooSmall)",
                   "error b.safetensors: byte 0: this is a Git LFS pointer file, not tensor data: "
                   "fetch the real file with `git lfs pull` (HeaderTooLarge)"}));
  EXPECT_EQ(inventory.tensors.size(), 1U);
}

TEST_F(InventoryTest, ConfigJsonIsRequired) {
  std::filesystem::remove(dir() / "config.json");
  const auto inventory = read_inventory(dir(), "ckpt");
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.error().to_string(),
            "ckpt: no config.json: not a Hugging Face checkpoint directory");
}

TEST_F(InventoryTest, DirectoryMustExist) {
  const auto inventory = read_inventory(dir() / "nope", "nope");
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.error().to_string(), "nope: no such directory");
}

// A checkpoint path stat cannot follow names the errno text, not "no such directory".
TEST_F(InventoryTest, AnUnreadableDirectoryNamesItsErrnoText) {
  std::filesystem::create_symlink("loop", dir() / "loop");
  const auto inventory = read_inventory(dir() / "loop", "loop");
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.error().code, ErrorCode::io_error);
  EXPECT_EQ(inventory.error().to_string(), "loop: cannot read: Too many levels of symbolic links");
}

TEST_F(InventoryTest, UnsafeIndexIsAnError) {
  write("model.safetensors.index.json", R"({"weight_map":{"a":"../../etc/x.safetensors"}})");
  const auto inventory = read_inventory(dir(), "ckpt");
  ASSERT_FALSE(inventory.ok());
  EXPECT_EQ(inventory.error().to_string(),
            "model.safetensors.index.json: at /weight_map/a: file name "
            "\"../../etc/x.safetensors\" has a path separator (shards must sit beside the "
            "index)");
}

TEST_F(InventoryTest, HuggingFaceCacheSymlinksAreFollowedForReading) {
  shard("blobs/abc", {{"a.weight", "BF16", {2}}});
  std::filesystem::create_symlink("blobs/abc", dir() / "model.safetensors");
  const Inventory inventory = read_ok();
  ASSERT_EQ(inventory.files.size(), 1U);
  EXPECT_EQ(inventory.tensors.at(0).name, "a.weight");
}

} // namespace
} // namespace qpatch::checkpoint
