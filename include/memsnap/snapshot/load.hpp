// One call from a path to a Snapshot: read, detect, decode, build.
#pragma once

#include <cstdint>
#include <string>

#include "memsnap/io/byte_source.hpp"
#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/snapshot/input.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::snapshot {

struct LoadOptions {
  io::ReadOptions read;
  pickle::Limits limits;
  /// Progress of a long load, (bytes done, bytes in this phase), every few MiB: handed to
  /// the decompressor (compressed bytes) and then to the parser (decoded bytes); a parser
  /// calls it through ProgressTicker in its main loop. The JSON reader does not report.
  ProgressFn progress;
};

struct Loaded {
  InputInfo input;
  Snapshot snapshot;
};

/// Loads and builds. Throws InputError (without the path: callers add it).
Loaded load_snapshot(const std::string& path, const LoadOptions& options = {});
/// The same from bytes already in memory (tests, fuzzing).
Loaded load_snapshot_bytes(std::vector<uint8_t> bytes, const std::string& name, const LoadOptions& options = {});

}  // namespace memsnap::snapshot
