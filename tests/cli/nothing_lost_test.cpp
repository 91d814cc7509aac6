// SPDX-License-Identifier: Apache-2.0
// Nothing lost, ever: restore uses only the backups qpatch recorded; one qpatch per checkpoint;
// signals and SIGKILL at every rename of a 3-file transaction leave every file whole, and the
// next run and restore converge. The fault and concurrency cases run the real binary.
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/spawn.hpp"
#include "support/temp_dir.hpp"
#include "synth/synthetic_checkpoint.hpp"
#include "terminal_safe.hpp"

#include <qpatch/commit/lock.hpp>
#include <qpatch/commit/manifest.hpp>
#include <qpatch/report/text_style.hpp>
#include <qpatch/util/names.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

namespace qpatch::cli {
namespace {

namespace fs = std::filesystem;
using test::Head;
using test::HeadFile;
using test::spawn_qpatch;
using test::Spawned;
using test::wait_for;

// Enough address space to start, too little to read a checkpoint on several threads.
constexpr rlim_t k_oom_limit = 20U << 20;

constexpr const char* k_linear = "[\n          \"Linear\"\n        ]";

// A checkpoint whose fix changes three files: config.json, quantization_config.json (a sidecar
// in step with it) and the index (an unindexed MTP shard).
void write_three_file_checkpoint(const fs::path& dir) {
  const std::string config = test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear);
  test::write_mini(dir, {Head::dense, HeadFile::unindexed_sidecar, config});
  std::ofstream(dir / "quantization_config.json", std::ios::binary)
      << "{\n  \"config_groups\": {\n    \"group_0\": {\n      \"targets\": [\n        "
         "\"Linear\"\n      ]\n    }\n  },\n  \"ignore\": [\n    \"lm_head\"\n  ],\n  "
         "\"quant_method\": \"compressed-tensors\"\n}\n";
}

int run_binary(const std::vector<std::string>& args,
               const std::vector<std::string>& env,
               const fs::path& log) {
  return wait_for(spawn_qpatch(args, env, log));
}

class NothingLostTest : public test::TempDirTest {
protected:
  test::CliOutcome run_qpatch(std::vector<std::string> args) {
    return test::run_cli(std::move(args), dir());
  }
  // A GPTQ checkpoint whose MTP head is indexed quantized (mtp.fc.qweight ...), beside an
  // unindexed mtp_dense.safetensors holding `tensors`.
  void write_gptq_head_beside_unindexed(const std::vector<synth::TensorSpec>& tensors) {
    test::write_mini(dir(),
                     {Head::packed,
                      HeadFile::indexed_shard,
                      test::gptq_config("Qwen3_5ForCausalLM", ""),
                      test::Packing::gptq});
    ASSERT_TRUE(synth::write_shard(dir() / "mtp_dense.safetensors", tensors).ok());
  }
  void write_patchable() {
    test::write_mini(dir(),
                     {Head::dense,
                      HeadFile::indexed_shard,
                      test::ct_config_json("[\n      \"lm_head\"\n    ]", k_linear)});
  }
};

// Every path below `root` (root itself as "."), with its size and modification time in
// nanoseconds: what "writes nothing at all" compares, beyond the bytes.
std::map<std::string, std::pair<uintmax_t, int64_t>> stat_tree(const fs::path& root) {
  std::map<std::string, std::pair<uintmax_t, int64_t>> out;
  const auto add = [&](const fs::path& path, const std::string& name) {
    struct stat info {};
    ASSERT_EQ(::lstat(path.c_str(), &info), 0) << path;
    out[name] = {static_cast<uintmax_t>(info.st_size),
                 static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
  };
  add(root, ".");
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    add(entry.path(), fs::relative(entry.path(), root).string());
  }
  return out;
}

// A run with nothing to change writes nothing at all: not the lock (it is an flock on the
// directory itself, its holder found through /proc/locks), not a PID, no mtime, before a patch
// and after one.
TEST_F(NothingLostTest, ARunWithNothingToChangeWritesNothingNotEvenALock) {
  write_patchable();
  ASSERT_EQ(run_qpatch({"DIR"}).code, 0);
  const auto patched = stat_tree(dir());
  EXPECT_EQ(patched.count(".qpatch/lock"), 0U);
  std::this_thread::sleep_for(std::chrono::milliseconds(20)); // a rewrite would show in mtime
  const auto again = run_qpatch({"DIR"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(stat_tree(dir()), patched);
  const auto restored = run_qpatch({"restore", "DIR"});
  ASSERT_EQ(restored.code, 0) << restored.err;
  const auto clean = stat_tree(dir());
  EXPECT_EQ(clean.count(".qpatch"), 0U);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(run_qpatch({"--check", "DIR"}).code, 1); // restored: a patch is needed again
  EXPECT_EQ(run_qpatch({"restore", "DIR"}).code, 0); // nothing to restore
  EXPECT_EQ(stat_tree(dir()), clean);
}

// An index never lists two storage formats of one module (issue 24 item 1). The GPTQ head is
// indexed quantized (mtp.fc.qweight ...); an unindexed sidecar holds a stray dense
// mtp.fc.weight. The engines open only indexed files, so the checkpoint loads as it is: qpatch
// used to index the sidecar, exit 1, and leave an index whose mtp.fc was "stored inconsistently
// (qweight and weight are both stored)". Now the module is judged as indexed, the sidecar stays
// unindexed with a note, and nothing is written.
TEST_F(NothingLostTest, AStrayDenseCopyOfAnIndexedQuantizedModuleIsNeverIndexed) {
  write_gptq_head_beside_unindexed({{"mtp.fc.weight", "BF16", {64, 128}}});
  const auto before = stat_tree(dir());
  const std::string index = read("model.safetensors.index.json");
  const std::string report =
      "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
      "  mtp head    8 linears gptq, 4 norms in model_extra_tensors.safetensors\n"
      "  note        mtp_dense.safetensors is not indexed and stays so: its 1 tensor "
      "(mtp.fc.weight) would give mtp.fc a second storage format beside the one the index lists "
      "(gptq in model_extra_tensors.safetensors); the engines load the indexed form\n"
      "  status      clean\n";
  const auto checked = run_qpatch({"--check", "--engine", "vllm@main", "DIR"});
  EXPECT_EQ(checked.code, 0) << checked.err;
  EXPECT_EQ(checked.out, report);
  const auto fixed = run_qpatch({"--engine", "vllm@main", "DIR"});
  EXPECT_EQ(fixed.code, 0) << fixed.err;
  EXPECT_EQ(fixed.out, report);
  EXPECT_EQ(read("model.safetensors.index.json"), index);
  EXPECT_EQ(stat_tree(dir()), before);
}

// The same stray copy beside a tensor the model does need: indexing the file would bring the
// second format with it, so qpatch refuses before writing and names both.
TEST_F(NothingLostTest, AStrayCopyBesideANeededTensorIsRefusedBeforeWriting) {
  write_gptq_head_beside_unindexed(
      {{"mtp.fc.weight", "BF16", {64, 128}}, {"mtp.pre_fc_norm_hidden.weight", "BF16", {64}}});
  const auto before = stat_tree(dir());
  const auto fixed = run_qpatch({"--engine", "vllm@main", "DIR"});
  EXPECT_EQ(fixed.code, 1);
  EXPECT_EQ(fixed.out,
            "DIR: gptq, judged for vLLM (main, 2026-08-17)\n"
            "  mtp head    8 linears gptq, 5 norms in model_extra_tensors.safetensors, "
            "mtp_dense.safetensors\n"
            "  not fixable mtp_dense.safetensors: 1 tensor (mtp.pre_fc_norm_hidden.weight) that "
            "the index does not list: vLLM and transformers never load them; 1 tensor "
            "(mtp.fc.weight) would give mtp.fc a second storage format beside the one the index "
            "lists (gptq in model_extra_tensors.safetensors), so qpatch will not index the file "
            "(remove those tensors from it)\n"
            "  breaks      vLLM: never opens the file, so its tensors are not loaded\n"
            "  status      unfixable\n"
            "  why         qpatch explain DIR mtp.pre_fc_norm_hidden.weight\n");
  EXPECT_EQ(stat_tree(dir()), before);
}

// restore gives back the modification time as well as the bytes (issue 24 item 9: 2024-01-02
// became the time of the restore): the backup keeps the original's, like `cp -p`, and restore
// gives it to the file it puts back. The patched file itself gets the time of writing.
TEST_F(NothingLostTest, RestoreGivesBackTheModificationTime) {
  write_patchable();
  const std::string original = read("config.json");
  const timespec then[2] = {{0, UTIME_OMIT}, {1704164645, 123456789}}; // 2024-01-02T03:04:05
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir() / "config.json").c_str(), then, 0), 0);
  const auto mtime_of = [&](const std::string& name) {
    struct stat info {};
    EXPECT_EQ(::stat((dir() / name).c_str(), &info), 0) << name;
    return std::pair<int64_t, int64_t>(info.st_mtim.tv_sec, info.st_mtim.tv_nsec);
  };
  ASSERT_EQ(run_qpatch({"DIR"}).code, 0);
  EXPECT_EQ(mtime_of("config.json.bak"), std::make_pair(int64_t{1704164645}, int64_t{123456789}));
  EXPECT_GT(mtime_of("config.json").first, 1704164645);
  const auto restored = run_qpatch({"restore", "DIR"});
  ASSERT_EQ(restored.code, 0) << restored.err;
  EXPECT_EQ(restored.out, "DIR: restored config.json from config.json.bak\n");
  EXPECT_EQ(read("config.json"), original);
  EXPECT_EQ(mtime_of("config.json"), std::make_pair(int64_t{1704164645}, int64_t{123456789}));
}

