// One call from a path to a Snapshot: read, detect, decode, build.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "memsnap/io/byte_source.hpp"
#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/memory_budget.hpp"

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

/// Which parser reads a pickle (a JSON snapshot has one reader).
enum class Parser : uint8_t {
  Auto,     // the fast path, handing over to the general parser at any form it does not handle
  General,  // the unpickler and the schema walk only: to narrow down a wrong figure
  Fast,     // the fast path only: an input it would hand over is an InputError
};

struct LoadOptions {
  io::ReadOptions read;
  Parser parser = Parser::Auto;
  /// Cores the load may use: from 2, a second thread decodes compressed input, reads a large
  /// file ahead or parses its second half. The library never asks the machine (nor the
  /// environment): the CLI passes its core count.
  unsigned threads = 2;
  /// Tests: a parse in two halves (from 2 threads and 64 MiB of plain input) waits for its
  /// second thread at each step of the hand-over, so that the second half runs whatever the
  /// machine's load (else a first half that outruns a second thread not yet scheduled reads
  /// on alone, as it should). The result is the same either way.
  bool split_wait = false;
  /// Where the parsers say what they chose, one line at a time (where the fast path gave way,
  /// how a parse in two halves went); empty: silent.
  std::function<void(const std::string&)> diagnostics;
  pickle::Limits limits;
  /// Progress of a long load, (bytes done, bytes in this phase), every few MiB: handed to
  /// the decompressor (compressed bytes) and then to the parser (decoded bytes); a parser
  /// calls it through ProgressTicker in its main loop. The JSON reader does not report.
  ProgressFn progress;
  /// The run's memory bound (--max-memory): the decoded input, the value graph or
  /// the fast path's tables, and the model count against it. An InputError naming
  /// --max-memory when a load would pass it.
  uint64_t max_memory = util::MemoryBudget::kDefault;
  /// The default bound (no --max-memory given): also at most this many times the decoded
  /// input plus `input_floor` (0: max_memory alone). See util::MemoryBudget::proportional.
  uint64_t input_multiple = 0;
  uint64_t input_floor = 0;
  /// The bound every file of a -j run shares (nullptr: this load's alone).
  std::shared_ptr<util::MemoryBudget> shared_budget;
};

struct Loaded {
  InputInfo input;
  Snapshot snapshot;
  /// The run's memory bound with the model counted (Account::Model): analyses add
  /// theirs as Account::Analysis, so --max-memory bounds the whole run.
  std::shared_ptr<util::MemoryBudget> budget;
};

/// Loads and builds. Throws InputError (without the path: callers add it).
Loaded load_snapshot(const std::string& path, const LoadOptions& options = {});
/// The same from bytes already in memory (tests, fuzzing).
Loaded load_snapshot_bytes(std::vector<uint8_t> bytes, const std::string& name, const LoadOptions& options = {});

}  // namespace memsnap::snapshot
