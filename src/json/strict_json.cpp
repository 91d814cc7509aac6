// SPDX-License-Identifier: Apache-2.0
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

namespace qpatch::json {
namespace {

// nlohmann's what() starts "[json.exception.parse_error.101] parse error at line 1, column 5: ";
// the position is reported separately, so keep only the explanation.
std::string short_parse_message(const std::string& what) {
  const size_t colon = what.find(": ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

// Thrown from the parse callback to stop at the first problem; never escapes this file.
struct StrictViolation {
  std::string pointer;
  std::string message;
};

// One open object or array while parsing, to name where a duplicate key sits.
struct Frame {
  bool is_object = false;
  std::set<std::string> keys;
  std::string key;
  size_t index = 0;
};

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (const char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string frames_pointer(const std::vector<Frame>& frames) {
  std::string out;
  for (const Frame& frame : frames) {
    out += '/';
    out += frame.is_object ? escape_pointer_token(frame.key) : std::to_string(frame.index);
  }
  return out;
}

} // namespace

std::optional<SyntaxLocation> locate_syntax_error(std::string_view text) {
  // A SAX pass that builds nothing: linear time even for a 60 MB index.
  struct Handler : nlohmann::json_sax<Json> {
    std::optional<SyntaxLocation> found;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position,
                     const std::string&,
                     const nlohmann::detail::exception& error) override {
      found = SyntaxLocation{position == 0 ? 0 : position - 1, short_parse_message(error.what())};
      return false;
    }
  } handler;
  (void)Json::sax_parse(text.begin(), text.end(), &handler);
  return handler.found;
}

std::optional<NegativeZero> find_negative_zero_in_tensor_fields(std::string_view text) {
  struct Handler : nlohmann::json_sax<Json> {
    std::vector<std::string> keys; // keys[depth-1] is the key of the open object at that depth
    size_t depth = 0;
    std::optional<NegativeZero> found;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t value) override {
      if (value == 0 && depth == 3 && keys.size() >= 2 && keys[0] != "__metadata__" &&
          (keys[1] == "shape" || keys[1] == "data_offsets")) {
        found = NegativeZero{0, keys[0], keys[1]};
        return false;
      }
      return true;
    }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override {
      ++depth;
      keys.resize(depth);
      return true;
    }
    bool key(string_t& key) override {
      keys[depth - 1] = key;
      return true;
    }
    bool end_object() override {
      --depth;
      return true;
    }
    bool start_array(std::size_t) override {
      ++depth;
      keys.resize(depth);
      return true;
    }
    bool end_array() override {
      --depth;
      return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
      return false;
    }
  } handler;
  (void)Json::sax_parse(text.begin(), text.end(), &handler);
  if (!handler.found) {
    return std::nullopt;
  }
  // The SAX interface has no positions: find the token after the tensor's key.
  size_t from = text.find("\"" + handler.found->tensor + "\"");
  from = from == std::string_view::npos ? 0 : from;
  for (size_t pos = text.find("-0", from); pos != std::string_view::npos;
       pos = text.find("-0", pos + 1)) {
    const char next = pos + 2 < text.size() ? text[pos + 2] : ' ';
    if (next != '.' && next != 'e' && next != 'E' && !(next >= '0' && next <= '9')) {
      handler.found->pos = pos;
      break;
    }
  }
  return handler.found;
}

namespace {

// Python's json (and so transformers, vLLM and SGLang reading config.json) accepts the bare
// constants NaN, Infinity and -Infinity as numbers; nlohmann does not. They are replaced by
// numbers of the same length before nlohmann reads the text (so every error offset stays
// right), and the values they stand for are put back as each is parsed. `ordinal` counts the
// primitive values in document order, as nlohmann's parser callback reports them.
struct PythonConstant {
  size_t ordinal = 0;
  double value = 0;
};

bool is_delimiter(char c) {
  return c == ',' || c == ']' || c == '}' || c == ':' || c == ' ' || c == '\n' || c == '\r' ||
         c == '\t' || c == '[' || c == '{' || c == '"';
}

std::vector<PythonConstant> replace_python_constants(std::string& text) {
  // Same-length stand-ins nlohmann reads as numbers.
  static const std::array<std::tuple<std::string_view, std::string_view, double>, 3> k_constants{
      {{"NaN", "0e0", std::numeric_limits<double>::quiet_NaN()},
       {"Infinity", "1.000000", std::numeric_limits<double>::infinity()},
       {"-Infinity", "-1.000000", -std::numeric_limits<double>::infinity()}}};
  std::vector<PythonConstant> found;
  size_t ordinal = 0;
  for (size_t pos = 0; pos < text.size();) {
    const char c = text[pos];
    if (c == '"') {
      size_t end = pos + 1;
      while (end < text.size() && text[end] != '"') {
        end += text[end] == '\\' ? size_t{2} : size_t{1};
      }
      end = std::min(end + 1, text.size());
      size_t next = end;
      while (next < text.size() && (text[next] == ' ' || text[next] == '\n' || text[next] == '\r' ||
                                    text[next] == '\t')) {
        ++next;
      }
      if (next >= text.size() || text[next] != ':') {
        ++ordinal; // a string value, not a key
      }
      pos = end;
      continue;
    }
    if (is_delimiter(c)) {
      ++pos;
      continue;
    }
    size_t end = pos;
    while (end < text.size() && !is_delimiter(text[end])) {
      ++end;
    }
    const std::string token = text.substr(pos, end - pos);
    for (const auto& [name, stand_in, value] : k_constants) {
      if (token == name) {
        text.replace(pos, name.size(), stand_in);
        found.push_back({ordinal, value});
      }
    }
    ++ordinal;
    pos = end;
  }
  return found;
}

} // namespace

Result<Json> parse_strict(std::string_view original, std::string_view path) {
  std::string replaced(original);
  const std::vector<PythonConstant> constants = replace_python_constants(replaced);
  const std::string_view text = constants.empty() ? original : std::string_view(replaced);
  size_t primitive = 0;
  size_t next_constant = 0;
  const auto fail = [&](std::optional<uint64_t> offset, std::string subject, std::string message) {
    Error error = make_error(
        ErrorCode::invalid_json, std::string(path), offset, std::move(subject), std::move(message));
    error.subject_kind = "at";
    return error;
  };
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
    return fail(0, "", "file starts with a UTF-8 byte-order mark, which Python's json rejects");
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return fail(nul, "", "NUL byte in JSON text");
  }
  std::vector<Frame> frames;
  const Json::parser_callback_t callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    using Event = Json::parse_event_t;
    if (depth > static_cast<int>(limits::k_max_json_depth)) {
      throw StrictViolation{frames_pointer(frames),
                            "JSON nested deeper than " + std::to_string(limits::k_max_json_depth) +
                                " levels"};
    }
    switch (event) {
    case Event::object_start:
    case Event::array_start: {
      Frame frame;
      frame.is_object = event == Event::object_start;
      frames.push_back(std::move(frame));
      break;
    }
    case Event::key: {
      Frame& top = frames.back();
      top.key = parsed.get<std::string>();
      if (!top.keys.insert(top.key).second) {
        const std::string where = frames_pointer(frames);
        throw StrictViolation{where, "key \"" + top.key + "\" appears twice in one object"};
      }
      break;
    }
    case Event::object_end:
    case Event::array_end:
      frames.pop_back();
      if (!frames.empty() && !frames.back().is_object) {
        ++frames.back().index;
      }
      break;
    case Event::value:
      if (!frames.empty() && !frames.back().is_object) {
        ++frames.back().index;
      }
      if (next_constant < constants.size() && constants[next_constant].ordinal == primitive) {
        parsed = constants[next_constant++].value;
      }
      ++primitive;
      break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), callback);
  } catch (const StrictViolation& violation) {
    Error error = fail(std::nullopt, violation.pointer, violation.message);
    error.code = violation.message.find("twice") != std::string::npos ? ErrorCode::duplicate_key
                                                                      : ErrorCode::invalid_json;
    return error;
  } catch (const Json::parse_error& e) {
    return fail(e.byte == 0 ? 0 : e.byte - 1, "", short_parse_message(e.what()));
  } catch (const Json::out_of_range& e) {
    // A number no double holds (1e400): nlohmann throws out_of_range 406, not a parse_error,
    // and without a position; its SAX pass reports the same as a syntax error, with one.
    // (Found by fuzz/editor_fuzzer.cpp; it used to escape as a crash, exit 70.)
    const std::string what = e.what();
    const size_t bracket = what.find("] ");
    const auto where = locate_syntax_error(text);
    return fail(where ? std::optional<uint64_t>(where->pos) : std::nullopt,
                "",
                bracket == std::string::npos ? what : what.substr(bracket + 2));
  }
}

