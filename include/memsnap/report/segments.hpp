// Rendering of `memsnap segments`: the segment map, one line per segment, worst fragmented first.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <vector>

#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/snapshot/input.hpp"

namespace memsnap::report {

struct SegmentsView {
  const snapshot::InputInfo* input = nullptr;
  const snapshot::Snapshot* snapshot = nullptr;
  /// The states drawn: the dumped devices, or their replay at --at (for --device's).
  const std::vector<snapshot::Device>* devices = nullptr;
  /// Parallel to devices: where each state was taken when not at the dump.
  const std::vector<std::optional<AtPoint>>* at = nullptr;
  /// Parallel to devices.
  const std::vector<analysis::Fragmentation>* fragmentation = nullptr;
  /// Per device: indices into Device::segments, worst first (analysis::segments_worst_first).
  const std::vector<std::vector<uint32_t>>* order = nullptr;
  analysis::Sites* sites = nullptr;  // names the allocation site of live blocks (JSON)
  size_t top = 20;                   // segments shown per device; 0 = all
};

/// One line per segment (address, pool, stream, size, free, and a bar of the
/// terminal's width with the blocks to scale: '#' allocated, '+' pending free,
/// '.' free; every live block gets at least one cell), then how many were omitted.
void write_segments_text(std::ostream& out, const SegmentsView& view, const TextStyle& style);
/// One JSON document (schema_version 1): the shown segments with their blocks.
void write_segments_json(std::ostream& out, const SegmentsView& view);

}  // namespace memsnap::report
