// The schema-directed fast path: pickle bytes straight to a Snapshot, no value graph (internal).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "memsnap/io/byte_source.hpp"
#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "memsnap/util/progress.hpp"

namespace memsnap::snapshot::detail {

struct FastResult {
  Snapshot snapshot;
  int protocol = 0;
  /// The input's decoded size, when the parse read it through a decoding window (the source's
  /// data() would decode it all again); nullopt otherwise.
  std::optional<uint64_t> decoded_bytes;
  /// The parse ran in two halves and joined them (SplitOptions).
  bool split = false;
  /// The memo's entry count at STOP: the same whether the parse was split or not (a test
  /// of the join, which counts the second half's entries without copying them).
  uint64_t memo_count = 0;
};

/// A parse on two threads (fast_build.cpp, SplitParse): from an input of `from` bytes, the
/// second thread starts near `at` of the input (preferring the start of an event list a
/// little before or after), once the first has read a sixteenth of the way there; the first
/// checks every `step` bytes. `wait`: the first waits until the second has found where it
/// starts (tests, so that a small input is not passed before it is heard).
struct SplitOptions {
  uint64_t from = uint64_t{64} << 20;
  uint64_t step = uint64_t{1} << 20;
  double at = 0.5;
  bool wait = false;
  /// No split (the default for the in-memory overload).
  static SplitOptions none() { return SplitOptions{UINT64_MAX, uint64_t{1} << 20, 0.5, false}; }
};

/// How a load lets the fast path run: the cores it may use (a parse in two halves needs 2)
/// and where it says what it chose (nullptr or empty: silent).
struct FastOptions {
  unsigned threads = 2;
  const std::function<void(const std::string&)>* diagnostics = nullptr;
  bool split_wait = false;  // LoadOptions::split_wait: SplitOptions::wait
};

/// Builds the model from a pickle in one pass over its opcodes, or returns nullopt
/// at the first form it does not handle (text opcodes, legacy history, a duplicate
/// key, a shared event dict, anything malformed, ...). It never reports an error
/// itself: the caller then runs the generic path (unpickle + build_snapshot), which
/// gives the same model or the exact error. When it returns a model, that model is
/// identical to the generic path's, ids and order of every table included.
/// The memory bound is the one exception: passing it throws InputError, as the
/// generic path would (its value graph is larger, so it would pass it too).
std::optional<FastResult> fast_build(std::span<const uint8_t> input, util::MemoryBudget* budget = nullptr,
                                     const ProgressFn* progress = nullptr,
                                     const SplitOptions& split = SplitOptions::none());
/// The same from a source whose bytes may still be arriving (io::ReadOptions::stream): the
/// parse waits at each pickle FRAME for the decoder, which runs ahead on another core.
/// Progress then counts stored (compressed) bytes. A decoding error is not reported here:
/// the parse stops short (nullopt) and the source's data() throws it. A compressed input
/// whose decoder waits (io::ReadOptions::decode_window) is decoded into a window instead, once:
/// then only a result without a model leaves the source to decode it again.
std::optional<FastResult> fast_build(const io::ByteSource& source, util::MemoryBudget* budget = nullptr,
                                     const ProgressFn* progress = nullptr, const FastOptions& options = {});

}  // namespace memsnap::snapshot::detail