Result<std::string>
read_file(const std::filesystem::path& file, std::string_view display_path, uint64_t max_size) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) {
    return make_error(ErrorCode::io_error,
                      std::string(display_path),
                      std::nullopt,
                      "",
                      "cannot read: " + ec.message());
  }
  if (size > max_size) {
    return make_error(ErrorCode::limit_exceeded,
                      std::string(display_path),
                      std::nullopt,
                      "",
                      "file is " + std::to_string(size) + " bytes, over the " +
                          std::to_string(max_size) + "-byte limit");
  }
  std::string text(static_cast<size_t>(size), '\0');
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  size_t done = 0;
  int error = fd < 0 ? errno : 0;
  while (fd >= 0 && error == 0 && done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      error = n < 0 ? errno : -1;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (fd >= 0) {
    ::close(fd);
  }
  if (error != 0) {
    return make_error(ErrorCode::io_error,
                      std::string(display_path),
                      std::nullopt,
                      "",
                      std::string("cannot read the whole file: ") +
                          (error > 0 ? std::strerror(error) : "it ended early"));
  }
  return text;
}

bool same_document(const Json& a, const Json& b) {
  if (a.is_number_float() && b.is_number_float() && std::isnan(a.get<double>()) &&
      std::isnan(b.get<double>())) {
    return true;
  }
  if (a.type() != b.type() || a.size() != b.size()) {
    return false;
  }
  if (a.is_object()) {
    auto x = a.begin();
    auto y = b.begin();
    for (; x != a.end(); ++x, ++y) {
      if (x.key() != y.key() || !same_document(x.value(), y.value())) {
        return false;
      }
    }
    return true;
  }
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!same_document(a[i], b[i])) {
        return false;
      }
    }
    return true;
  }
  return a == b;
}

std::string pointer_to_string(const Json::json_pointer& pointer) {
  return pointer.to_string();
}

} // namespace qpatch::json
