// Rendering of `memsnap timeline`: a self-contained SVG picture, or the same series as CSV.
// (src/report/timeline.cpp: the SVG; timeline_csv.cpp: the CSV.)
#pragma once

#include <optional>
#include <ostream>
#include <vector>

#include "memsnap/analysis/timeline.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::report {

struct TimelineView {
  const snapshot::InputInfo* input = nullptr;
  const std::vector<analysis::Timeline>* timelines = nullptr;  // one per plotted device
  /// The origin of every "+time": the first trace event in the file, as `analyze` uses.
  std::optional<int64_t> origin_us;
};

struct SvgOptions {
  int width = 1200;        // pixels
  int panel_height = 420;  // pixels per device
};

/// One SVG document: a panel per device, no scripts, no external references.
void write_timeline_svg(std::ostream& out, const TimelineView& view, const SvgOptions& options);
/// CSV (RFC 4180, LF line ends; site names through csv_cell(), escape.hpp):
/// device,event_index,time_us,allocated_bytes,active_bytes,reserved_bytes then, with sites, one column per site (the
/// union over devices; empty where a site is not among a device's top sites) and "other".
void write_timeline_csv(std::ostream& out, const TimelineView& view);

}  // namespace memsnap::report
