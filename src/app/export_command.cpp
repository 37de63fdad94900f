// `memsnap export FILE`: the snapshot back in PyTorch's schema, as JSON or a pickle, whole or
// cut to a window; or its timeline as Chrome trace events.
#include "memsnap/app/export_command.hpp"

#include <unistd.h>

#include <iostream>
#include <optional>

#include "memsnap/analysis/dump_roles.hpp"
#include "memsnap/analysis/slice.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/report/export.hpp"
#include "memsnap/report/perfetto.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

namespace {

ExportFormat resolve_format(const ExportRequest& a) {
  if (a.format) return *a.format;
  if (a.output == "-" || output_named(a.output, ".json")) return ExportFormat::Json;
  return ExportFormat::Pickle;  // .pickle, .pkl, or any other name: what torch's tools read
}

// The least a JSON export writes: every frame's file and function names, once per block,
// segment and trace event that holds its stack (a name memoised once in a pickle is written
// each time). Over the output bound, the export is refused before it writes anything.
uint64_t least_json_bytes(const snapshot::Snapshot& s) {
  std::vector<uint64_t> per_stack(s.stacks.size(), UINT64_MAX);
  auto bytes_of = [&](snapshot::StackId id) {
    uint64_t& b = per_stack.at(id.v);
    if (b == UINT64_MAX) {
      b = 0;
      for (snapshot::FrameId f : s.stacks[id])
        b += s.strings[s.frames[f].filename].size() + s.strings[s.frames[f].name].size();
    }
    return b;
  };
  uint64_t total = 0;
  auto add = [&](uint64_t b) { total = b > UINT64_MAX - total ? UINT64_MAX : total + b; };
  for (const auto& d : s.devices) {
    for (const auto& seg : d.segments) add(bytes_of(seg.stack));
    for (const auto& b : d.blocks) add(bytes_of(b.stack));
    for (size_t i = 0; i < d.trace.size(); ++i) add(bytes_of(d.trace.stack_at(i)));
  }
  return total;
}

// The timeline of every device with a trace as Chrome trace-event JSON.
void write_perfetto(io::OutputFile& output, const snapshot::Loaded& loaded, const snapshot::Snapshot& snap,
                    const std::string& shown, const ExportRequest& args) {
  analysis::Context ctx(snap, code_rules());
  analysis::AnalyzeOptions options;
  options.trace = false;  // the timeline, its peak and the iterations; no leak or OOM analysis
  options.iterations.marker = args.iteration_marker;
  analysis::TimelineOptions topt;
  topt.max_points = args.points;
  options.timeline = topt;
  analysis::AnalyzeResult result = analysis::analyze(ctx, options);
  print_warnings(loaded, result.warnings);
  size_t timelines = 0, points = 0;
  std::vector<int> left_out;
  for (const auto& d : result.devices)
    if (d.timeline) {
      ++timelines;
      points += d.timeline->points.size();
    } else if (!d.unused) {
      left_out.push_back(d.device);
    }
  if (timelines == 0)
    throw Failure(shown +
                      ": the snapshot has no trace entries (recorded with enabled='state' or history off): "
                      "no timeline to export",
                  kBadInput);
  for (int dev : left_out)
    std::cerr << "memsnap: note: " << terminal_safe(shown) << ": device " << dev << " has no trace entries: left out\n";
  report::PerfettoView view{&loaded.input, &ctx, &result};
  write_output(output, [&](std::ostream& out) { report::write_perfetto_json(out, view); });
  if (!output.is_stdout() && !args.quiet)
    std::cerr << "wrote " << args.output << " (Chrome trace events, " << timelines
              << (timelines == 1 ? " device, " : " devices, ") << with_commas(points)
              << (points == 1 ? " point, " : " points, ") << human_bytes(output.bytes_written()) << ")\n";
}

// The snapshot cut to the asked device and window, kept in `cut`; the whole one without either.
const snapshot::Snapshot& cut_to_window(const snapshot::Snapshot& whole, const ExportRequest& args,
                                        const std::string& shown, std::optional<snapshot::Snapshot>& cut) {
  if (!args.window.device && !args.window.has_window()) return whole;
  try {
    cut.emplace(analysis::slice(whole, args.window));
  } catch (const UsageError& e) {
    throw Failure(e.what(), kBadInput);
  }
  for (const auto& w : cut->warnings) std::cerr << "memsnap: note: " << shown << ": " << w << '\n';
  return *cut;
}

// "wrote OUT (pickle, 2 devices, 1,234 segments, 100,000 trace entries, 12.00 MiB)" on stderr.
void say_exported(const ExportRequest& args, ExportFormat format, const snapshot::Snapshot& snap,
                  const io::OutputFile& output) {
  uint64_t events = 0, segments = 0;
  for (const auto& d : snap.devices) {
    events += d.trace.size();
    segments += d.segments.size();
  }
  std::cerr << "wrote " << args.output << " (" << (format == ExportFormat::Json ? "JSON" : "pickle") << ", "
            << snap.devices.size() << (snap.devices.size() == 1 ? " device, " : " devices, ") << with_commas(segments)
            << (segments == 1 ? " segment, " : " segments, ") << with_commas(events)
            << (events == 1 ? " trace entry, " : " trace entries, ") << human_bytes(output.bytes_written()) << ")\n";
}

}  // namespace

void run_export(const ExportRequest& args) {
  ExportFormat format = resolve_format(args);
  if (format == ExportFormat::Pickle && args.output == "-" && isatty(STDOUT_FILENO))
    throw Failure("refusing to write a pickle to a terminal: use -o FILE or redirect the output", kBadInput);
  analysis::RoleRules role_rules;
  for (const auto& r : args.roles) role_rules.user.push_back(analysis::parse_role_rule(r));  // exit 2 if bad
  io::OutputFile output = open_output(args.output, {args.file});
  CommonOptions common;
  common.max_memory = args.max_memory;
  common.quiet = args.quiet;
  snapshot::Loaded loaded = load(args.file, common);
  print_warnings(loaded);
  bound_output(output, args.max_output, loaded.input.decoded_bytes);
  std::string shown = args.file == "-" ? "<stdin>" : args.file;

  std::optional<snapshot::Snapshot> cut;
  const snapshot::Snapshot& snap = cut_to_window(loaded.snapshot, args, shown, cut);
  if (format == ExportFormat::Json && least_json_bytes(snap) > output.limit())
    throw Failure(output.limit_message(), kBadInput);
  if (format == ExportFormat::Perfetto) {
    write_perfetto(output, loaded, snap, shown, args);
    return;
  }
  // Each block's role, as analyze counts it on the file written (the window's, when cut).
  report::ExportRoles roles;
  {
    analysis::Context ctx(snap, code_rules());
    for (const auto& d : snap.devices) roles.push_back(analysis::dump_roles(ctx, d, role_rules));
  }
  write_output(output, [&](std::ostream& out) {
    if (format == ExportFormat::Json)
      report::write_snapshot_json(out, snap, &roles);
    else
      report::write_snapshot_pickle(out, snap, &roles);
  });
  if (!output.is_stdout() && !args.quiet) say_exported(args, format, snap, output);
}

}  // namespace memsnap::app
