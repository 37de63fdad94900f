// `memsnap export FILE`: its options; app::run_export does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/export_command.hpp"

namespace memsnap::cli {

namespace {

void add_export_options(CLI::App& cmd, app::ExportRequest& args) {
  add_file_option(cmd, args.file);
  cmd.add_option("-o,--output", args.output,
                 "Output file (default: - for stdout); written to a temporary file and renamed into place")
      ->option_text("OUT");
  cmd.add_option("--format", args.format,
                 "json or pickle (default: json for -o - and *.json, else pickle), or perfetto: the timeline as "
                 "Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, app::ExportFormat>{{"json", app::ExportFormat::Json},
                                                                           {"pickle", app::ExportFormat::Pickle},
                                                                           {"perfetto", app::ExportFormat::Perfetto}},
                                  CLI::ignore_case))
      ->option_text("json|pickle|perfetto");
  cmd.add_option("--device", args.window.device, "Only this device (default: all)")->option_text("N");
  // The window options exclude each other; analysis::slice says so in one line.
  cmd.add_option("--last", args.window.last, "The window: the last N trace events")->option_text("N");
  cmd.add_option("--from", args.window.from, "The window: from trace event INDEX (inclusive)")->option_text("INDEX");
  cmd.add_option("--to", args.window.to, "The window: up to trace event INDEX (inclusive)")->option_text("INDEX");
  cmd.add_option("--from-time", args.window.from_time,
                 "The window: from the first event at or after US (epoch microseconds)")
      ->option_text("US");
  cmd.add_option("--to-time", args.window.to_time,
                 "The window: up to the last event at or before US (epoch microseconds)")
      ->option_text("US");
  cmd.add_option("--points", args.points,
                 "perfetto: most counter samples per device (default 20000); each bucket of events keeps its "
                 "lowest and highest values, and the peak and every OOM are kept")
      ->check(CLI::Range(size_t{16}, size_t{10000000}))
      ->option_text("N");
  cmd.add_option("--iteration-marker", args.iteration_marker,
                 "perfetto: where iterations start (as for analyze; default: detected)")
      ->option_text("NAME");
  cmd.add_option("--role", args.roles,
                 "A role of your own for each block's `role` key: blocks whose allocation stack has a frame "
                 "matching GLOB (file:line:function, the file, or the function) are NAME (repeatable, as for "
                 "analyze)")
      ->option_text("NAME=GLOB");
  add_max_memory_option(cmd, args.max_memory);
  add_max_output_option(cmd, args.max_output);
  add_quiet_option(cmd, args.quiet);
}

}  // namespace

void add_export(CLI::App& app) {
  auto args = std::make_shared<app::ExportRequest>();
  CLI::App* cmd =
      app.add_subcommand("export",
                         "The snapshot in PyTorch's own schema, as JSON or a pickle the PyTorch memory viewer loads; "
                         "whole, or cut to a window of the trace with the state at its end");
  add_export_options(*cmd, *args);
  cmd->callback([args] { app::run_export(*args); });
}

}  // namespace memsnap::cli
