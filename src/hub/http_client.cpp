// SPDX-License-Identifier: Apache-2.0
#include "curl_library.hpp"

#include <qpatch/hub/http_client.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <deque>
#include <list>
#include <stdexcept>
#include <string_view>

namespace qpatch::hub {

namespace {

using Clock = std::chrono::steady_clock;

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) {
      return false;
    }
  }
  return true;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n' || text.back() == ' ')) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  if (text.empty() || text.size() > 19) {
    return std::nullopt;
  }
  uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

// _DEFAULT_RETRY_ON_STATUS_CODES in utils/_http.py (huggingface_hub ee0a451).
bool retryable_status(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// What requests/httpx raise as ConnectionError or Timeout, which http_backoff retries; a host
// that does not resolve is not retried (it will not resolve a second later).
bool retryable_transport(CURLcode code) {
  switch (code) {
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return true;
  default:
    return false;
  }
}

struct Transfer {
  HttpRequest request;
  HttpBatch::Done done;
  HttpResponse response;
  Clock::time_point not_before{};
  std::optional<double> retry_after; // seconds, from the last response
  std::optional<uint64_t> content_length;
  bool capped = false; // stopped on purpose at max_body
  curl_slist* headers = nullptr;
  CURL* easy = nullptr;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  std::string& body = transfer->response.body;
  const uint64_t room =
      transfer->request.max_body - std::min<uint64_t>(body.size(), transfer->request.max_body);
  if (bytes > room) {
    body.append(data, static_cast<size_t>(room));
    transfer->capped = true;
    return 0; // stop the transfer: what qpatch wants has arrived
  }
  body.append(data, bytes);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  const std::string_view line(data, bytes);
  HttpResponse& response = transfer->response;
  if (line.rfind("HTTP/", 0) == 0) {
    // Each response of a redirect chain starts anew; only the last one counts.
    response.total_size.reset();
    transfer->content_length.reset();
    response.error_code.clear();
    response.error_message.clear();
    transfer->retry_after.reset();
  } else if (iequals_prefix(line, "content-range:")) {
    const std::string_view value = trimmed(line.substr(14));
    if (const size_t slash = value.rfind('/'); slash != std::string_view::npos) {
      response.total_size = parse_u64(value.substr(slash + 1));
    }
  } else if (iequals_prefix(line, "content-length:")) {
    transfer->content_length = parse_u64(trimmed(line.substr(15)));
  } else if (iequals_prefix(line, "x-error-code:")) {
    response.error_code = std::string(trimmed(line.substr(13)));
  } else if (iequals_prefix(line, "x-error-message:")) {
    response.error_message = std::string(trimmed(line.substr(16)));
  } else if (iequals_prefix(line, "retry-after:")) {
    // Delay-seconds only, as _parse_retry_after does; an HTTP date is ignored.
    if (const auto seconds = parse_u64(trimmed(line.substr(12)))) {
      transfer->retry_after = static_cast<double>(*seconds);
    }
  }
  return bytes;
}

} // namespace

struct HttpBatch::State {
  const CurlLibrary* curl = nullptr;
  HttpOptions options;
  CURLM* multi = nullptr;
  std::list<Transfer> transfers; // stable addresses: libcurl holds pointers into them
  std::deque<Transfer*> waiting;
  size_t running = 0;
  uint64_t received = 0;

  void start(Transfer& transfer) {
    transfer.response.body.clear();
    transfer.response.transport_error.clear();
    transfer.response.timed_out = false;
    transfer.response.deadline_passed = false;
    transfer.response.status = 0;
    transfer.capped = false;
    ++transfer.response.attempts;
    CURL* easy = curl->easy_init();
    if (easy == nullptr) {
      throw std::runtime_error("libcurl could not create a transfer");
    }
    transfer.easy = easy;
    curl->easy_setopt(easy, CURLOPT_URL, transfer.request.url.c_str());
    curl->easy_setopt(easy, CURLOPT_PRIVATE, &transfer);
    curl->easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl->easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
    curl->easy_setopt(easy, CURLOPT_MAXREDIRS, 10L);
    curl->easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl->easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl->easy_setopt(easy, CURLOPT_USERAGENT, options.user_agent.c_str());
    curl->easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, options.timeout_seconds);
    // No byte for `timeout` seconds: the read timeout requests/httpx apply.
    curl->easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl->easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, options.timeout_seconds);
    if (options.deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*options.deadline - Clock::now());
      curl->easy_setopt(
          easy, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(1, left.count())));
    }
    curl->easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl->easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
    curl->easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl->easy_setopt(easy, CURLOPT_HEADERDATA, &transfer);
    std::string range;
    if (transfer.request.range) {
      range = std::to_string(transfer.request.range->first) + "-" +
              std::to_string(transfer.request.range->second);
      curl->easy_setopt(easy, CURLOPT_RANGE, range.c_str()); // libcurl copies the string
    }
    if (transfer.headers == nullptr && options.token) {
      // A custom Authorization header goes to the first host only (libcurl >= 7.58; the port
      // and scheme count too since 7.83), so a redirect to a CDN does not carry the token.
      transfer.headers =
          curl->slist_append(nullptr, ("Authorization: Bearer " + *options.token).c_str());
    }
    if (transfer.headers != nullptr) {
      curl->easy_setopt(easy, CURLOPT_HTTPHEADER, transfer.headers);
    }
    curl->multi_add_handle(multi, easy);
    ++running;
  }

  // The transfer `easy` ended with `code`: retry it, or hand its response over.
  void finish(CURL* easy, CURLcode code) {
    Transfer* transfer = nullptr;
    curl->easy_getinfo(easy, CURLINFO_PRIVATE, &transfer);
    HttpResponse& response = transfer->response;
    long status = 0;
    curl->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    const char* url = nullptr;
    curl->easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &url);
    response.url = url != nullptr ? url : transfer->request.url;
    response.requested_url = transfer->request.url;
    response.status = status;
    if (!response.total_size && status == 200) {
      // A 200 to a Range request carries the whole file: its length is the total.
      response.total_size = transfer->content_length;
    }
    received += response.body.size();
    const bool stopped_on_purpose = code == CURLE_WRITE_ERROR && transfer->capped;
    if (code != CURLE_OK && !stopped_on_purpose) {
      response.transport_error = curl->easy_strerror(code);
      response.timed_out = code == CURLE_OPERATION_TIMEDOUT;
      // libcurl's own timer may fire a few milliseconds before the deadline it was given.
      response.deadline_passed = response.timed_out && options.deadline &&
                                 Clock::now() + std::chrono::milliseconds(100) >= *options.deadline;
    }
    curl->multi_remove_handle(multi, easy);
    curl->easy_cleanup(easy);
    transfer->easy = nullptr;
    --running;
    const bool retry =
        response.transport_error.empty() ? retryable_status(status) : retryable_transport(code);
    if (retry && response.attempts <= options.retries && !response.deadline_passed) {
      const double backoff = std::min(
          options.max_wait_seconds,
          options.base_wait_seconds * std::pow(2.0, static_cast<double>(response.attempts - 1)));
      const double wait = transfer->retry_after
                              ? std::min(options.max_wait_seconds, *transfer->retry_after)
                              : backoff;
      transfer->not_before = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(std::max(0.0, wait)));
      if (!options.deadline || transfer->not_before < *options.deadline) {
        waiting.push_back(transfer);
        return;
      }
      // The next try would start past the deadline: this answer is the last.
    }
    if (transfer->headers != nullptr) {
      curl->slist_free_all(transfer->headers);
      transfer->headers = nullptr;
    }
    transfer->done(response); // may add transfers
  }
};

