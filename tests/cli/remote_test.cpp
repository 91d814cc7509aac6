// SPDX-License-Identifier: Apache-2.0
// Issue 16, item 2: `--remote ORG/NAME[@REV]` judges a Hub repo from its headers, against a Hub
// on loopback (support/hub_server.hpp) that serves the same endpoints, ranges and redirects as
// huggingface.co. The verdicts must be those of the same files judged locally, from a small part
// of their bytes.
#include "run.hpp"
#include "support/builder.hpp"
#include "support/cli_run.hpp"
#include "support/fixtures.hpp"
#include "support/hub_server.hpp"
#include "support/spawn.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/util/names.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

namespace qpatch {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_commit = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";

// Sets environment variables for one test and puts the old values back after it.
class ScopedEnv {
public:
  void set(const std::string& name, const std::optional<std::string>& value) {
    if (m_saved.count(name) == 0) {
      const char* old = std::getenv(name.c_str());
      m_saved[name] = old == nullptr ? std::nullopt : std::optional<std::string>(old);
    }
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : m_saved) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

private:
  std::map<std::string, std::optional<std::string>> m_saved;
};

struct Outcome {
  int code = 0;
  std::string out;
  std::string err;
};

class RemoteTest : public test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    fs::create_directories(dir() / "home");
    fs::create_directories(dir() / "tmp");
    m_env.set("HF_ENDPOINT", m_server.endpoint());
    m_env.set("HF_HOME", (dir() / "home").string()); // no token file unless a test writes one
    m_env.set("HF_TOKEN", std::nullopt);
    m_env.set("HF_TOKEN_PATH", std::nullopt);
    m_env.set("HUGGING_FACE_HUB_TOKEN", std::nullopt);
    m_env.set("HF_HUB_OFFLINE", std::nullopt);
    m_env.set("TRANSFORMERS_OFFLINE", std::nullopt);
    m_env.set("HF_HUB_DOWNLOAD_TIMEOUT", std::nullopt);
    m_env.set("QPATCH_HTTP_RETRIES", "0");
    m_env.set("TMPDIR", (dir() / "tmp").string());
    // A proxy from CI's environment must not carry loopback requests away.
    m_env.set("no_proxy", "*");
    m_env.set("NO_PROXY", "*");
  }

  Outcome run(std::vector<std::string> args) {
    std::ostringstream out;
    std::ostringstream err;
    const int code = cli::run(args, out, err, cli::Terminal{});
    const auto placeholders = [this](const std::string& text) {
      return util::replace_all(
          util::replace_all(text, m_server.endpoint(), "ENDPOINT"), m_server.cdn_origin(), "CDN");
    };
    return {code, placeholders(out.str()), placeholders(err.str())};
  }

  // The small checkpoint of the CLI tests, served as Org/Name: an MTP head stored dense that the
  // config does not ignore.
  fs::path write_small(const std::string& name = "small") {
    const fs::path checkpoint = dir() / name;
    test::write_mini(checkpoint,
                     {test::Head::dense,
                      test::HeadFile::indexed_shard,
                      test::ct_config_json("[\n      \"lm_head\"\n    ]",
                                           "[\n          \"Linear\"\n        ]")});
    return checkpoint;
  }

  // What the local run printed, as the remote run prints it: DIR is the repo id.
  static std::string
  as_repo(const std::string& text, const fs::path& local, const std::string& repo) {
    return util::replace_all(text, local.string(), repo);
  }

  // Everything but the note that says what was read.
  static std::string without_read_note(const std::string& err) {
    std::istringstream lines(err);
    std::string kept;
    for (std::string line; std::getline(lines, line);) {
      if (line.find(": read from ENDPOINT at commit ") == std::string::npos) {
        kept += line + "\n";
      }
    }
    return kept;
  }

  bool tmp_is_empty() const { return fs::is_empty(dir() / "tmp"); }

  test::HubServer m_server;
  ScopedEnv m_env;
};

