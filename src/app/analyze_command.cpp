// `memsnap analyze FILE...`: load -> analyze -> print; several files on -j workers with a
// fleet summary.
#include "memsnap/app/analyze_command.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "memsnap/app/file_view.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/app/parallel.hpp"
#include "memsnap/report/file_lines.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

namespace {

/// --oom-message TEXT, or @FILE for the text in a file (its first 64 KiB).
std::optional<analysis::OomMessage> oom_message_option(const std::string& arg) {
  if (arg.empty()) return std::nullopt;
  std::string text = arg;
  if (arg.front() == '@') {
    std::ifstream in(arg.substr(1), std::ios::binary);
    if (!in) throw Failure("--oom-message: " + terminal_safe(arg.substr(1)) + ": cannot open the file", kBadInput);
    text.assign(65536, '\0');
    in.read(text.data(), std::streamsize(text.size()));
    text.resize(size_t(in.gcount()));
  }
  std::optional<analysis::OomMessage> m = analysis::parse_oom_message(text);
  if (!m)
    throw Failure(
        "--oom-message: no \"Tried to allocate SIZE\" in the text: paste PyTorch's \"CUDA out of memory\" "
        "message whole",
        kBadInput);
  return m;
}

std::optional<uint64_t> size_option(const std::string& text, const char* name) {
  if (text.empty()) return std::nullopt;
  auto v = parse_size(text);
  if (!v || *v == 0) throw Failure(std::string(name) + ": not a size: '" + text + "'", kBadInput);
  return v;
}

/// What a worker keeps of one file of many: the summary row, and its output (the JSON
/// document, the JSON Lines line or the text report). The snapshot itself is gone when the
/// worker is done, and the output once it is written.
struct FileAnalysis {
  std::string warnings;
  std::optional<std::string> error;
  analysis::FleetRow row;
  report::FleetFile file;  // --format json
  std::string output;      // --format jsonl: the line; text: the report
};

FileAnalysis analyze_file(const std::string& path, const AnalyzeRequest& args, const analysis::AnalyzeOptions& options,
                          const report::TextStyle& style) {
  FileAnalysis fa;
  std::string shown = shown_path(path);
  fa.error = file_error(path, [&] {
    analyze_one(path, args.common, options,
                [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                  fa.warnings = warnings;
                  fa.row = analysis::fleet_row(result, shown);
                  std::ostringstream out;
                  switch (args.common.format) {
                    case Format::Json: fa.file = report::fleet_file(src, result, shown); return;
                    case Format::Jsonl: report::write_jsonl_file(out, src, result, shown); break;
                    case Format::Text: report::write_analyze_text(out, src, result, style); break;
                  }
                  fa.output = std::move(out).str();
                });
  });
  return fa;
}

/// `memsnap analyze A B ...`: the fleet summary, then the worst file's report (or all with --all).
/// JSON and JSON Lines are written file by file as each one's turn comes: memory holds the rows,
/// the files being worked on and, for text, the worst file's report.
void analyze_many(const AnalyzeRequest& args, analysis::AnalyzeOptions options, const report::TextStyle& style,
                  std::ostream& out) {
  options.threads = 1;  // the files are the parallel work: no device threads on top of -j workers
  if (std::count(args.files.begin(), args.files.end(), std::string("-")) > 1)
    throw Failure("- (stdin) can be given once", kBadInput);
  const Format format = args.common.format;
  std::vector<FileAnalysis> results(args.files.size());
  report::Fleet fleet;
  std::vector<size_t> kept;     // argument indices of the reports kept for printing
  std::optional<size_t> worst;  // an OOM first, then the highest peak; the first such in argument order
  analysis::FleetRow worst_row;
  if (format == Format::Json) report::write_fleet_json_begin(out);
  if (format == Format::Jsonl) {
    std::vector<std::string> inputs;
    for (const auto& f : args.files) inputs.push_back(shown_path(f));
    report::write_jsonl_header(out, "analyze", inputs);
  }
  bool any_file = false;
  run_ordered(
      args.files.size(), effective_jobs(args.jobs),
      [&](size_t i) { results[i] = analyze_file(args.files[i], args, options, style); },
      [&](size_t i) {
        FileAnalysis fa = std::move(results[i]);
        results[i] = {};
        std::cerr << fa.warnings;
        if (fa.error) {
          std::cerr << "memsnap: " << terminal_safe(*fa.error) << '\n';
          fleet.errors.push_back({shown_path(args.files[i]), *fa.error});
          if (format == Format::Jsonl) report::write_jsonl_error(out, shown_path(args.files[i]), *fa.error);
          return;
        }
        fleet.rows.push_back(fa.row);
        if (format == Format::Json) {
          report::write_fleet_json_file(out, fa.file, !any_file);
          any_file = true;
          return;
        }
        if (format == Format::Jsonl) {
          out << fa.output << std::flush;
          return;
        }
        // Text: without --all only the worst file's report is printed; keep that one alone.
        if (args.all) {
          results[i].output = std::move(fa.output);
          kept.push_back(i);
        } else if (!worst || analysis::worse(fa.row, worst_row)) {
          if (worst) results[*worst].output.clear();
          worst = i, worst_row = fa.row;
          results[i].output = std::move(fa.output);
        }
      });
  report::finish_fleet(fleet, /*sort_files=*/false);
  if (format == Format::Json) {
    report::write_fleet_json_end(out, fleet, any_file);
  } else if (format == Format::Jsonl) {
    report::write_jsonl_fleet(out, fleet);
  } else {
    report::write_fleet_text(out, fleet, style);
    if (worst) kept = {*worst};
    for (size_t i : kept) {
      out << '\n';
      if (!args.all) out << "the worst file (an OOM first, then the highest peak); --all prints every file\n\n";
      out << results[i].output;
    }
  }
  out.flush();
  if (!fleet.errors.empty())
    throw Failure(
        std::to_string(fleet.errors.size()) + " of " + std::to_string(args.files.size()) + " files could not be read",
        kBadInput);
}

/// `analyze --file PATH`: one source file's memory by line, in place of the report.
void analyze_file_view(const AnalyzeRequest& args, const report::TextStyle& style, std::ostream& out) {
  if (args.files.size() != 1 || args.common.format == Format::Jsonl)
    throw Failure("--file: one snapshot at a time, as text or json", kBadInput);
  if (args.state.at || args.state.at_time || !args.fits.size.empty() || !args.oom_message.empty() ||
      !args.oom_size.empty())
    throw Failure(
        "--file: the view is at the peak, at the dump and over the trace: not with --at, --at-time, "
        "--fits, --oom-size or --oom-message",
        kBadInput);
  snapshot::Loaded loaded = load(args.files[0], args.common);
  print_warnings(loaded);
  analysis::Context ctx(loaded.snapshot, code_rules());
  analysis::FileLines view = file_view(loaded.snapshot, shown_path(args.files[0]), args.file_view, args.state.device);
  report::Source src{loaded.input, ctx};
  if (args.common.format == Format::Json)
    report::write_file_lines_json(out, src, view);
  else
    report::write_file_lines_text(out, src, view, style);
}

}  // namespace

