// Printing `memsnap diff`: a text table for people, one JSON document for scripts.
// (src/report/diff.cpp: the text; diff_json.cpp: the JSON.)
#pragma once

#include <ostream>
#include <vector>

#include "memsnap/analysis/diff.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

struct DiffView {
  Source before, after;
  const std::vector<analysis::DeviceDiff>& devices;
  size_t top = 20;                   // site rows in each text table (JSON lists them all)
  analysis::ProcessMatch process{};  // whether segments were matched by address
};

void write_diff_text(std::ostream& out, const DiffView& view, const TextStyle& style);
void write_diff_json(std::ostream& out, const DiffView& view);

}  // namespace memsnap::report