uint64_t shard_bytes(const fs::path& checkpoint) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(checkpoint)) {
    if (entry.path().extension() == ".safetensors") {
      total += entry.file_size();
    }
  }
  return total;
}

TEST_F(RemoteTest, HeaderOnlyCheckOfTheSampleIsTheLocalVerdictFromAFewHundredKilobytes) {
  const fs::path sample = QPATCH_SAMPLE_DIR;
  m_server.add_repo("Org/Qwen3.5-27B-W4A16", k_commit, sample);
  const Outcome local = run({"--check", sample.string()});
  const Outcome remote = run({"--check", "--remote", "Org/Qwen3.5-27B-W4A16"});
  EXPECT_EQ(remote.code, 1);
  EXPECT_EQ(remote.code, local.code);
  // The one difference: a repo read header-only is patched once it is downloaded.
  EXPECT_EQ(remote.out,
            util::replace_all(as_repo(local.out, sample, "Org/Qwen3.5-27B-W4A16"),
                              "apply       qpatch Org/",
                              "apply       hf download Org/Qwen3.5-27B-W4A16 && qpatch Org/"));
  EXPECT_EQ(without_read_note(remote.err), as_repo(local.err, sample, "Org/Qwen3.5-27B-W4A16"));
  // 19.5 GB of shards on the Hub; what crossed the network is the headers, the index and
  // config.json.
  const uint64_t total = shard_bytes(sample);
  EXPECT_GT(total, uint64_t{19'000'000'000});
  // The first 100,001 bytes of each shard (huggingface_hub's one-request guess), the index,
  // config.json and the file list.
  EXPECT_EQ(m_server.body_bytes(), 714'107u);
  EXPECT_EQ(remote.err.substr(0, remote.err.find('\n') + 1),
            "qpatch: note: Org/Qwen3.5-27B-W4A16: read from ENDPOINT at commit a1b2c3d4e5f6 "
            "(main): 2 small files whole and the headers of 5 shards, 714.1 kB of 19.5 GB\n");
  EXPECT_TRUE(tmp_is_empty());
}

TEST_F(RemoteTest, ShardsAreReadByRangeThroughTheCdnRedirectWithoutTheToken) {
  m_server.add_repo("Org/Name", k_commit, write_small(), test::HubServer::Access::gated, "hf_ok");
  m_env.set("HF_TOKEN", "hf_ok\n");
  const Outcome remote = run({"--check", "--remote", "-q", "Org/Name"});
  EXPECT_EQ(remote.code, 1) << remote.err;
  std::vector<std::string> shard_requests;
  for (const std::string& line : m_server.log()) {
    if (line.find("model-00001-of-00001.safetensors ") != std::string::npos) {
      shard_requests.push_back(line);
    }
  }
  // The Hub gets the token and redirects; the CDN on another port gets the range, not the token.
  ASSERT_EQ(shard_requests.size(), 2u);
  EXPECT_EQ(shard_requests[0],
            "GET /Org/Name/resolve/" + std::string(k_commit) +
                "/model-00001-of-00001.safetensors range=bytes=0-100000 auth=yes port=hub");
  EXPECT_EQ(shard_requests[1],
            "GET /cdn/Org/Name/" + std::string(k_commit) +
                "/model-00001-of-00001.safetensors range=bytes=0-100000 auth=no port=cdn");
  EXPECT_EQ(m_server.log().front(),
            "GET /api/models/Org/Name/revision/main?blobs=true range= auth=yes port=hub");
}

TEST_F(RemoteTest, DryRunPrintsTheDiffToApplyAfterDownloadOrToUpload) {
  const fs::path small = write_small();
  m_server.add_repo("Org/Name", k_commit, small);
  const Outcome local = run({"--dry-run", "-q", small.string()});
  const Outcome remote = run({"--dry-run", "-q", "--remote", "Org/Name"});
  EXPECT_EQ(remote.code, 1) << remote.err;
  EXPECT_EQ(remote.out, local.out);
  EXPECT_NE(remote.out.find("--- a/config.json\n+++ b/config.json\n"), std::string::npos);
  EXPECT_EQ(test::snapshot_tree(small), test::snapshot_tree(small)); // served, never written
  EXPECT_TRUE(tmp_is_empty());
}

TEST_F(RemoteTest, JsonNamesTheRepo) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  const Outcome remote =
      run({"--check", "--json", "--remote", "Org/Name@" + std::string(k_commit)});
  EXPECT_EQ(remote.code, 1) << remote.err;
  EXPECT_NE(remote.out.find("\"path\": \"Org/Name\",\n      \"hub\": {\n        \"repo_id\": "
                            "\"Org/Name\",\n        \"revision\": \"" +
                            std::string(k_commit) + "\",\n        \"commit\": \"" + k_commit +
                            "\",\n        \"remote\": true\n      },\n"),
            std::string::npos)
      << remote.out;
}

TEST_F(RemoteTest, InspectAndExplainReadTheRepoToo) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  const Outcome inspect = run({"inspect", "--remote", "Org/Name"});
  EXPECT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("\ncheckpoint  Org/Name\n"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("; run `qpatch --dry-run --remote Org/Name` to see the fix\n"),
            std::string::npos)
      << inspect.out;
  const Outcome explain = run({"explain", "--remote", "Org/Name", "mtp.fc"});
  EXPECT_EQ(explain.code, 1) << explain.err;
  EXPECT_EQ(explain.out.rfind("mtp.fc\n", 0), 0u) << explain.out;
  EXPECT_NE(explain.out.find("run `qpatch --dry-run --remote Org/Name` to see the fix"),
            std::string::npos)
      << explain.out;
  EXPECT_TRUE(tmp_is_empty());
}

TEST_F(RemoteTest, PatchingARemoteRepoIsAUsageErrorThatSuggestsDryRun) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  const Outcome remote = run({"--remote", "Org/Name"});
  EXPECT_EQ(remote.code, 2);
  EXPECT_EQ(remote.err,
            "qpatch: error: --remote reads a Hub repo and cannot patch it: add --check, or "
            "--dry-run for the diff (apply it after 'hf download', or open a pull request with "
            "it)\n");
  EXPECT_EQ(m_server.requests(), 0u);
  const Outcome not_an_id = run({"--check", "--remote", "./local"});
  EXPECT_EQ(not_an_id.code, 2);
  EXPECT_EQ(not_an_id.err,
            "qpatch: error: --remote takes Hub repo ids (ORG/NAME or ORG/NAME@REV); './local' is "
            "not one\n");
  const Outcome recursive = run({"--check", "--remote", "--recursive", "Org/Name"});
  EXPECT_EQ(recursive.code, 2);
  EXPECT_EQ(recursive.err,
            "qpatch: error: --remote reads Hub repos by id; --recursive searches a folder\n");
  const Outcome restore = run({"restore", "--remote", "Org/Name"});
  EXPECT_EQ(restore.code, 2);
  EXPECT_EQ(restore.err,
            "qpatch: error: unknown option '--remote'; run 'qpatch restore --help' for usage\n");
  m_env.set("HF_HUB_OFFLINE", "1");
  const Outcome offline = run({"--check", "--remote", "Org/Name"});
  EXPECT_EQ(offline.code, 2);
  EXPECT_EQ(offline.err,
            "qpatch: error: --remote reads from the Hub, and HF_HUB_OFFLINE (or "
            "TRANSFORMERS_OFFLINE) is set\n");
  EXPECT_EQ(m_server.requests(), 0u);
}

