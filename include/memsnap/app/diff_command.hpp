// `memsnap diff BEFORE AFTER`: what changed between two snapshots.
#pragma once

#include <cstddef>
#include <string>

#include "memsnap/app/load.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::app {

struct DiffRequest {
  std::string before, after;
  CommonOptions common;
  std::string fail_if_growth;  // a size; empty: no limit
  size_t top = 20;
  bool flame = false;
  std::string output;      // with --flame; empty: stdout
  std::string max_output;  // empty: the default output bound
  std::string file_view;   // --file PATH: one source file's memory by line, before and after
};
/// The diff's text or JSON (on stdout or `into`), or with `flame` its differential
/// flame; exit 1 (a Failure) when allocated memory grew by more than `fail_if_growth` on a device.
void run_diff(const DiffRequest& request, const report::TextStyle& style, std::ostream* into = nullptr);

}  // namespace memsnap::app
