// `memsnap timeline FILE -o OUT`: allocated, active and reserved bytes over time, as SVG or CSV.
#include "memsnap/app/timeline_command.hpp"

#include <iostream>
#include <memory>
#include <optional>

#include "memsnap/app/output.hpp"
#include "memsnap/report/timeline.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

namespace {

PlotFormat resolve_format(const TimelineRequest& a) {
  if (a.format) return *a.format;
  if (output_named(a.output, ".svg")) return PlotFormat::Svg;
  if (output_named(a.output, ".csv")) return PlotFormat::Csv;
  if (a.output == "-") return PlotFormat::Svg;
  throw Failure("-o " + a.output + ": cannot tell the format from the name (use .svg or .csv, or --format svg|csv)",
                kBadInput);
}

analysis::AnalyzeOptions timeline_analyze_options(const TimelineRequest& args) {
  analysis::AnalyzeOptions options;
  options.device = args.device;
  options.trace = false;
  options.iterations.marker = args.iteration_marker;
  analysis::TimelineOptions topt;
  topt.max_points = args.points;
  topt.by_site = args.by_site;
  topt.top_sites = args.top_sites;
  topt.by_role = args.by_role;
  for (const auto& r : args.roles) topt.roles.user.push_back(analysis::parse_role_rule(r));  // exit 2 if bad
  options.timeline = topt;
  return options;
}

// The timeline of every device that has one; a note for each that has none, a failure when none has.
std::vector<analysis::Timeline> take_timelines(analysis::AnalyzeResult& result, const std::string& shown) {
  std::vector<analysis::Timeline> timelines;
  std::vector<int> skipped;
  for (auto& d : result.devices) {
    if (d.timeline)
      timelines.push_back(std::move(*d.timeline));
    else
      skipped.push_back(d.device);
  }
  if (timelines.empty())
    throw Failure(terminal_safe(shown) +
                      ": the snapshot has no trace entries (recorded with enabled='state' or history off): "
                      "nothing to plot",
                  kBadInput);
  for (int dev : skipped)
    std::cerr << "memsnap: note: " << terminal_safe(shown) << ": device " << dev
              << " has no trace entries: not plotted\n";
  return timelines;
}

}  // namespace

void run_timeline(const TimelineRequest& args) {
  PlotFormat format = resolve_format(args);
  if (args.by_role && args.by_site) throw Failure("--by-role and --by-site: choose one", kBadInput);
  if (!args.roles.empty() && !args.by_role) throw Failure("--role: only with --by-role", kBadInput);
  io::OutputFile output = open_output(args.output, {args.file});  // refused or unwritable: before the work
  snapshot::Loaded loaded = load(args.file, args.common);
  std::string shown = shown_path(args.file);
  analysis::Context ctx(loaded.snapshot, code_rules());
  analysis::AnalyzeResult result = analysis::analyze(ctx, timeline_analyze_options(args));
  print_warnings(loaded, result.warnings);
  std::vector<analysis::Timeline> timelines = take_timelines(result, shown);

  report::TimelineView view{&loaded.input, &timelines, result.time_origin_us};
  write_output(output, [&](std::ostream& out) {
    if (format == PlotFormat::Svg)
      report::write_timeline_svg(out, view, report::SvgOptions{args.width, args.height});
    else
      report::write_timeline_csv(out, view);
  });
  if (args.output != "-" && !args.common.quiet) {
    size_t points = 0;
    for (const auto& t : timelines) points += t.points.size();
    std::cerr << "wrote " << args.output << " (" << timelines.size()
              << (timelines.size() == 1 ? " device, " : " devices, ") << with_commas(points)
              << (points == 1 ? " point)\n" : " points)\n");
  }
}

}  // namespace memsnap::app
