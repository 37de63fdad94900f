// The most memory the trace reached: allocated and reserved peaks, and what was live
// at the allocated peak, by site.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/sites.hpp"

namespace memsnap::analysis {

struct SiteBytes {
  std::string site;
  std::vector<std::string> stack;  // of its largest block
  uint64_t live_bytes = 0;
  uint64_t allocations = 0;
};

/// The sites a list of the largest leaves out: how many, and what they hold.
struct OtherSites {
  uint64_t sites = 0;
  uint64_t live_bytes = 0;
  uint64_t allocations = 0;
};

struct Peak {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
  uint64_t allocated_bytes = 0;
  uint64_t active_bytes = 0;
  uint64_t reserved_bytes = 0;
  std::vector<SiteBytes> top_sites;  // live at the peak, largest first
  OtherSites other_sites;            // live at the peak, beyond top_sites
  /// The peak is the state when the recorded window opened (older events were dropped and
  /// memory was higher then than after any recorded event); event_index is then 0.
  bool at_window_start = false;
};

/// The reserved peak: where reserved memory was highest (it can exceed the reserved
/// figure at the allocated peak).
struct PeakReserved {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
  uint64_t bytes = 0;
  bool at_window_start = false;  // as Peak::at_window_start
};

struct Peaks {
  std::optional<Peak> allocated;
  std::optional<PeakReserved> reserved;
};

/// Allocated blocks of a device state grouped by site, largest first, at most `top`;
/// `rest`, when given, receives the sites left out.
std::vector<SiteBytes> sites_by_bytes(const Context& ctx, const snapshot::Device& device, size_t top,
                                      OtherSites* rest = nullptr);

Peaks find_peaks(const Context& ctx, const Replay& replay, size_t top_sites);

}  // namespace memsnap::analysis