TEST_F(RemoteTest, GatedRepoSaysATokenIsNeededAndWhichTokenWasRefused) {
  m_server.add_repo("Org/Gated", k_commit, write_small(), test::HubServer::Access::gated, "hf_ok");
  const Outcome anonymous = run({"--check", "--remote", "Org/Gated"});
  EXPECT_EQ(anonymous.code, 3);
  EXPECT_EQ(anonymous.err,
            "qpatch: error: Org/Gated: HTTP 401: Org/Gated is a gated repo: a token is needed; "
            "accept its terms at ENDPOINT/Org/Gated, then set HF_TOKEN or run 'hf auth login' "
            "(qpatch reads its token file)\n");
  m_env.set("HF_TOKEN", "hf_wrong");
  const Outcome refused = run({"--check", "--remote", "Org/Gated"});
  EXPECT_EQ(refused.code, 3);
  EXPECT_EQ(refused.err,
            "qpatch: error: Org/Gated: HTTP 403: Org/Gated is a gated repo: the token from "
            "$HF_TOKEN has not been granted access; accept its terms at ENDPOINT/Org/Gated\n");
  // The token `hf auth login` saved, under HF_HOME, when HF_TOKEN is not set.
  m_env.set("HF_TOKEN", std::nullopt);
  std::ofstream(dir() / "home" / "token") << "hf_ok\n";
  const Outcome logged_in = run({"--check", "--remote", "-q", "Org/Gated"});
  EXPECT_EQ(logged_in.code, 1) << logged_in.err;
  EXPECT_TRUE(tmp_is_empty());
}

