// A progress hook for long reads: a callback the reading layers call at coarse granularity.
//
// Contract for whoever reads input (io decompression, the unpickler, any future parser):
// call `ProgressTicker::at(done)` wherever the reader advances; it costs one compare and
// invokes the callback at most once per `step` bytes. `done` and `total` count the bytes of
// the current phase (compressed bytes while decompressing, decoded bytes while parsing); a
// new phase starts when `total` changes. The callback never throws into the reader's loop
// on purpose: it only reports (the CLI prints a line on stderr).
#pragma once

#include <cstdint>
#include <functional>

namespace memsnap {

/// (bytes done, bytes in this phase). Empty: no progress wanted.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

/// Rate-limits a ProgressFn to one call per `step` bytes: readers call at() in their loop.
class ProgressTicker {
 public:
  static constexpr uint64_t kDefaultStep = uint64_t{4} << 20;  // every 4 MiB

  ProgressTicker(const ProgressFn* fn, uint64_t total, uint64_t step = kDefaultStep);

  /// Reports `done` when it passed the next step (and always at the end).
  void at(uint64_t done) {
    if (done < next_) [[likely]]
      return;
    report(done);
  }
  /// The phase is complete.
  void finish();

 private:
  // The callback and the next step: once per step, out of the reader's loop.
  void report(uint64_t done);

  const ProgressFn* fn_;
  uint64_t total_;
  uint64_t step_;
  uint64_t next_;
};

}  // namespace memsnap
