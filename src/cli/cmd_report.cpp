// `memsnap report FILE [FILE2] -o report.html`: its options; app::run_report does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/report_command.hpp"

namespace memsnap::cli {

namespace {

void add_report_options(CLI::App& cmd, app::ReportRequest& args) {
  cmd.add_option("FILE", args.files,
                 "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin), or two: BEFORE AFTER for a "
                 "diff")
      ->required()
      ->expected(1, 2);
  cmd.add_option("-o,--output", args.output, "The HTML file to write (- for stdout)")->required()->option_text("OUT");
  cmd.add_option("--device", args.device, "Only this device (default: all)")->option_text("N");
  cmd.add_option("--iteration-marker", args.iteration_marker,
                 "Where iterations start (as for analyze; default: detected)")
      ->option_text("NAME");
  cmd.add_option("--capacity", args.capacity,
                 "The GPU's total memory (e.g. 80GiB), for the OOM analysis (as for analyze)")
      ->option_text("SIZE");
  cmd.add_option("--points", args.points,
                 "Most timeline points per device (default 4000); each bucket of events keeps its lowest and "
                 "highest values, and the peak and every OOM are kept")
      ->check(CLI::Range(size_t{16}, size_t{100000}))
      ->option_text("N");
  cmd.add_option("--states", args.states,
                 "Allocator states kept at events evenly spaced over the trace, besides the peak, the OOMs and "
                 "iteration starts (default 24); a click on the timeline shows the nearest")
      ->check(CLI::Range(size_t{0}, size_t{1000}))
      ->option_text("N");
  add_max_memory_option(cmd, args.common.max_memory);
  add_quiet_option(cmd, args.common.quiet);
}

}  // namespace

void add_report(CLI::App& app) {
  auto args = std::make_shared<app::ReportRequest>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "One self-contained HTML page to open offline: the verdict, an interactive timeline with the state at "
      "its events, the largest blocks, flame graphs and segment maps; with two files, their diff");
  add_report_options(*cmd, *args);
  cmd->callback([args] { app::run_report(*args); });
}

}  // namespace memsnap::cli
