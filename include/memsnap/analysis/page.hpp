// What `memsnap report`'s page shows beyond `analyze`: the allocator state at a bounded
// set of moments, the event behind every timeline point, and flame trees.
//
// A page cannot hold the state after every event (a 1 GB snapshot has millions), so
// the replay rebuilds it (Replay::state_after) at chosen moments only, in event order:
//   - the allocated peak, the OOM events (the first ones and the last), the starts of
//     iterations (evenly chosen among them), and events evenly spaced over the trace,
//   - and the dumped state itself.
// A click on the timeline shows the nearest of these ("the state at the nearest
// recorded point"); each is labelled with its own event.
//
// Each state carries a segment map drawn to scale: its segments, and runs of
// consecutive blocks of one class (allocated, allocated and pinning stranded memory,
// pending free, free, free but stranded, free in a private pool). A map holds at most
// `map_runs` runs: when the blocks would make more, blocks smaller than a threshold
// (`merge_below`, the smallest power of two that fits) join the run they fall in, which
// takes the class holding most of its bytes. Bytes are never dropped: the runs of a
// segment tile it exactly. Maps of more than `map_segments` segments keep the largest.
//
// The state's accounting (account()) decides the classes, so the map, the stranded
// bytes and the pinning sites agree with `analyze` and `segments` at the dump.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/iterations.hpp"
#include "memsnap/analysis/peak.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/stacks.hpp"
#include "memsnap/analysis/timeline.hpp"

namespace memsnap::analysis {

struct PageOptions {
  size_t timeline_points = 4000;  // per device (TimelineOptions::max_points)
  size_t even_states = 24;        // states at events evenly spaced over the trace
  size_t iteration_states = 12;   // at most this many iteration starts
  size_t oom_states = 8;          // the first OOMs and the last
  size_t map_runs = 3000;         // per state
  size_t map_segments = 2000;     // per state
  size_t top_blocks = 100;        // largest live blocks at the dump, the peak and the OOM
  size_t other_blocks = 24;       // at the other moments
  size_t top_sites = 12;          // sites live at each moment
  size_t flame_nodes = 4000;      // per flame tree
};

enum class MapClass : uint8_t { Allocated, Pinning, Pending, Free, Stranded, PrivateFree };
/// "allocated", "pinning", "pending", "free", "stranded", "private_free".
const char* to_string(MapClass c);

struct MapSegment {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  snapshot::Pool pool = snapshot::Pool::Unknown;
  bool expandable = false;
  bool private_pool = false;
  uint64_t allocated_bytes = 0;
  uint64_t stranded_bytes = 0;
  uint32_t first_run = 0, runs = 0;  // into SegmentMap::runs
};

struct MapRun {
  uint64_t offset = 0;  // from the segment's start
  uint64_t bytes = 0;
  MapClass cls = MapClass::Free;
  uint32_t blocks = 0;  // blocks in the run
};

struct SegmentMap {
  std::vector<MapSegment> segments;  // address order
  std::vector<MapRun> runs;
  uint64_t merge_below = 0;  // blocks smaller than this joined their run (0: one class per run, exact)
  uint64_t segments_left_out = 0, bytes_left_out = 0;
};

/// One live (allocated or pending-free) block.
struct PageBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested = 0;
  snapshot::BlockState state = snapshot::BlockState::ActiveAllocated;
  snapshot::StackId stack;
  uint64_t stranded_share = 0;  // the stranded bytes it pins (accounting.hpp)
};

/// Live allocated memory of one site at one moment.
struct PageSite {
  SiteId site;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  snapshot::StackId stack;  // of its largest block
};

enum class Moment : uint8_t { Dump, Peak, Oom, Iteration, Even };
/// "dump", "peak", "oom", "iteration", "even".
const char* to_string(Moment m);

struct PageState {
  Moment moment = Moment::Dump;
  std::optional<uint32_t> event;  // the state right after this event; nullopt: as dumped
  std::optional<int64_t> time_us;
  uint64_t iteration = 0;  // Moment::Iteration: which one (1-based)
  uint64_t reserved_bytes = 0, allocated_bytes = 0, active_bytes = 0, requested_bytes = 0;
  uint64_t segments = 0, blocks = 0;
  uint64_t stranded_bytes = 0, largest_free_block_bytes = 0;
  uint64_t estimated_blocks = 0;  // live blocks whose size the replay inferred
  uint64_t size_uncertainty = 0;
  SegmentMap map;
  std::vector<PageBlock> largest;          // largest first
  uint64_t live_blocks = 0;                // of which `largest` lists the first
  std::vector<PageSite> sites;             // most bytes first
  std::vector<PinningSite> pinning_sites;  // at the dump, the peak and the last OOM (top_sites)
};

struct PageFlame {
  Moment moment = Moment::Dump;
  std::optional<uint32_t> event;
  FlameTree tree;
  size_t nodes_left_out = 0;  // narrow subtrees folded into their parents
};

struct DevicePage {
  /// The trace event behind each point of the device's timeline (parallel to its points).
  std::vector<snapshot::TraceEvent> point_events;
  std::vector<PageState> states;  // the replayed moments by event, then the dump
  std::vector<PageFlame> flames;  // the dump, then the peak and the last OOM when there are
  size_t trace_events = 0;
};

/// The page of one device: `replay` is null without a trace (then only the dump).
DevicePage build_page(const Context& ctx, const snapshot::Device& dumped, const Replay* replay,
                      const std::optional<Timeline>& timeline, const Iterations& iterations,
                      const PageOptions& options);

/// The map of one state with its accounting (bounded as the header says).
SegmentMap segment_map(const snapshot::Device& state, const Accounting& accounting, size_t max_runs,
                       size_t max_segments);

/// The tree without its narrowest subtrees, at most `max_nodes` nodes (the root always
/// stays); a pruned node's bytes stay in its parent, and only the frames a kept node names
/// stay (renumbered). Returns the nodes left out.
size_t prune_flame(FlameTree& tree, size_t max_nodes);

}  // namespace memsnap::analysis
