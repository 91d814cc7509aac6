// SPDX-License-Identifier: Apache-2.0
// A Hugging Face Hub on loopback for the --remote tests: the endpoints huggingface_hub and
// qpatch use (GET /api/models/{repo}/revision/{rev}?blobs=true and
// GET /{repo}/resolve/{rev}/{file}), HTTP ranges, the Hub's redirect of LFS files to a CDN on
// another port, gated and private repos with the Hub's status codes and X-Error-Code headers, and
// faults on demand (a server error, a stall). Files are served from a local checkpoint directory
// with pread, so a 17 GB sparse sample costs nothing, and every body byte sent is counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace qpatch::test {

class HubServer {
public:
  enum class Access { public_repo, gated, private_repo };

  HubServer();
  ~HubServer();
  HubServer(const HubServer&) = delete;
  HubServer& operator=(const HubServer&) = delete;

  // "http://127.0.0.1:PORT", what HF_ENDPOINT is set to.
  std::string endpoint() const;

  // Serve `dir`'s top-level files as `repo_id` at `commit`, which refs/main (and each of
  // `branches`) names. `access`: who may read it; `token` is the one that is granted.
  void add_repo(const std::string& repo_id,
                const std::string& commit,
                const std::filesystem::path& dir,
                Access access = Access::public_repo,
                const std::string& token = "",
                const std::vector<std::string>& branches = {});

  // The next `count` requests are answered with `status` (and Retry-After: `retry_after`).
  void fail_next(int status, int count, std::optional<int> retry_after = std::nullopt);
  // Requests are read and never answered until the server stops.
  void stall(bool on);
  // What the CDN (the host shards are redirected to) does: answer, refuse connections (the
  // redirect then names a port nothing listens on), or read requests and never answer.
  enum class CdnFault { none, refuse, stall };
  void cdn_fault(CdnFault fault);
  // Where the Hub's redirects send shards now: "http://127.0.0.1:PORT".
  std::string cdn_origin() const;
  // Ignore Range headers: answer 200 with the whole file.
  void ignore_ranges(bool on);

  uint64_t body_bytes() const { return m_body_bytes.load(); }
  size_t requests() const { return m_requests.load(); }
  // "GET /path range=a-b auth=yes|no port=hub|cdn", one per request, in arrival order.
  std::vector<std::string> log() const;

private:
  struct Repo {
    std::string commit;
    std::filesystem::path dir;
    Access access = Access::public_repo;
    std::string token;
    std::vector<std::string> branches;
  };
  struct Request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers; // lower-case names
  };

  void accept_loop(int listener, bool cdn);
  void serve(int fd, bool cdn);
  std::string respond(const Request& request, bool cdn, int fd);
  std::string file_response(const std::filesystem::path& file, const Request& request, int fd);
  void send_all(int fd, const std::string& bytes);

  int m_hub_fd = -1;
  int m_cdn_fd = -1;
  int m_hub_port = 0;
  int m_cdn_port = 0;
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_stall{false};
  std::atomic<bool> m_ignore_ranges{false};
  std::atomic<CdnFault> m_cdn_fault{CdnFault::none};
  int m_closed_port = 0; // a loopback port nothing listens on
  std::atomic<uint64_t> m_body_bytes{0};
  std::atomic<size_t> m_requests{0};
  mutable std::mutex m_mutex; // guards everything below
  std::map<std::string, Repo> m_repos;
  int m_fail_status = 0;
  int m_fail_count = 0;
  std::optional<int> m_retry_after;
  std::vector<std::string> m_log;
  std::vector<std::thread> m_threads;
  std::thread m_hub_thread;
  std::thread m_cdn_thread;
};

} // namespace qpatch::test
