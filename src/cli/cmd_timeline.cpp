// `memsnap timeline FILE -o OUT`: allocated, active and reserved bytes over time, as SVG or CSV.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/timeline.hpp"
#include "memsnap/report/timeline.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::cli {

namespace {

enum class PlotFormat { Svg, Csv };

struct TimelineArgs {
  std::string file;
  std::string output;
  std::optional<PlotFormat> format;
  std::string max_memory = "4GiB";
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

// Writes the whole document, reporting any failure (open, write, close) with strerror.
void write_output(const std::string& path, const std::string& data) {
  if (path == "-") {
    std::cout << data;
    std::cout.flush();
    if (!std::cout) throw Failure("<stdout>: write failed", kBadInput);
    return;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Failure(path + ": cannot write: " + std::strerror(errno), kBadInput);
  size_t n = std::fwrite(data.data(), 1, data.size(), f);
  int err = n == data.size() ? 0 : errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (n != data.size() || err != 0)
    throw Failure(path + ": cannot write: " + std::strerror(err ? err : EIO), kBadInput);
}

}  // namespace

void add_timeline(CLI::App& app) {
  auto args = std::make_shared<TimelineArgs>();
  CLI::App* cmd = app.add_subcommand(
      "timeline", "Allocated, active and reserved bytes over time: an SVG picture (or CSV) of the trace");
  add_file_option(*cmd, args->file);
  cmd->add_option("-o,--output", args->output, "Output file: .svg or .csv (- for stdout)")
      ->required()
      ->option_text("OUT");
  cmd->add_option("--format", args->format, "svg or csv (default: from the -o extension; svg for -o -)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, PlotFormat>{{"svg", PlotFormat::Svg}, {"csv", PlotFormat::Csv}}, CLI::ignore_case))
      ->option_text("svg|csv");
  cmd->add_flag("--by-site", args->by_site, "Stack the live bytes of the top allocation sites under the curve");
  cmd->add_option("--top-sites", args->top_sites, "Sites shown with --by-site; the rest are 'other' (default 8)")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->option_text("K");
  cmd->add_option("--device", args->device, "Only this device (default: every device with a trace)")->option_text("N");
  cmd->add_option("--points", args->points,
                  "Most points per device (default 2000); each bucket keeps its lowest and highest values")
      ->check(CLI::Range(size_t{16}, size_t{10000000}))
      ->option_text("N");
  cmd->add_option("--width", args->width, "SVG width in pixels (default 1200)")
      ->check(CLI::Range(400, 20000))
      ->option_text("W");
  cmd->add_option("--height", args->height, "SVG height per device in pixels (default 420)")
      ->check(CLI::Range(200, 20000))
      ->option_text("H");
  cmd->add_option("--iteration-marker", args->iteration_marker,
                  "Where iterations start (as for analyze; default: detected)")
      ->option_text("NAME");
  cmd->add_option("--max-memory", args->max_memory,
                  "Memory bound for reading the snapshot: decoded input, parse and model (default 4GiB)")
      ->option_text("SIZE");
  cmd->callback([args] {
    PlotFormat format = resolve_format(*args);
    CommonOptions common;
    common.max_memory = args->max_memory;
    snapshot::Loaded loaded = load(args->file, common);
    print_warnings(loaded);
    const auto& snap = loaded.snapshot;
    std::string shown = args->file == "-" ? "<stdin>" : args->file;
    if (args->device && !snap.device(*args->device))
      throw Failure("--device " + std::to_string(*args->device) + ": the snapshot has no such device", kBadInput);

    analysis::Sites sites(snap);
    analysis::TimelineOptions topt;
    topt.max_points = args->points;
    topt.by_site = args->by_site;
    topt.top_sites = args->top_sites;
    topt.iteration_marker = args->iteration_marker;
    std::vector<analysis::Timeline> timelines;
    std::vector<int> skipped;
    for (const auto& d : snap.devices) {
      if (args->device && d.index != *args->device) continue;
      if (d.trace.empty()) {
        skipped.push_back(d.index);
        continue;
      }
      analysis::Replay replay(snap, d);
      timelines.push_back(analysis::build_timeline(snap, d, replay, sites, topt));
    }
    if (timelines.empty())
      throw Failure(shown +
                        ": the snapshot has no trace entries (recorded with enabled='state' or history off): "
                        "nothing to plot",
                    kBadInput);
    for (int dev : skipped)
      std::cerr << "memsnap: note: " << shown << ": device " << dev << " has no trace entries: not plotted\n";

    report::TimelineView view{&loaded.input, &timelines};
    std::ostringstream out;
    if (format == PlotFormat::Svg)
      report::write_timeline_svg(out, view, report::SvgOptions{args->width, args->height});
    else
      report::write_timeline_csv(out, view);
    write_output(args->output, out.str());
    if (args->output != "-") {
      size_t points = 0;
      for (const auto& t : timelines) points += t.points.size();
      std::cerr << "wrote " << args->output << " (" << timelines.size()
                << (timelines.size() == 1 ? " device, " : " devices, ") << with_commas(points)
                << (points == 1 ? " point)\n" : " points)\n");
    }
  });
}

}  // namespace memsnap::cli
