// `memsnap report FILE [FILE2] -o report.html`: one self-contained offline HTML page.
#include "memsnap/app/report_command.hpp"

#include <future>
#include <iostream>
#include <memory>

#include "memsnap/analysis/diff.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/report/html.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

namespace {

analysis::AnalyzeOptions report_analyze_options(const ReportRequest& args) {
  analysis::AnalyzeOptions options;
  options.device = args.device;
  options.iterations.marker = args.iteration_marker;
  if (!args.capacity.empty()) {
    options.oom.capacity = parse_size(args.capacity);
    if (!options.oom.capacity || *options.oom.capacity == 0)
      throw Failure("--capacity: not a size: '" + args.capacity + "'", kBadInput);
  }
  analysis::TimelineOptions topt;
  topt.max_points = args.points;
  options.timeline = topt;
  analysis::PageOptions popt;
  popt.timeline_points = args.points;
  popt.even_states = args.states;
  options.page = popt;
  return options;
}

// Two inputs are independent: parse them on both cores, as diff does.
// Reserved: a vector that grows copies what has no noexcept move, and a Snapshot's copy is
// a deep one (every string interned afresh, see StringTable): correct, but not free.
std::vector<snapshot::Loaded> load_inputs(const std::vector<std::string>& files, const CommonOptions& common) {
  std::vector<snapshot::Loaded> loaded;
  loaded.reserve(files.size());
  if (files.size() == 2) {
    auto later = std::async(std::launch::async, [&] { return load(files[1], common); });
    loaded.push_back(load(files[0], common));
    loaded.push_back(later.get());
  } else {
    loaded.push_back(load(files[0], common));
  }
  return loaded;
}

// "wrote report.html (diff, 2 devices, 52 states, 1.20 MiB)" on stderr.
void say_written(const ReportRequest& args, const std::vector<analysis::AnalyzeResult>& results,
                 const io::OutputFile& output) {
  size_t devices = 0, states = 0;
  for (const auto& r : results)
    for (const auto& d : r.devices)
      if (d.page) {
        ++devices;
        states += d.page->states.size();
      }
  std::cerr << "wrote " << terminal_safe(args.output) << " (" << (args.files.size() == 2 ? "diff, " : "") << devices
            << (devices == 1 ? " device, " : " devices, ") << states << (states == 1 ? " state, " : " states, ")
            << human_bytes(output.bytes_written()) << ")\n";
}

}  // namespace

void run_report(const ReportRequest& args) {
  const auto& files = args.files;
  if (files.size() == 2 && files[0] == "-" && files[1] == "-") throw Failure("- (stdin) can be given once", kBadInput);
  analysis::AnalyzeOptions options = report_analyze_options(args);
  io::OutputFile output = open_output(args.output, files);  // refused or unwritable: before the work
  std::vector<snapshot::Loaded> loaded = load_inputs(files, args.common);
  std::vector<std::unique_ptr<analysis::Context>> contexts;
  std::vector<analysis::AnalyzeResult> results;
  for (const auto& l : loaded) {
    contexts.push_back(std::make_unique<analysis::Context>(l.snapshot, code_rules()));
    results.push_back(analysis::analyze(*contexts.back(), options));
    print_warnings(l, results.back().warnings);
  }
  report::HtmlView view;
  for (size_t i = 0; i < loaded.size(); ++i)
    view.files.push_back({report::Source{loaded[i].input, *contexts[i]}, &results[i]});
  std::vector<analysis::DeviceDiff> diff;
  if (loaded.size() == 2) {
    diff = analysis::diff_snapshots(*contexts[0], *contexts[1]);
    view.diff = &diff;
  }
  write_output(output, [&](std::ostream& out) { report::write_report_html(out, view); });
  if (!output.is_stdout() && !args.common.quiet) say_written(args, results, output);
}

}  // namespace memsnap::app
