// PyTorch's "CUDA out of memory" message, as a user pastes it from a log: the
// figures it holds that a snapshot does not (the device's capacity and free
// memory at the moment of the error, what the whole process held), and those the
// OOM analysis can check the snapshot against (allocated and reserved by PyTorch).
//
// Both wordings are read (SNAPSHOT_FORMAT.md section 10):
//   >= 2.2  "Tried to allocate A. GPU d has a total capacity of T of which F is
//            free. [...] Including non-PyTorch memory, this process has P memory
//            in use. Of the allocated memory AL is allocated by PyTorch, and R is
//            reserved by PyTorch but unallocated."
//   <= 2.1  "Tried to allocate A (GPU d; T total capacity; AL already allocated;
//            F free; RES reserved in total by PyTorch)"
// Sizes are c10's format_size: "N bytes" up to 1 KiB, else two decimals of KiB,
// MiB or GiB, so each figure is known only to half a unit of its last digit.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace memsnap::analysis {

/// A size as the message prints it: its value and how far the truth may lie from it.
struct PrintedSize {
  uint64_t bytes = 0;
  uint64_t within = 0;  // 0 for "N bytes"; half a unit of the second decimal otherwise
  /// Whether `exact` prints as this (within the rounding, and a byte of slack for the
  /// conversion through double), give or take `slack` more: how far `exact` itself may be off.
  bool matches(uint64_t exact, uint64_t slack = 0) const {
    uint64_t d = exact > bytes ? exact - bytes : bytes - exact;
    return d <= within + 1 + slack;
  }
};

struct OomMessage {
  PrintedSize tried;                     // "Tried to allocate": the segment size the allocator needed
  std::optional<int> device;             // "GPU d"
  std::optional<PrintedSize> capacity;   // "total capacity of T" / "T total capacity"
  std::optional<PrintedSize> free;       // "of which F is free" / "F free"
  std::optional<PrintedSize> process;    // "this process has P memory in use" (>= 2.2)
  std::optional<PrintedSize> allocated;  // "AL is allocated by PyTorch" / "AL already allocated"
  std::optional<PrintedSize> reserved;   // AL + R (>= 2.2) / "RES reserved in total by PyTorch"
};

/// The message's figures; nullopt when `text` holds no "Tried to allocate SIZE".
/// A figure that is absent, or does not parse as a size, stays empty.
std::optional<OomMessage> parse_oom_message(std::string_view text);

}  // namespace memsnap::analysis