TEST_F(RemoteTest, MissingRepoAndRevisionAreNamed) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  const Outcome missing = run({"--check", "--remote", "Org/Nope"});
  EXPECT_EQ(missing.code, 3);
  EXPECT_EQ(missing.err,
            "qpatch: error: Org/Nope: HTTP 401: Org/Nope not found on ENDPOINT, or private: if it "
            "is yours or shared with you, set HF_TOKEN or run 'hf auth login' (qpatch reads its "
            "token file)\n");
  // Signed in, the Hub says 404: the repo is missing, or the token may not see it.
  m_env.set("HF_TOKEN", "hf_mine");
  const Outcome signed_in = run({"--check", "--remote", "Org/Nope"});
  EXPECT_EQ(signed_in.code, 3);
  EXPECT_EQ(signed_in.err,
            "qpatch: error: Org/Nope: HTTP 404: Org/Nope not found on ENDPOINT, or the token from "
            "$HF_TOKEN has no access to it\n");
  m_env.set("HF_TOKEN", std::nullopt);
  const Outcome revision = run({"--check", "--remote", "--revision", "v9", "Org/Name"});
  EXPECT_EQ(revision.code, 3);
  EXPECT_EQ(revision.err,
            "qpatch: error: Org/Name: HTTP 404: revision 'v9' not found in Org/Name\n");
}

TEST_F(RemoteTest, ServerErrorsAreRetriedThenReportedWithTheTries) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  m_env.set("QPATCH_HTTP_RETRIES", "2");
  // Retry-After: 0 keeps the test fast; the wait is otherwise 1 s, then 2 s.
  m_server.fail_next(503, 2, 0);
  const Outcome recovered = run({"--check", "--remote", "-q", "Org/Name"});
  EXPECT_EQ(recovered.code, 1) << recovered.err;
  m_server.fail_next(500, 100, 0);
  const Outcome failed = run({"--check", "--remote", "Org/Name"});
  EXPECT_EQ(failed.code, 3);
  EXPECT_EQ(failed.err,
            "qpatch: error: Org/Name: HTTP 500 from the Hub at ENDPOINT (GET "
            "/api/models/Org/Name/revision/main) after 3 tries\n");
}

TEST_F(RemoteTest, AStalledServerTimesOutWithinTheDownloadTimeout) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  m_server.stall(true);
  m_env.set("HF_HUB_DOWNLOAD_TIMEOUT", "1");
  const auto start = std::chrono::steady_clock::now();
  const Outcome stalled = run({"--check", "--remote", "Org/Name"});
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(stalled.code, 3);
  EXPECT_EQ(stalled.err,
            "qpatch: error: Org/Name: no answer from the Hub at ENDPOINT (GET "
            "/api/models/Org/Name/revision/main) within 1 s; a slow link may need a longer "
            "HF_HUB_DOWNLOAD_TIMEOUT\n");
  EXPECT_LT(seconds, 4.0);
  EXPECT_TRUE(tmp_is_empty());
}