TEST_F(NothingLostTest, AForeignBakSurvivesPatchAndRestore) {
  write_patchable();
  const std::string original = read("config.json");
  write("config.json.bak", "my own copy\n"); // `cp config.json config.json.bak`, then an edit
  ASSERT_EQ(run_qpatch({"DIR"}).code, 0);
  EXPECT_EQ(read("config.json.bak.1"), original);
  const auto restored = run_qpatch({"restore", "DIR"});
  EXPECT_EQ(restored.code, 0) << restored.err;
  EXPECT_EQ(restored.out, "DIR: restored config.json from config.json.bak.1\n");
  EXPECT_EQ(restored.err,
            "qpatch: note: DIR/config.json.bak is not a backup qpatch recorded (yours, or from a "
            "qpatch without a manifest); restore leaves it alone\n");
  EXPECT_EQ(read("config.json"), original);
  EXPECT_EQ(read("config.json.bak"), "my own copy\n");
  EXPECT_FALSE(fs::exists(dir() / "config.json.bak.1"));
  EXPECT_FALSE(fs::exists(dir() / ".qpatch"));
}

TEST_F(NothingLostTest, ABakWithoutAManifestIsNeverRestored) {
  // What an older qpatch (or a user) left: restore cannot prove it is qpatch's, so it stays.
  write_patchable();
  const std::string current = read("config.json");
  write("config.json.bak", "{}\n");
  const auto restored = run_qpatch({"restore", "DIR"});
  EXPECT_EQ(restored.code, 0);
  EXPECT_EQ(restored.out, "DIR: no qpatch backups; nothing to restore\n");
  EXPECT_EQ(read("config.json"), current);
  EXPECT_EQ(read("config.json.bak"), "{}\n");
}

