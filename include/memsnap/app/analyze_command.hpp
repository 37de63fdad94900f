// `memsnap analyze FILE...`: where the GPU memory went, for one file or a fleet of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/fits.hpp"
#include "memsnap/app/load.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::app {

/// `--fits SIZE [--stream S]` as given.
struct FitsOptions {
  std::string size;    // --fits, e.g. "1.5GiB"
  std::string stream;  // --stream, decimal or 0x hex
};
/// --fits's value in bytes; a Failure (exit 2) when it is not a size.
uint64_t fits_bytes(const std::string& text);
/// --stream's value; a Failure (exit 2) when it is not a stream handle.
uint64_t stream_value(const std::string& text);
/// The --fits request, when given. Bad --fits / --stream values throw Failure (exit 2).
std::optional<analysis::FitsQuery> parse_fits(const FitsOptions& options);
/// Parses a stream handle: decimal or 0x hex; nullopt when malformed.
std::optional<uint64_t> parse_stream(const std::string& text);

struct AnalyzeRequest {
  std::vector<std::string> files;
  unsigned jobs = 0;  // 0: the hardware threads
  bool all = false;   // several files: every file's report, not only the worst one's
  CommonOptions common;
  StateOptions state;
  std::string iteration_marker;
  std::string capacity;     // a size, or empty
  std::string oom_size;     // a size, or empty
  std::string oom_message;  // TEXT, or @FILE
  FitsOptions fits;
  std::string file_view;           // --file PATH: one source file's memory by line instead of the report
  std::vector<std::string> roles;  // --role NAME=GLOB, repeatable
  std::string phases = "memsnap";  // --phases memsnap|annotations
};
/// One file's report, or with several files (or JSON Lines) the fleet summary and the worst
/// file's report, on stdout or `into` (open_results); a Failure (exit 2) when a file
/// could not be read.
void run_analyze(const AnalyzeRequest& request, const report::TextStyle& style, std::ostream* into = nullptr);

}  // namespace memsnap::app