void run_analyze(const AnalyzeRequest& request, const report::TextStyle& style, std::ostream* into) {
  io::OutputFile output = open_results(into, request.files);  // never onto an input (`>> X`)
  std::ostream& out = output.stream();
  analysis::AnalyzeOptions options;
  apply(request.state, options);
  options.iterations.marker = request.iteration_marker;
  options.oom.capacity = size_option(request.capacity, "--capacity");
  options.oom.assumed_request = size_option(request.oom_size, "--oom-size");
  options.oom.message = oom_message_option(request.oom_message);
  options.fits = parse_fits(request.fits);
  for (const auto& r : request.roles) options.roles.user.push_back(analysis::parse_role_rule(r));  // exit 2 if bad
  options.phases_from_ranges = request.phases == "annotations";
  if (!request.file_view.empty()) {
    analyze_file_view(request, style, out);
    finish_results(output);
    return;
  }
  if (request.files.size() > 1 || request.common.format == Format::Jsonl) {
    analyze_many(request, options, style, out);
    finish_results(output);
    return;
  }

  analyze_one(request.files[0], request.common, options,
              [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                std::cerr << warnings;
                if (request.common.format == Format::Json)
                  report::write_analyze_json(out, src, result);
                else
                  report::write_analyze_text(out, src, result, style);
              });
  finish_results(output);
}

}  // namespace memsnap::app