TEST_F(NothingLostTest, ABackupSymlinkIsRefused) {
  write_patchable();
  write("secret", "{\"password\": 1}\n");
  ASSERT_EQ(run_qpatch({"DIR"}).code, 0);
  const std::string patched = read("config.json");
  fs::remove(dir() / "config.json.bak");
  fs::create_symlink(dir() / "secret", dir() / "config.json.bak");
  const auto restored = run_qpatch({"restore", "DIR"});
  EXPECT_EQ(restored.code, 4);
  EXPECT_EQ(restored.err,
            "qpatch: error: DIR/config.json.bak: is a symlink, and qpatch never makes one nor "
            "follows one; nothing was restored\n");
  EXPECT_EQ(read("config.json"), patched);
}

TEST_F(NothingLostTest, AChangedBackupIsRefused) {
  write_patchable();
  const std::string original = read("config.json");
  ASSERT_EQ(run_qpatch({"DIR"}).code, 0);
  const std::string patched = read("config.json");
  write("config.json.bak", "{}\n");
  const auto restored = run_qpatch({"restore", "DIR"});
  EXPECT_EQ(restored.code, 4);
  EXPECT_EQ(restored.err,
            "qpatch: error: DIR/config.json.bak: does not hold what qpatch backed up (xxh3 " +
                commit::content_hash("{}\n") + ", recorded " + commit::content_hash(original) +
                "); nothing was restored\n");
  EXPECT_EQ(read("config.json"), patched);
}

