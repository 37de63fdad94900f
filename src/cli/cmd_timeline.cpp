// `memsnap timeline FILE -o OUT`: allocated, active and reserved bytes over time, as SVG or CSV.
#include <iostream>
#include <memory>
#include <optional>

#include "common.hpp"
#include "memsnap/report/timeline.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/app/output.hpp"

namespace memsnap::cli {

namespace {

enum class PlotFormat { Svg, Csv };

struct TimelineArgs {
  std::string file;
  std::string output;
  std::optional<PlotFormat> format;
  CommonOptions common;
  std::optional<int> device;
  bool by_site = false;
  size_t top_sites = 8;
  size_t points = 2000;
  int width = 1200;
  int height = 420;
  std::string iteration_marker;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
  return true;
}

PlotFormat resolve_format(const TimelineArgs& a) {
  if (a.format) return *a.format;
  if (ends_with(a.output, ".svg")) return PlotFormat::Svg;
  if (ends_with(a.output, ".csv")) return PlotFormat::Csv;
  if (a.output == "-") return PlotFormat::Svg;
  throw Failure("-o " + a.output + ": cannot tell the format from the name (use .svg or .csv, or --format svg|csv)",
                kBadInput);
}

void add_timeline_options(CLI::App& cmd, TimelineArgs& args) {
  add_file_option(cmd, args.file);
  cmd.add_option("-o,--output", args.output, "Output file: .svg or .csv (- for stdout)")
      ->required()
      ->option_text("OUT");
  cmd.add_option("--format", args.format, "svg or csv (default: from the -o extension; svg for -o -)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, PlotFormat>{{"svg", PlotFormat::Svg}, {"csv", PlotFormat::Csv}}, CLI::ignore_case))
      ->option_text("svg|csv");
  cmd.add_flag("--by-site", args.by_site, "Stack the live bytes of the top allocation sites under the curve");
  cmd.add_option("--top-sites", args.top_sites, "Sites shown with --by-site; the rest are 'other' (default 8)")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->option_text("K");
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

analysis::AnalyzeOptions timeline_analyze_options(const TimelineArgs& args) {
  analysis::AnalyzeOptions options;
  options.device = args.device;
  options.trace = false;
  options.iterations.marker = args.iteration_marker;
  analysis::TimelineOptions topt;
  topt.max_points = args.points;
  topt.by_site = args.by_site;
  topt.top_sites = args.top_sites;
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

void run_timeline(const TimelineArgs& args) {
  PlotFormat format = resolve_format(args);
  io::OutputFile output = app::open_output(args.output, {args.file});  // refused or unwritable: before the work
  snapshot::Loaded loaded = load(args.file, args.common);
  std::string shown = shown_path(args.file);
  analysis::Context ctx(loaded.snapshot, code_rules());
  analysis::AnalyzeResult result = analysis::analyze(ctx, timeline_analyze_options(args));
  print_warnings(loaded, result.warnings);
  std::vector<analysis::Timeline> timelines = take_timelines(result, shown);

  report::TimelineView view{&loaded.input, &timelines, result.time_origin_us};
  app::write_output(output, [&](std::ostream& out) {
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

}  // namespace

void add_timeline(CLI::App& app) {
  auto args = std::make_shared<TimelineArgs>();
  CLI::App* cmd = app.add_subcommand(
      "timeline", "Allocated, active and reserved bytes over time: an SVG picture (or CSV) of the trace");
  add_timeline_options(*cmd, *args);
  cmd->callback([args] { run_timeline(*args); });
}

}  // namespace memsnap::cli
