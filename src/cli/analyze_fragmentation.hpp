// `analyze --fits SIZE [--stream S]` and the fragmentation analyses that `analyze` runs (issue 3).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/fits.hpp"
#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::cli {

struct FitsOptions {
  std::string size;    // --fits, e.g. "1.5GiB"
  std::string stream;  // --stream, decimal or 0x hex
};

void add_fits_options(CLI::App& cmd, FitsOptions& options);

/// What `view` points into after run_fragmentation: keep it alive while the view is used.
struct FragmentationResults {
  std::vector<analysis::Fragmentation> fragmentation;
  std::vector<analysis::FitsAnswer> fits;
  std::vector<std::vector<analysis::Finding>> findings;
};

/// Runs the fragmentation analysis (and --fits) on every device into `results` and points
/// `view` at them. Bad --fits / --stream values throw Failure (exit 2).
void run_fragmentation(const snapshot::Snapshot& snap, const FitsOptions& options, FragmentationResults& results,
                       report::AnalyzeView& view);

/// Parses a stream handle: decimal or 0x hex; nullopt when malformed.
std::optional<uint64_t> parse_stream(const std::string& text);

}  // namespace memsnap::cli