TEST_F(NothingLostTest, AnEditAfterThePatchIsRefusedWithTheDiffUnlessForced) {
  write_patchable();
  const std::string original = read("config.json");
  ASSERT_EQ(run_qpatch({"DIR"}).code, 0);
  std::string edited = read("config.json");
  edited.insert(edited.find('{') + 1, "\n  \"my_edit\": true,");
  write("config.json", edited);
  const auto refused = run_qpatch({"restore", "DIR"});
  EXPECT_EQ(refused.code, 4);
  EXPECT_NE(refused.out.find("-  \"my_edit\": true,\n"), std::string::npos) << refused.out;
  EXPECT_EQ(refused.err,
            "qpatch: error: DIR/config.json: changed since qpatch wrote it; nothing was restored "
            "(the diff shows what restoring would undo; --force keeps the current bytes as a "
            "backup first)\n");
  EXPECT_EQ(read("config.json"), edited);
  const auto dry = run_qpatch({"restore", "--dry-run", "DIR"});
  EXPECT_EQ(dry.code, 0);
  EXPECT_EQ(dry.out.substr(0, dry.out.find('\n') + 1),
            "DIR: would restore config.json from config.json.bak (edited since qpatch wrote it: "
            "needs --force)\n");
  EXPECT_EQ(read("config.json"), edited);
  const auto forced = run_qpatch({"restore", "--force", "DIR"});
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_EQ(forced.out, "DIR: restored config.json from config.json.bak\n");
  EXPECT_EQ(forced.err, "qpatch: note: the edited bytes are kept in DIR/config.json.bak.1\n");
  EXPECT_EQ(read("config.json"), original);
  EXPECT_EQ(read("config.json.bak.1"), edited);
  // A later restore says where those bytes are (issue 24 item 9: a kept copy, like another
  // program's version after a conflict, was named by nothing after the run that made it).
  const auto again = run_qpatch({"restore", "DIR"});
  EXPECT_EQ(again.code, 0);
  EXPECT_EQ(again.out, "DIR: no qpatch backups; nothing to restore\n");
  EXPECT_EQ(again.err,
            "qpatch: note: DIR/config.json.bak.1 holds bytes qpatch found and did not write "
            "(another program's version, or edits a restore --force replaced): restore leaves it "
            "for you\n");
  EXPECT_EQ(read("config.json.bak.1"), edited);
}

TEST_F(NothingLostTest, ASecondRunWaitsThenExitsFourNamingTheHolder) {
  write_patchable();
  const auto before = test::snapshot_tree(dir());
  auto held = commit::CheckpointLock::acquire(dir(), std::chrono::milliseconds(0));
  ASSERT_TRUE(held.ok());
  ::setenv("QPATCH_LOCK_WAIT_MS", "100", 1);
  const auto second = run_qpatch({"DIR"});
  ::unsetenv("QPATCH_LOCK_WAIT_MS");
  EXPECT_EQ(second.code, 4);
  EXPECT_EQ(second.err,
            "qpatch: error: DIR: another qpatch (PID " + std::to_string(::getpid()) +
                ") is writing this checkpoint; nothing was written (run qpatch again when it "
                "has finished)\n");
}

TEST_F(NothingLostTest, TwentyConcurrentPairsNeverExit70NorLoseAnEdit) {
  std::vector<Spawned> runs;
  for (int pair = 0; pair < 20; ++pair) {
    const fs::path checkpoint = dir() / ("ck" + std::to_string(pair));
    write_three_file_checkpoint(checkpoint);
    for (int side = 0; side < 2; ++side) {
      runs.push_back(spawn_qpatch({checkpoint.string()},
                                  {"QPATCH_LOCK_WAIT_MS=20000"},
                                  dir() / ("log" + std::to_string(pair * 2 + side))));
    }
  }
  for (const Spawned& run : runs) {
    EXPECT_EQ(wait_for(run), 0) << test::read_bytes(run.out);
  }
  for (int pair = 0; pair < 20; ++pair) {
    const fs::path checkpoint = dir() / ("ck" + std::to_string(pair));
    // One run patched, the other found it clean: one backup each, and a clean check.
    EXPECT_TRUE(fs::exists(checkpoint / "config.json.bak"));
    EXPECT_FALSE(fs::exists(checkpoint / "config.json.bak.1"));
    EXPECT_EQ(run_binary({"--check", checkpoint.string()}, {}, dir() / "check"), 0);
  }
}

TEST_F(NothingLostTest, ControlCharactersInNamesAreEscaped) {
  write_patchable();
  std::string index = read("model.safetensors.index.json");
  index.insert(index.find("\"weight_map\": {") + 15,
               "\n    \"evil\\u001b]0;pwned\\u0007.weight\": \"x\\u001b[2J.safetensors\",");
  write("model.safetensors.index.json", index);
  const auto outcome = run_qpatch({"--check", "DIR"});
  EXPECT_EQ(outcome.code, 3);
  EXPECT_EQ(outcome.err.find('\x1b'), std::string::npos) << outcome.err;
  EXPECT_EQ(outcome.out.find('\x1b'), std::string::npos) << outcome.out;
  EXPECT_NE((outcome.out + outcome.err).find("x\\x1b[2J.safetensors"), std::string::npos)
      << outcome.out << outcome.err;
}

