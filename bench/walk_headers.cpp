// SPDX-License-Identifier: Apache-2.0
// The floor for whole-process benchmarks: read 8 + N bytes of every *.safetensors file in a
// directory and walk every header entry with simdjson's on-demand parser (name, dtype, shape,
// offsets), doing nothing else. qpatch's own work is measured as a ratio to this.
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: walk_headers DIR\n");
    return 2;
  }
  simdjson::ondemand::parser parser;
  uint64_t entries = 0;
  uint64_t checksum = 0;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    if (entry.path().extension() != ".safetensors") {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    unsigned char prefix[8];
    in.read(reinterpret_cast<char*>(prefix), 8);
    uint64_t length = 0;
    for (int i = 0; i < 8; ++i) {
      length |= static_cast<uint64_t>(prefix[i]) << (8 * i);
    }
    simdjson::padded_string text(static_cast<size_t>(length));
    in.read(text.data(), static_cast<std::streamsize>(length));
    simdjson::ondemand::document doc = parser.iterate(text);
    for (auto field : doc.get_object()) {
      std::string_view key = field.unescaped_key();
      ++entries;
      checksum += key.size();
      if (key == "__metadata__") {
        continue;
      }
      simdjson::ondemand::object tensor = field.value().get_object();
      for (auto member : tensor) {
        std::string_view name = member.unescaped_key();
        if (name == "dtype") {
          checksum += std::string_view(member.value().get_string()).size();
        } else {
          for (auto value : member.value().get_array()) {
            checksum += uint64_t(value.get_uint64());
          }
        }
      }
    }
  }
  std::printf("%llu entries (checksum %llu)\n",
              static_cast<unsigned long long>(entries),
              static_cast<unsigned long long>(checksum));
  return 0;
}