// Issue 25: a firewall that lets the Hub through but not the host its redirects lead to must
// send the user to that host, not to the Hub.
TEST_F(RemoteTest, ACdnThatRefusesIsNamedAndNotTheHub) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  m_server.cdn_fault(test::HubServer::CdnFault::refuse);
  const Outcome refused = run({"--check", "--remote", "Org/Name"});
  EXPECT_EQ(refused.code, 3);
  EXPECT_EQ(refused.err,
            "qpatch: error: Org/Name/model-00001-of-00001.safetensors: cannot reach CDN (the file "
            "host the Hub redirected GET /Org/Name/resolve/" +
                std::string(k_commit) +
                "/model-00001-of-00001.safetensors to): Couldn't connect to server; the Hub itself "
                "answered, so a firewall or proxy may be blocking that host\n");
  EXPECT_TRUE(tmp_is_empty());
}

TEST_F(RemoteTest, AStalledCdnIsNamedWithTheDownloadTimeout) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  m_server.cdn_fault(test::HubServer::CdnFault::stall);
  m_env.set("HF_HUB_DOWNLOAD_TIMEOUT", "1");
  const Outcome stalled = run({"--check", "--remote", "Org/Name"});
  EXPECT_EQ(stalled.code, 3);
  EXPECT_EQ(stalled.err,
            "qpatch: error: Org/Name/model-00001-of-00001.safetensors: no answer from CDN (the "
            "file host the Hub redirected GET /Org/Name/resolve/" +
                std::string(k_commit) +
                "/model-00001-of-00001.safetensors to) within 1 s; a slow link may need a longer "
                "HF_HUB_DOWNLOAD_TIMEOUT\n");
}

// The read timeout bounds one try; retries and their backoff (1+2+4+8+8 s) made a stalled Hub
// cost 84 s with the defaults. The whole read has a deadline (30 s by default).
TEST_F(RemoteTest, TheWholeReadStopsAtTheDeadlineWhateverTheRetries) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  m_server.stall(true);
  m_env.set("QPATCH_HTTP_RETRIES", "5");
  m_env.set("HF_HUB_DOWNLOAD_TIMEOUT", "30");
  m_env.set("QPATCH_REMOTE_DEADLINE", "1");
  const auto start = std::chrono::steady_clock::now();
  const Outcome stalled = run({"--check", "--remote", "Org/Name"});
  const auto seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m_env.set("QPATCH_REMOTE_DEADLINE", std::nullopt);
  EXPECT_EQ(stalled.code, 3);
  EXPECT_EQ(stalled.err,
            "qpatch: error: Org/Name: no complete answer from the Hub at ENDPOINT (GET "
            "/api/models/Org/Name/revision/main) within qpatch's 1 s deadline for --remote; "
            "QPATCH_REMOTE_DEADLINE sets a longer one\n");
  EXPECT_LT(seconds, 3.0);
  EXPECT_TRUE(tmp_is_empty());
}

