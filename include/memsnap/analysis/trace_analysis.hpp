// What the trace says about time: the peak, the training iterations, and what leaks across them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct SiteBytes {
  std::string site;
  std::vector<std::string> stack;
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
};

struct Iterations {
  bool found = false;
  std::string method;     // "repeating allocation sequence", "marker NAME", "annotation NAME"
  uint64_t count = 0;     // iterations that start inside the window
  uint64_t period_events = 0;       // trace events per iteration (median)
  std::optional<double> period_us;  // median time per iteration
  double match_ratio = 0;           // share of allocations that repeat one period later
  std::vector<uint32_t> boundaries;  // event index at which each iteration starts
  double growth_bytes_per_iteration = 0;  // trend of allocated bytes at the boundaries (Theil-Sen)
  double rising_share = 0;                // share of iterations that start higher than the one before
  std::string evidence;  // why no period was found, or how it was
};

struct Leak {
  std::string site;
  std::vector<std::string> stack;
  double growth_bytes_per_iteration = 0;
  double growth_allocations_per_iteration = 0;
  uint64_t live_bytes = 0;        // live at the dump, from this site
  uint64_t live_allocations = 0;
  uint64_t first_iteration = 0;   // first and last iteration whose allocations it retains
  uint64_t last_iteration = 0;
  uint64_t iterations_retained = 0;
  std::string pattern;  // "autograd_history", "tensor_list", "unclassified"
};

/// A site whose allocations grow in size iteration after iteration (memory that
/// grows with the input, such as the sequence length), whether or not it leaks.
struct GrowingSite {
  std::string site;
  uint64_t first_bytes = 0, last_bytes = 0;   // its largest request in its first and last iteration
  uint64_t first_iteration = 0, last_iteration = 0;
  uint64_t iterations = 0;                     // iterations in which it allocates
};

struct TraceOptions {
  std::string iteration_marker;  // function or annotation name; empty: detect the period
  size_t top_sites = 10;
};

struct TraceAnalysis {
  bool has_trace = false;
  bool consistent = true;
  std::optional<ReplayMismatch> first_mismatch;
  bool window_starts_mid_run = false;
  uint64_t estimated_blocks = 0;
  std::optional<Peak> peak;
  Iterations iterations;
  std::vector<Leak> leaks;  // sorted by growth, largest first
  std::vector<GrowingSite> growing;  // largest final request first
  std::vector<Finding> findings;
};

/// Live allocated blocks of a device state grouped by site, largest first.
std::vector<SiteBytes> sites_by_bytes(const snapshot::Device& device, Sites& sites, size_t top);

TraceAnalysis analyze_trace(const snapshot::Snapshot& snap, const snapshot::Device& device, const Replay& replay,
                            Sites& sites, const TraceOptions& options = {});

}  // namespace memsnap::analysis