std::optional<std::string> HttpBatch::unavailable() {
  std::string why;
  if (curl_library(why) == nullptr) {
    return why;
  }
  return std::nullopt;
}

HttpBatch::HttpBatch(HttpOptions options) : m_state(std::make_unique<State>()) {
  std::string why;
  m_state->curl = curl_library(why);
  if (m_state->curl == nullptr) {
    throw std::runtime_error(why); // callers ask unavailable() first
  }
  const CurlLibrary* curl = m_state->curl;
  m_state->options = std::move(options);
  m_state->options.parallel = std::max(1u, m_state->options.parallel);
  m_state->multi = curl->multi_init();
  if (m_state->multi == nullptr) {
    throw std::runtime_error("libcurl could not create a transfer set");
  }
}

HttpBatch::~HttpBatch() {
  const CurlLibrary* curl = m_state->curl;
  for (Transfer& transfer : m_state->transfers) {
    if (transfer.easy != nullptr) {
      curl->multi_remove_handle(m_state->multi, transfer.easy);
      curl->easy_cleanup(transfer.easy);
    }
    if (transfer.headers != nullptr) {
      curl->slist_free_all(transfer.headers);
    }
  }
  curl->multi_cleanup(m_state->multi);
}

void HttpBatch::add(HttpRequest request, Done done) {
  Transfer& transfer = m_state->transfers.emplace_back();
  transfer.request = std::move(request);
  transfer.done = std::move(done);
  m_state->waiting.push_back(&transfer);
}

bool HttpBatch::run() {
  State& state = *m_state;
  const CurlLibrary* curl = state.curl;
  while (!state.waiting.empty() || state.running > 0) {
    if (state.options.cancelled && state.options.cancelled()) {
      return false;
    }
    // Start what may start: not past the parallel cap, and not before its backoff has passed.
    const Clock::time_point now = Clock::now();
    std::optional<Clock::time_point> next_wake;
    for (auto it = state.waiting.begin(); it != state.waiting.end();) {
      if (state.running >= state.options.parallel) {
        break;
      }
      if ((*it)->not_before <= now) {
        Transfer* transfer = *it;
        it = state.waiting.erase(it);
        state.start(*transfer);
      } else {
        next_wake = next_wake ? std::min(*next_wake, (*it)->not_before) : (*it)->not_before;
        ++it;
      }
    }
    int still_running = 0;
    curl->multi_perform(state.multi, &still_running);
    int queued = 0;
    while (CURLMsg* message = curl->multi_info_read(state.multi, &queued)) {
      if (message->msg == CURLMSG_DONE) {
        state.finish(message->easy_handle, message->data.result);
      }
    }
    // Wake for socket activity, a backoff that ends, or at least every 100 ms to poll
    // `cancelled`.
    int wait_ms = 100;
    if (next_wake) {
      const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(*next_wake - now);
      wait_ms = static_cast<int>(std::clamp<long long>(until.count(), 0, 100));
    }
    if (state.running > 0) {
      curl->multi_poll(state.multi, nullptr, 0, wait_ms, nullptr);
    } else if (!state.waiting.empty() && wait_ms > 0) {
      curl->multi_poll(state.multi, nullptr, 0, wait_ms, nullptr); // a plain sleep
    }
  }
  return true;
}

uint64_t HttpBatch::bytes_received() const {
  return m_state->received;
}

std::string url_quote(const std::string& text, bool keep_slash) {
  static const char* k_hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    // urllib.parse.quote's always-safe set: letters, digits and "_.-~".
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || c == '_' || c == '.' || c == '-' || c == '~' || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += k_hex[byte >> 4];
      out += k_hex[byte & 15];
    }
  }
  return out;
}

} // namespace qpatch::hub
