// `memsnap analyze FILE`: options -> load -> analyze -> print.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common.hpp"
#include "fits_option.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"
#include "output.hpp"
#include "parallel.hpp"

namespace memsnap::cli {

namespace {

struct AnalyzeArgs {
  std::vector<std::string> files;
  unsigned jobs = 0;
  bool all = false;
  CommonOptions common;
  StateOptions state;
  std::string iteration_marker;
  std::string capacity;
  std::string oom_size;
  std::string oom_message;
  FitsOptions fits;
};

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

/// What a worker keeps of one file of many: the summary row, and the JSON document or the
/// text report. The snapshot itself is gone when the worker is done.
struct FileAnalysis {
  std::string warnings;
  std::optional<std::string> error;
  report::FleetRow row;
  report::FleetJson doc;  // --format json
  std::string text;       // --format text
};

FileAnalysis analyze_file(const std::string& path, const AnalyzeArgs& args, const analysis::AnalyzeOptions& options,
                          const report::TextStyle& style) {
  FileAnalysis fa;
  std::string shown = shown_path(path);
  fa.error = file_error(path, [&] {
    analyze_one(path, args.common, options,
                [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                  fa.warnings = warnings;
                  std::ostringstream json;
                  report::write_analyze_json(json, src, result);
                  // The row is read from the JSON document, exactly as `memsnap merge` reads it.
                  report::FleetJson doc = report::FleetJson::parse(json.str());
                  doc["file"] = shown;
                  fa.row = report::fleet_row(doc, shown);
                  if (args.common.format == Format::Json) {
                    fa.doc = std::move(doc);
                  } else {
                    std::ostringstream text;
                    report::write_analyze_text(text, src, result, style);
                    fa.text = std::move(text).str();
                  }
                });
  });
  return fa;
}

/// `memsnap analyze A B ...`: the fleet summary, then the worst file's report (or all with --all).
void analyze_many(const AnalyzeArgs& args, analysis::AnalyzeOptions options) {
  options.threads = 1;  // the files are the parallel work: no device threads on top of -j workers
  if (std::count(args.files.begin(), args.files.end(), std::string("-")) > 1)
    throw Failure("- (stdin) can be given once", kBadInput);
  report::TextStyle style = text_style(args.common);
  std::vector<FileAnalysis> results(args.files.size());
  report::Fleet fleet;
  std::vector<size_t> read;     // argument indices of the files analysed
  std::optional<size_t> worst;  // an OOM first, then the highest peak; the first such in argument order
  run_ordered(
      args.files.size(), effective_jobs(args.jobs),
      [&](size_t i) { results[i] = analyze_file(args.files[i], args, options, style); },
      [&](size_t i) {
        FileAnalysis& fa = results[i];
        std::cerr << fa.warnings;
        if (fa.error) {
          std::cerr << "memsnap: " << terminal_safe(*fa.error) << '\n';
          fleet.errors.push_back({shown_path(args.files[i]), *fa.error});
          return;
        }
        fleet.rows.push_back(fa.row);
        if (args.common.format == Format::Json) fleet.files.push_back(std::move(fa.doc));
        fa.doc = nullptr;
        read.push_back(i);
        // Without --all only the worst file's report is printed: keep that one text alone.
        if (!worst || std::pair(fa.row.oom_events > 0, fa.row.peak_or_allocated()) >
                          std::pair(results[*worst].row.oom_events > 0, results[*worst].row.peak_or_allocated())) {
          if (worst && !args.all) results[*worst].text = std::string();
          worst = i;
        } else if (!args.all) {
          fa.text = std::string();
        }
      });
  report::finish_fleet(fleet, /*sort_files=*/false);  // files stay in argument order
  if (args.common.format == Format::Json) {
    report::write_fleet_json(std::cout, fleet);
  } else {
    report::write_fleet_text(std::cout, fleet, style);
    for (size_t i : read) {
      if (!args.all && i != worst) continue;
      std::cout << '\n';
      if (!args.all) std::cout << "the worst file (an OOM first, then the highest peak); --all prints every file\n\n";
      std::cout << results[i].text;
    }
  }
  std::cout.flush();
  if (!fleet.errors.empty())
    throw Failure(
        std::to_string(fleet.errors.size()) + " of " + std::to_string(args.files.size()) + " files could not be read",
        kBadInput);
}

}  // namespace

void add_analyze(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  CLI::App* cmd = app.add_subcommand("analyze", "Where the GPU memory went: totals, free memory, peak, leaks, OOMs");
  add_files_option(*cmd, args->files);
  add_common_options(*cmd, args->common);
  add_jobs_option(*cmd, args->jobs);
  cmd->add_flag("--all", args->all,
                "With several files: every file's full report after the fleet summary, not only the worst one's");
  add_state_options(*cmd, args->state);
  cmd->add_option("--iteration-marker", args->iteration_marker,
                  "Where iterations start: a record_function annotation name, a site (train.py:110) whose "
                  "every allocation opens one, or a function name (default: Optimizer.step annotations, else "
                  "a repeating step with backward and optimizer work, or whole repeated passes)")
      ->option_text("NAME");
  cmd->add_option("--capacity", args->capacity,
                  "The GPU's total memory (e.g. 80GiB): lets the OOM analysis tell memory held outside "
                  "PyTorch's allocator")
      ->option_text("SIZE");
  cmd->add_option("--oom-size", args->oom_size,
                  "Explain an OOM the trace does not hold, using the dumped state: the \"Tried to allocate\" "
                  "size from the error message")
      ->option_text("SIZE");
  cmd->add_option("--oom-message", args->oom_message,
                  "PyTorch's \"CUDA out of memory\" message (or @FILE holding it): checked against the OOM "
                  "the file holds, or, without one, explained from the dumped state as --oom-size; its "
                  "capacity and free memory show memory outside the snapshot")
      ->option_text("TEXT");
  add_fits_options(*cmd, args->fits);
  cmd->callback([args] {
    io::OutputFile output = open_output("-", args->files);  // never onto an input (`>> X`)
    analysis::AnalyzeOptions options;
    apply(args->state, options);
    options.iterations.marker = args->iteration_marker;
    options.oom.capacity = size_option(args->capacity, "--capacity");
    options.oom.assumed_request = size_option(args->oom_size, "--oom-size");
    options.oom.message = oom_message_option(args->oom_message);
    options.fits = parse_fits(args->fits);
    if (args->files.size() > 1) return analyze_many(*args, options);

    analyze_one(args->files[0], args->common, options,
                [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                  std::cerr << warnings;
                  if (args->common.format == Format::Json)
                    report::write_analyze_json(std::cout, src, result);
                  else
                    report::write_analyze_text(std::cout, src, result, text_style(args->common));
                });
  });
}

}  // namespace memsnap::cli
