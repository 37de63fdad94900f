// `memsnap export FILE`: the snapshot in PyTorch's own schema, or its timeline for Perfetto.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/slice.hpp"
#include "memsnap/app/load.hpp"

namespace memsnap::app {

enum class ExportFormat { Json, Pickle, Perfetto };

struct ExportRequest {
  std::string file;
  std::string output = "-";
  std::optional<ExportFormat> format;
  std::string max_memory = kDefaultMaxMemory;
  std::string max_output;  // empty: the default output bound (app/output.hpp)
  bool quiet = false;
  analysis::SliceOptions window;
  size_t points = 20000;  // perfetto: counter samples per device and series
  std::string iteration_marker;
  std::vector<std::string> roles;  // --role NAME=GLOB: each block's `role` as analyze names it
};
/// The export written to `output` (refused to a terminal for a pickle, bounded by --max-output).
void run_export(const ExportRequest& request);

}  // namespace memsnap::app
