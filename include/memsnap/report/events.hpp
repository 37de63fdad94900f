// Printing `memsnap events`: trace events in order, as text or JSON.
#pragma once

#include <ostream>
#include <vector>

#include "memsnap/analysis/events.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

void write_events_text(std::ostream& out, const Source& src, const std::vector<analysis::DeviceEvents>& devices,
                       const std::optional<int64_t>& origin, const TextStyle& style);
void write_events_json(std::ostream& out, const Source& src, const std::vector<analysis::DeviceEvents>& devices,
                       const std::optional<int64_t>& origin);

}  // namespace memsnap::report
