// SPDX-License-Identifier: Apache-2.0
// HTTP GETs for `qpatch --remote`, many at once, over libcurl (Debian's libcurl4, loaded on use):
// TLS, proxies from the environment (http_proxy, https_proxy, no_proxy), redirects and
// connection reuse are libcurl's, not ours. What qpatch adds is the policy huggingface_hub's own
// client follows (utils/_http.py, huggingface_hub ee0a451):
//   - retries of a connection failure, a timeout, or HTTP 429/500/502/503/504
//     (_DEFAULT_RETRY_ON_STATUS_CODES), waiting 1 s, then twice as long each time up to 8 s
//     (http_backoff: base_wait_time=1, max_wait_time=8), or what Retry-After asks (capped alike);
//   - a read timeout (HF_HUB_DOWNLOAD_TIMEOUT, default 10 s): a transfer that receives nothing for
//     that long fails;
//   - the token as "Authorization: Bearer", which libcurl sends to the first host only: a
//     redirect to the CDN that serves LFS files (another host or port) gets no token.
// Redirects are followed to http(s) URLs only. Values only; nothing is printed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace qpatch::hub {

struct HttpRequest {
  std::string url;
  // Bytes [first, last] (an HTTP Range); nothing: the whole body.
  std::optional<std::pair<uint64_t, uint64_t>> range;
  // Keep at most this many body bytes; the transfer stops there (a server that ignores Range
  // sends a whole shard, and qpatch wants its header only).
  uint64_t max_body = UINT64_MAX;
};

struct HttpResponse {
  long status = 0;              // the final HTTP status, 0 when no response came
  std::string transport_error;  // libcurl's text when the transfer failed, else ""
  bool timed_out = false;       // the transfer failed for want of data within the timeout
  bool deadline_passed = false; // it failed because HttpOptions::deadline passed
  std::string body;
  std::optional<uint64_t> total_size; // Content-Range's "/TOTAL", else a 200's Content-Length
  std::string error_code;             // the Hub's X-Error-Code ("GatedRepo", "RepoNotFound"...)
  std::string error_message;          // the Hub's X-Error-Message
  std::string url;                    // the URL last tried, after redirects
  std::string requested_url;          // HttpRequest::url, before any redirect
  int attempts = 0;                   // 1 + the retries made
  bool ok() const { return transport_error.empty() && status >= 200 && status < 300; }
};

struct HttpOptions {
  std::optional<std::string> token; // sent as "Authorization: Bearer TOKEN"
  long timeout_seconds = 10;
  int retries = 5;
  double base_wait_seconds = 1.0;
  double max_wait_seconds = 8.0;
  // No transfer runs past this instant, and no retry starts after it (huggingface_hub has no
  // such bound: a stalled server costs it 6 read timeouts and the backoffs between them).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  unsigned parallel = 8; // transfers at once
  std::string user_agent = "qpatch";
  // Polled while transfers run; true stops them all (a signal, say).
  std::function<bool()> cancelled;
};

// A batch of GETs run together. Each request's callback gets its final response (after retries)
// and may add further requests to the same batch (the rest of a long header).
class HttpBatch {
public:
  using Done = std::function<void(HttpResponse&)>;
  // Why no batch can run (libcurl is loaded on first use, hub/curl_library.hpp), or nothing.
  static std::optional<std::string> unavailable();
  explicit HttpBatch(HttpOptions options);
  ~HttpBatch();
  HttpBatch(const HttpBatch&) = delete;
  HttpBatch& operator=(const HttpBatch&) = delete;

  void add(HttpRequest request, Done done);
  // Run until every request (and every one added meanwhile) is done; false when cancelled.
  bool run();
  // Body bytes received over all transfers, retries included.
  uint64_t bytes_received() const;

private:
  struct State;
  std::unique_ptr<State> m_state;
};

// "a b/c" -> "a%20b/c": a path for a URL, '/' kept (urllib.parse.quote, as hf_hub_url uses it).
std::string url_quote(const std::string& text, bool keep_slash = true);

} // namespace qpatch::hub