// `--json` prints its document whatever the Hub says: a repo that could not be read is an entry
// with status "error" and error.code "remote_failed", and the other repos are still judged.
TEST_F(RemoteTest, JsonIsADocumentWhenTheHubFails) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  const Outcome both = run({"--check", "--json", "-q", "--remote", "Org/Nope", "Org/Name"});
  EXPECT_EQ(both.code, 3);
  const auto doc = nlohmann::ordered_json::parse(both.out);
  ASSERT_EQ(doc.at("checkpoints").size(), 2u);
  EXPECT_EQ(
      doc["checkpoints"][0].dump(),
      R"js({"path":"Org/Nope","hub":{"repo_id":"Org/Nope","revision":"main","commit":null,)js"
      R"js("remote":true},"quant_method":null,"engine_rules":null,"engines":[],)js"
      R"js("engine_versions":{},"status":"error","findings":[],"changes":[],"backups":[],)js"
      R"js("replaced_links":[],"warnings":[],"notes":[],"mtp":null,"lint":null,)js"
      R"js("written":false,"error":{"code":"remote_failed","path":null,"offset":null,)js"
      R"js("subject":null,"message":"HTTP 401: Org/Nope not found on ENDPOINT, or private: )js"
      R"js(if it is yours or shared with you, set HF_TOKEN or run 'hf auth login' (qpatch )js"
      R"js(reads its token file)"}})js");
  EXPECT_EQ(doc["checkpoints"][1]["status"], "needs-patch");
  EXPECT_EQ(both.err,
            "qpatch: error: Org/Nope: HTTP 401: Org/Nope not found on ENDPOINT, or private: if it "
            "is yours or shared with you, set HF_TOKEN or run 'hf auth login' (qpatch reads its "
            "token file)\n");
  EXPECT_TRUE(tmp_is_empty());
}

// inspect --json too: the refused repo is an entry whose problem is the Hub's answer.
TEST_F(RemoteTest, InspectJsonIsADocumentWhenTheHubFails) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  const Outcome both = run({"inspect", "--json", "--summary", "--remote", "Org/Nope", "Org/Name"});
  EXPECT_EQ(both.code, 3);
  const auto doc = nlohmann::ordered_json::parse(both.out);
  ASSERT_EQ(doc.at("checkpoints").size(), 2u);
  EXPECT_EQ(
      doc["checkpoints"][0].dump(),
      R"js({"path":"Org/Nope","has_index":false,"files":[],"summary":{"files":0,)js"
      R"js("tensors":0,"modules":0,"storage":{},"kinds":{},"header_bytes":0,)js"
      R"js("unindexed_files":[]},"problems":[{"code":"remote_failed","severity":"error",)js"
      R"js("path":"","offset":null,"subject":"","message":"HTTP 401: Org/Nope not found )js"
      R"js(on ENDPOINT, or private: if it is yours or shared with you, set HF_TOKEN or run )js"
      R"js('hf auth login' (qpatch reads its token file)","count":1}]})js");
  EXPECT_EQ(doc["checkpoints"][1]["path"], "Org/Name");
  // The note says what was read of the repo that could be; the error is the refused one's.
  EXPECT_EQ(without_read_note(both.err),
            "qpatch: error: Org/Nope: HTTP 401: Org/Nope not found on ENDPOINT, or private: if it "
            "is yours or shared with you, set HF_TOKEN or run 'hf auth login' (qpatch reads its "
            "token file)\n");
  EXPECT_TRUE(tmp_is_empty());
}