// The colour codes qpatch writes itself used to pass the filter in names too: an index key
// holding "\x1b[31m" reached the terminal raw (issue 24 item 8), with colour off as well.
TEST_F(NothingLostTest, ColourCodesInNamesAreEscapedLikeAnyEscape) {
  write_patchable();
  std::string index = read("model.safetensors.index.json");
  index.insert(index.find("\"weight_map\": {") + 15,
               "\n    \"red\\u001b[31m.weight\": \"x\\u001b[0m.safetensors\",");
  write("model.safetensors.index.json", index);
  for (const char* colour : {"never", "always"}) {
    const auto outcome = run_qpatch({"--check", "--color", colour, "DIR"});
    EXPECT_EQ(outcome.code, 3);
    EXPECT_NE(outcome.err.find("x\\x1b[0m.safetensors"), std::string::npos) << outcome.err;
    EXPECT_EQ(outcome.err.find("x\x1b[0m"), std::string::npos) << outcome.err;
  }
}

// A 200 KB name (issue 25) keeps its first 160 and last 32 bytes, cut on UTF-8 boundaries, and
// says how much it left out; the words around it and names of ordinary length are untouched.
TEST(TerminalSafe, AHugeNameIsShortenedAndSaysBy) {
  const std::string name = "model." + std::string(200000, 'x') + "é.weight";
  const std::string shown = terminal_safe("warning: '" + name + "' skipped\n  next line");
  const std::string word = "'" + name + "'";
  EXPECT_EQ(shown,
            "warning: " + word.substr(0, 160) + "…[" + std::to_string(word.size() - 192) +
                " bytes left out]…" + word.substr(word.size() - 32) + " skipped\n  next line");
  // A cut that would split "é" moves to the character's edge.
  const std::string accents = std::string(159, 'a') + "é" + std::string(2000, 'b');
  EXPECT_EQ(terminal_safe(accents).substr(0, 159 + std::string("…[").size()),
            std::string(159, 'a') + "…[");
  EXPECT_EQ(terminal_safe(std::string(1024, 'a')), std::string(1024, 'a'));
}

TEST(TerminalSafe, ControlsAreEscapedAndOnlyOurColoursPass) {
  EXPECT_EQ(terminal_safe("a\x1b]0;t\x07"
                          "b\x1b[2Jc\x7f\n\td"),
            "a\\x1b]0;t\\x07b\\x1b[2Jc\\x7f\n\td");
  // Colour paint wrote passes; the same bytes in a name (an index key, a header name) do not,
  // with colour on or off (issue 24 item 8).
  const report::TextStyle colour{true};
  EXPECT_EQ(terminal_safe(colour.paint("ok", report::Role::heading) + " " +
                          colour.paint("red", report::Role::error)),
            "\x1b[1mok\x1b[0m \x1b[31mred\x1b[0m");
  EXPECT_EQ(terminal_safe(colour.paint("model.\x1b[31mlayers\x1b[0m", report::Role::error)),
            "\x1b[31mmodel.\\x1b[31mlayers\\x1b[0m\x1b[0m");
  EXPECT_EQ(terminal_safe("\x1b[1mok\x1b[0m"), "\\x1b[1mok\\x1b[0m");
  EXPECT_EQ(colour_codes(colour.paint("a\x1b[2Jb", report::Role::good)),
            "\x1b[32ma\x1b[2Jb\x1b[0m");
  EXPECT_EQ(terminal_safe("csi\xc2\x9b"
                          "2J caf\xc3\xa9"),
            "csi\\u009b2J caf\xc3\xa9");
  EXPECT_EQ(terminal_safe("\r\x1b[8mhidden"), "\\x0d\\x1b[8mhidden");
}

