// `memsnap timeline FILE -o OUT`: its options; app::run_timeline does the work.
#include <memory>

#include "common.hpp"
#include "memsnap/app/timeline_command.hpp"

namespace memsnap::cli {

namespace {

void add_timeline_options(CLI::App& cmd, app::TimelineRequest& args) {
  add_file_option(cmd, args.file);
  cmd.add_option("-o,--output", args.output, "Output file: .svg or .csv (- for stdout)")
      ->required()
      ->option_text("OUT");
  cmd.add_option("--format", args.format, "svg or csv (default: from the -o extension; svg for -o -)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, app::PlotFormat>{{"svg", app::PlotFormat::Svg}, {"csv", app::PlotFormat::Csv}},
          CLI::ignore_case))
      ->option_text("svg|csv");
  cmd.add_flag("--by-site", args.by_site, "Stack the live bytes of the top allocation sites under the curve");
  cmd.add_option("--top-sites", args.top_sites, "Sites shown with --by-site; the rest are 'other' (default 8)")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->option_text("K");
  cmd.add_flag("--by-role", args.by_role,
               "Stack the live bytes of each role (weights, gradients, optimizer state, activations...) under "
               "the curve, with the phases (forward, backward, optimizer step) marked");
  cmd.add_option("--role", args.roles,
                 "With --by-role, a role of your own: blocks whose allocation stack has a frame matching GLOB "
                 "are NAME (repeatable; first match wins, before the built-in roles)")
      ->allow_extra_args(false)  // one rule per --role: FILE may follow it
      ->option_text("NAME=GLOB");
  cmd.add_option("--device", args.device, "Only this device (default: every device with a trace)")->option_text("N");
  cmd.add_option("--points", args.points,
                 "Most points per device (default 2000); each bucket keeps its lowest and highest values")
      ->check(CLI::Range(size_t{16}, size_t{10000000}))
      ->option_text("N");
  cmd.add_option("--width", args.width, "SVG width in pixels (default 1200)")
      ->check(CLI::Range(400, 20000))
      ->option_text("W");
  cmd.add_option("--height", args.height, "SVG height per device in pixels (default 420)")
      ->check(CLI::Range(200, 20000))
      ->option_text("H");
  cmd.add_option("--iteration-marker", args.iteration_marker,
                 "Where iterations start (as for analyze; default: detected)")
      ->option_text("NAME");
  add_common_options(cmd, args.common, false);
}

}  // namespace

void add_timeline(CLI::App& app) {
  auto args = std::make_shared<app::TimelineRequest>();
  CLI::App* cmd = app.add_subcommand(
      "timeline", "Allocated, active and reserved bytes over time: an SVG picture (or CSV) of the trace");
  add_timeline_options(*cmd, *args);
  cmd->callback([args] { app::run_timeline(*args); });
}

}  // namespace memsnap::cli
