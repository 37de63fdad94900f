// The JSON document `memsnap analyze --format json` would print, for tests that check words and fields.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::test {

inline nlohmann::json analyze_json(const snapshot::Snapshot& snap, const analysis::AnalyzeOptions& options = {}) {
  analysis::Context ctx(snap);
  auto result = analysis::analyze(ctx, options);
  snapshot::InputInfo input;
  input.path = "test";
  std::ostringstream out;
  report::write_analyze_json(out, report::Source{input, ctx}, result);
  return nlohmann::json::parse(out.str());
}

}  // namespace memsnap::test
