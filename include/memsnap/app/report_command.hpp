// `memsnap report FILE [FILE2] -o report.html`: one self-contained offline HTML page.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/app/load.hpp"

namespace memsnap::app {

struct ReportRequest {
  std::vector<std::string> files;
  std::string output;
  CommonOptions common;
  std::optional<int> device;
  std::string iteration_marker;
  std::string capacity;
  size_t points = 4000;  // timeline points per device
  size_t states = 24;    // states kept at evenly spaced events
};
/// The page of one file, or of two and their diff, written to `output`.
void run_report(const ReportRequest& request);

}  // namespace memsnap::app
