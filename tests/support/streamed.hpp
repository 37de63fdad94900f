// A fast-path parse of a compressed input while a second thread decodes it, chunk by chunk,
// against the parse of the whole buffer: test_fast_stream.cpp, and test_fast_build.cpp's
// tracebacks, which must decode alike wherever a chunk ends.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "../../src/snapshot/fast_build.hpp"
#include "memsnap/io/byte_source.hpp"
#include "support/compress.hpp"
#include "support/model_compare.hpp"

namespace memsnap::test {

// Progress calls: phases (a new total) each moving forward, never two calls at once.
struct ProgressCheck {
  std::atomic<int> calls_in_flight{0};
  bool overlapped = false, backwards = false;
  uint64_t last = 0, last_total = 0, first_total = 0;
  ProgressFn fn() {
    return [this](uint64_t done, uint64_t total) {
      overlapped |= calls_in_flight.fetch_add(1) != 0;
      if (first_total == 0) first_total = total;
      if (total != last_total) last = 0;
      backwards |= done < last || done > total;
      last = done, last_total = total;
      calls_in_flight.fetch_sub(1);
    };
  }
};

// Parses `plain` compressed, while a decoder thread publishes `chunk` bytes at a time; in
// lockstep the decoder publishes only once the parse waits, so the parse meets every chunk
// boundary (an opcode, a FRAME, the middle of an event dict or a frames list). The model
// must be the one parsing the whole buffer gives.
inline void check_streamed(const std::vector<uint8_t>& plain, size_t chunk, bool lockstep) {
  CAPTURE(chunk);
  auto whole = snapshot::detail::fast_build(plain);
  io::ReadOptions o;
  o.stream = true;
  o.stream_chunk = chunk;
  o.stream_lockstep = lockstep;
  o.decode_window = false;  // the decoder into one buffer (check_decode_window: the window)
  // Progress: the decoder's phase (stored bytes), then the parse's (decoded bytes), each
  // moving forward, never both at once, ending at the decoded size.
  ProgressCheck check;
  ProgressFn progress = check.fn();
  o.progress = progress;
  io::ByteSource src = io::ByteSource::from_bytes(zstd_of(plain), o);
  REQUIRE(src.streaming());
  CHECK(src.read_ahead() == nullptr);
  auto streamed = snapshot::detail::fast_build(src, nullptr, &progress);
  if (streamed) CHECK_FALSE(streamed->decoded_bytes.has_value());
  CHECK_FALSE(check.overlapped);
  CHECK_FALSE(check.backwards);
  if (streamed) CHECK((check.last == plain.size() && check.last_total == plain.size()));
  REQUIRE(streamed.has_value() == whole.has_value());
  if (!whole) return;
  CHECK(streamed->protocol == whole->protocol);
  check_same_model(streamed->snapshot, whole->snapshot);
}

}  // namespace memsnap::test