TEST_F(NothingLostTest, OutOfMemoryHasItsOwnExitCode) {
#if defined(__SANITIZE_ADDRESS__)
  // The binary under test is built as this test is: ASan reserves terabytes of address space
  // for its shadow, so a 20 MB RLIMIT_AS stops it before main, not in qpatch's allocations.
  GTEST_SKIP() << "RLIMIT_AS cannot model running out of memory under ASan";
#endif
  write_patchable();
  const fs::path log = dir() / "log";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const rlimit limit{k_oom_limit, k_oom_limit};
    ::setrlimit(RLIMIT_AS, &limit);
    ::execl(QPATCH_EXE, QPATCH_EXE, "--check", dir().c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const int code = wait_for({pid, log});
  const std::string text = test::read_bytes(log);
  EXPECT_EQ(code, 6) << text;
  EXPECT_TRUE(text.ends_with("nothing was written\n")) << text;
  EXPECT_TRUE(text.starts_with("qpatch: error: out of ")) << text;
}

// A file-size limit used to kill qpatch with SIGXFSZ (exit 153), wordless, leaving its temp
// file beside config.json (issue 24 item 6). Ignored, the write fails with EFBIG: a message
// naming the file, exit 4, and every file as it was.
TEST_F(NothingLostTest, AFileSizeLimitIsAWriteErrorThatLeavesNothing) {
  write_patchable();
  const auto before = test::snapshot_tree(dir());
  // Through a pipe, which no file-size limit applies to: the report is read whole.
  const std::string command =
      "ulimit -f 0; ASAN_OPTIONS=detect_leaks=0 exec " QPATCH_EXE " '" + dir().string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    text.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 4) << text;
  const std::string shown = util::replace_all(text, dir().string(), "DIR");
  EXPECT_EQ(shown.substr(shown.find("qpatch: error:")),
            "qpatch: error: DIR/.qpatch/manifest.json: cannot write manifest.json: File too "
            "large; nothing was changed\nDIR: judged; the patch was stopped (see the error)\n"
            "  status      error\n");
  EXPECT_EQ(test::snapshot_tree(dir()), before);
}

// The fault-injection seam at every rename of a 3-file transaction.
class SignalAtRenameTest : public NothingLostTest,
                           public ::testing::WithParamInterface<const char*> {};

TEST_P(SignalAtRenameTest, EveryFileWholeNextRunConvergesRestoreGivesTheOriginal) {
  const std::string signal = GetParam();
  int renames_seen = 0;
  for (int at = 1; at <= 12; ++at) {
    const fs::path ck = dir() / ("ck" + std::to_string(at));
    write_three_file_checkpoint(ck);
    const auto original = test::snapshot_tree(ck);
    const std::map<std::string, std::string> before_files{
        {"config.json", test::read_bytes(ck / "config.json")},
        {"quantization_config.json", test::read_bytes(ck / "quantization_config.json")},
        {"model.safetensors.index.json", test::read_bytes(ck / "model.safetensors.index.json")}};
    const int code = run_binary(
        {ck.string()},
        {"QPATCH_FAULT_AT_RENAME=" + std::to_string(at), "QPATCH_FAULT_SIGNAL=" + signal},
        dir() / "log");
    if (code == 0) {
      break; // fewer renames than `at`: every one has been cut
    }
    ++renames_seen;
    EXPECT_EQ(code, signal == "KILL" ? 1009 : 130) << at << test::read_bytes(dir() / "log");
    // Every file whole: what it held or what the run meant to write, and valid JSON.
    for (const auto& [name, before] : before_files) {
      const std::string now = test::read_bytes(ck / name);
      EXPECT_TRUE(now == before || nlohmann::json::accept(now)) << at << " " << name;
    }
    // The next run converges: the transaction completed (or undone and redone), nothing left.
    EXPECT_EQ(run_binary({ck.string()}, {}, dir() / "log"), 0)
        << at << test::read_bytes(dir() / "log");
    EXPECT_EQ(run_binary({"--check", ck.string()}, {}, dir() / "log"), 0) << at;
    for (const auto& entry : fs::recursive_directory_iterator(ck)) {
      EXPECT_EQ(entry.path().filename().string().find(".qpatch-"), std::string::npos)
          << at << " " << entry.path();
    }
    EXPECT_TRUE(fs::exists(ck / "config.json.bak")) << at;
    EXPECT_FALSE(fs::exists(ck / "config.json.bak.1")) << at;
    EXPECT_EQ(run_binary({"restore", ck.string()}, {}, dir() / "log"), 0)
        << at << test::read_bytes(dir() / "log");
    EXPECT_EQ(test::snapshot_tree(ck), original) << at;
  }
  EXPECT_EQ(renames_seen, 6); // journal prepare, journal swap, 3 swaps, journal closed
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalAtRenameTest, ::testing::Values("KILL", "INT"));

} // namespace
} // namespace qpatch::cli
