// Rendering of `memsnap analyze`: text for people, one JSON document for scripts.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/fits.hpp"
#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/analysis/oom.hpp"
#include "memsnap/analysis/trace_analysis.hpp"
#include "memsnap/snapshot/input.hpp"

namespace memsnap::report {

/// Where the analysed state was taken when it is not the dump (`--at`).
struct AtPoint {
  uint32_t event_index = 0;
  std::optional<int64_t> time_us;
  uint64_t estimated_blocks = 0;  // live blocks whose size the replay inferred from their request
};

/// Everything `analyze` computed; reporters only read it. Per-device vectors
/// are parallel to `totals`; a null pointer means the section was not computed.
struct AnalyzeView {
  const snapshot::InputInfo* input = nullptr;
  const snapshot::Snapshot* snapshot = nullptr;
  const std::vector<analysis::DeviceTotals>* totals = nullptr;
  const std::vector<analysis::TraceAnalysis>* trace = nullptr;
  const std::vector<std::optional<AtPoint>>* at = nullptr;
  const std::vector<std::vector<analysis::OomReport>>* ooms = nullptr;
  const std::vector<analysis::Fragmentation>* fragmentation = nullptr;
  const std::vector<analysis::FitsAnswer>* fits = nullptr;  // --fits
  const std::vector<std::vector<analysis::Finding>>* findings = nullptr;  // every analysis's, per device
};

struct TextStyle {
  int width = 80;      // terminal columns
  bool color = false;  // ANSI colour (only when stdout is a terminal)
};

void write_analyze_text(std::ostream& out, const AnalyzeView& view, const TextStyle& style);
/// One JSON document (schema_version 1), newline-terminated.
void write_analyze_json(std::ostream& out, const AnalyzeView& view);

}  // namespace memsnap::report