TEST_F(RemoteTest, SigintWhileReadingTheHubStopsAndRemovesTheCopy) {
  m_server.add_repo("Org/Name", k_commit, write_small());
  m_server.stall(true);
  m_env.set("HF_HUB_DOWNLOAD_TIMEOUT", "30");
  const fs::path log = dir() / "log";
  const test::Spawned child =
      test::spawn_qpatch({"--check", "--remote", "Org/Name"}, {"QPATCH_HTTP_RETRIES=0"}, log);
  // Interrupt once the request is on the wire (the copy's directory exists by then).
  for (int i = 0; i < 200 && m_server.requests() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(tmp_is_empty());
  ::kill(child.pid, SIGINT);
  EXPECT_EQ(test::wait_for(child), 130);
  EXPECT_EQ(test::read_bytes(log),
            "qpatch: note: stopped by SIGINT while reading Org/Name from the Hub; nothing was "
            "written\n");
  EXPECT_TRUE(tmp_is_empty());
}

TEST_F(RemoteTest, TruncatedHeaderIsTheLocalReadersErrorUnderTheRepoName) {
  const fs::path small = write_small();
  // The header's length field says more bytes than the file holds.
  const fs::path shard = small / "model-00001-of-00001.safetensors";
  const uint64_t size = fs::file_size(shard);
  fs::resize_file(shard, 20);
  const Outcome local = run({"--check", small.string()});
  m_server.add_repo("Org/Name", k_commit, small);
  const Outcome remote = run({"--check", "--remote", "Org/Name"});
  EXPECT_EQ(remote.code, 3);
  EXPECT_EQ(remote.code, local.code);
  EXPECT_EQ(without_read_note(remote.err), as_repo(local.err, small, "Org/Name"));
  EXPECT_NE(remote.err.find("qpatch: error: Org/Name/model-00001-of-00001.safetensors: "),
            std::string::npos)
      << remote.err;
  EXPECT_LT(20u, size);
}

TEST_F(RemoteTest, AnEmptyShardIsTheLocalReadersErrorToo) {
  const fs::path empty = dir() / "empty";
  fs::create_directories(empty);
  std::ofstream(empty / "model.safetensors", std::ios::binary).flush();
  std::ofstream(empty / "config.json") << "{\"architectures\": [\"LlamaForCausalLM\"]}\n";
  m_server.add_repo("Org/Empty", k_commit, empty);
  const Outcome local = run({"--check", empty.string()});
  const Outcome remote = run({"--check", "--remote", "Org/Empty"});
  EXPECT_EQ(remote.code, 3);
  EXPECT_EQ(without_read_note(remote.err), as_repo(local.err, empty, "Org/Empty"));
}

TEST_F(RemoteTest, AHeaderLongerThanTheFirstRangeIsCompletedByASecondOne) {
  // 4,000 tensors: a 200 kB header, past the first 100,001 bytes.
  std::vector<test::TensorDesc> tensors;
  for (int i = 0; i < 4000; ++i) {
    tensors.push_back({"model.layers." + std::to_string(i) + ".norm.weight", "BF16", {8}});
  }
  uint64_t data_size = 0;
  const std::string header = test::header_json(tensors, data_size);
  ASSERT_GT(header.size(), 150'000u);
  const fs::path long_header = dir() / "long";
  fs::create_directories(long_header);
  std::ofstream(long_header / "model.safetensors", std::ios::binary)
      << test::shard_bytes(header, data_size);
  std::ofstream(long_header / "config.json") << "{\"architectures\": [\"LlamaForCausalLM\"]}\n";
  m_server.add_repo("Org/Long", k_commit, long_header);
  const Outcome local = run({"inspect", "--summary", long_header.string()});
  const Outcome remote = run({"inspect", "--summary", "--remote", "Org/Long"});
  EXPECT_EQ(remote.code, 0) << remote.err;
  EXPECT_EQ(remote.out, as_repo(local.out, long_header, "Org/Long"));
  std::vector<std::string> cdn;
  for (const std::string& line : m_server.log()) {
    if (line.find("port=cdn") != std::string::npos) {
      cdn.push_back(line.substr(line.find(" range=")));
    }
  }
  EXPECT_EQ(cdn,
            (std::vector<std::string>{" range=bytes=0-100000 auth=no port=cdn",
                                      " range=bytes=100001-" + std::to_string(header.size() + 7) +
                                          " auth=no port=cdn"}));
}

TEST_F(RemoteTest, AServerThatIgnoresRangesStillCostsOnlyTheHeaders) {
  const fs::path sample = QPATCH_SAMPLE_DIR;
  m_server.add_repo("Org/Sample", k_commit, sample);
  m_server.ignore_ranges(true);
  const Outcome remote = run({"--check", "--remote", "-q", "Org/Sample"});
  EXPECT_EQ(remote.code, 1) << remote.err;
  // What the server pushed into socket buffers before qpatch hung up, not 19.5 GB.
  EXPECT_LT(m_server.body_bytes(), uint64_t{64'000'000}) << m_server.body_bytes();
}

} // namespace
} // namespace qpatch
