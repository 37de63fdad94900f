// What the input was (path, sizes, compression, encoding): carried into every report.
#pragma once

#include <cstdint>
#include <string>

#include "memsnap/io/byte_source.hpp"

namespace memsnap::snapshot {

/// What the input was, for reports (`input` in JSON output).
struct InputInfo {
  std::string path;
  uint64_t bytes = 0;          // as stored (compressed size when compressed)
  uint64_t decoded_bytes = 0;  // after decompression
  io::Compression compression = io::Compression::None;
  io::Encoding encoding = io::Encoding::Pickle;
  int pickle_protocol = -1;  // -1 for JSON input
};

}  // namespace memsnap::snapshot
