// Printing an analysis: `memsnap analyze` as text for people and one JSON document for
// scripts. Reporters only read the AnalyzeResult; they never call back into analysis.
// (src/report/analyze.cpp: the text; analyze_json.cpp: the JSON.)
#pragma once

#include <ostream>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::report {

struct TextStyle {
  int width = 80;      // terminal columns (callers cap it to a sane range)
  bool color = false;  // ANSI colour (only when stdout is a terminal)
  /// analyze -v: the cache's state in full (free memory by cause, pools, pinning sites) and its
  /// information-only findings even on a device under no memory pressure.
  bool verbose = false;
};

/// What a report says about where its figures came from.
struct Source {
  const snapshot::InputInfo& input;
  const analysis::Context& context;  // the snapshot and its site table
};

void write_analyze_text(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result,
                        const TextStyle& style);
/// One line: how the device's iterations were found, or why none were (as in the report).
std::string iteration_evidence(const analysis::Iterations& it);
/// Why the trace's ring buffer dropped older events, in words ("" when the file does not show it).
std::string dropped_events_words(const analysis::TraceSummary& t, const snapshot::AllocatorSettings& settings);
/// One JSON document (schema_version 1), newline-terminated.
void write_analyze_json(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result);

}  // namespace memsnap::report
