// Rendering of `memsnap analyze`: text for people, one JSON document for scripts.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/fits.hpp"
#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::report {

/// Everything `analyze` computed; reporters only read it.
struct AnalyzeView {
  const snapshot::InputInfo* input = nullptr;
  const snapshot::Snapshot* snapshot = nullptr;
  const std::vector<analysis::DeviceTotals>* totals = nullptr;
  // Fragmentation (issue 3). Each vector, when set, is parallel to snapshot->devices.
  const std::vector<analysis::Fragmentation>* fragmentation = nullptr;
  const std::vector<analysis::FitsAnswer>* fits = nullptr;  // --fits
  const std::vector<std::vector<analysis::Finding>>* findings = nullptr;
};

struct TextStyle {
  int width = 80;      // terminal columns
  bool color = false;  // ANSI colour (only when stdout is a terminal)
};

void write_analyze_text(std::ostream& out, const AnalyzeView& view, const TextStyle& style);
/// One JSON document (schema_version 1), newline-terminated.
void write_analyze_json(std::ostream& out, const AnalyzeView& view);

}  // namespace memsnap::report
