// `memsnap export --format perfetto`: the timeline as Chrome trace-event JSON, the format
// torch.profiler's export_chrome_trace writes and ui.perfetto.dev and chrome://tracing open.
//
// One process per device (pid = the device index, as a profiler trace numbers its GPUs),
// with:
//   counter tracks   `allocated`, `active` and `reserved` bytes after each kept timeline
//                    point (the analysis' downsampling: every bucket keeps its lowest and
//                    highest values, and the peak and every OOM are kept, so a track's
//                    maximum is the peak);
//   instant events   on thread 0 "allocator": every out-of-memory event (process-wide),
//                    the allocated peak, and segment_alloc / segment_free / segment_map /
//                    segment_unmap events, each with its event index, bytes, address and
//                    filtered stack in `args`;
//   slices           on thread 1 "iterations": one per iteration the analysis found.
// Times are the snapshot's own clock (`time_us`, epoch microseconds), so the tracks line
// up with a profiler trace recorded in the same run. A device whose events carry no time
// at all is drawn against the event index instead (otherData.clock says which); an
// untimed event among timed ones takes the time of the last timed event before it.
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::report {

struct PerfettoView {
  const snapshot::InputInfo* input = nullptr;
  const analysis::Context* context = nullptr;
  const analysis::AnalyzeResult* result = nullptr;  // devices with a timeline are written
  /// At most this many segment instants per device (the first ones); the rest are
  /// counted in otherData.segment_events_left_out.
  size_t max_segment_events = 100000;
};

/// One JSON document: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
void write_perfetto_json(std::ostream& out, const PerfettoView& view);

}  // namespace memsnap::report
