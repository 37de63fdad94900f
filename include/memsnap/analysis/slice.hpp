// Cutting a snapshot down to a window of its trace, so that what remains is self-consistent.
//
// The rule. A window is a contiguous range of one device's trace events [first, last]
// (--last N, --from/--to INDEX, or --from-time/--to-time US: the events from the first at or
// after the start time to the last at or before the end time). The cut snapshot keeps those
// events and, as its `segments`, the allocator state right after `last`, rebuilt by the trace
// replay (analysis/replay.hpp); when `last` is the trace's final event that is the dumped state
// itself, exact. Replaying the kept events therefore ends exactly at the kept segments, which
// is what a snapshot means: memsnap, _memory_viz.py and MemoryViz.js all read it as one.
// Events before the window become state (blocks and segments live at its start, found by the
// replay's backward pass); events after it are dropped. A block allocated inside the window
// and freed after it has the size the replay infers from its request (its exact size is not
// in the file): see estimated_blocks() in replay.hpp.
//
// Annotations are kept when their device is and, with a window, when their time lies inside
// it (time windows: the given bounds; index windows: the times of the first and last kept
// events; none are kept when those events have no times). Allocator settings are kept.
// Cost: one replay per device cut, O(n log n) in its events; memory: the model's size again.
#pragma once

#include <cstdint>
#include <optional>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct SliceOptions {
  std::optional<int> device;     // keep only this device (default: every device)
  std::optional<uint64_t> last;  // the last N events
  std::optional<uint64_t> from;  // event indices, inclusive (either alone: to the end / from 0)
  std::optional<uint64_t> to;
  std::optional<int64_t> from_time;  // epoch microseconds, inclusive (either alone likewise)
  std::optional<int64_t> to_time;

  bool has_window() const { return last || from || to || from_time || to_time; }
};

/// The snapshot cut to the window (see above). Without a window: the dumped state of the
/// selected devices, unchanged. Throws UsageError with a one-line message for a window that
/// names nothing: an unknown device, --last 0, indices past the trace or in the wrong order,
/// index windows over several devices with traces (choose one with --device), time windows on
/// a trace without timestamps, a time window no event falls in, or options that exclude each
/// other. Notes about the result (a trace that does not replay consistently) go to its
/// `warnings`.
snapshot::Snapshot slice(const snapshot::Snapshot& snap, const SliceOptions& options);

/// A deep copy of the model's tables and settings, with no devices (the devices of a
/// Snapshot are plain values; its StringTable is not safely copyable by assignment).
snapshot::Snapshot copy_without_devices(const snapshot::Snapshot& snap);

}  // namespace memsnap::analysis
