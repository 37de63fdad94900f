// `memsnap segments FILE...`: options -> load -> analyze (state only) -> print the segment map.
// Several files are read in parallel (-j) and printed in argument order.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "common.hpp"
#include "memsnap/report/segments.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/app/parallel.hpp"

namespace memsnap::cli {

namespace {
struct SegmentsArgs {
  std::vector<std::string> files;
  long long top = 20;
  unsigned jobs = 0;
  CommonOptions common;
  StateOptions state;
};

struct FileSegments {
  std::string warnings;
  std::optional<std::string> error;
  std::string output;  // the report, text or one JSON document
};

void write_segments(std::ostream& out, const SegmentsArgs& args, const report::Source& src,
                    const analysis::AnalyzeResult& result, const report::TextStyle& style) {
  if (args.common.format == Format::Json)
    report::write_segments_json(out, src, result, size_t(args.top));
  else
    report::write_segments_text(out, src, result, size_t(args.top), style);
}

FileSegments segments_of(const std::string& path, const SegmentsArgs& args, const analysis::AnalyzeOptions& options,
                         const report::TextStyle& style) {
  FileSegments fs;
  fs.error = file_error(path, [&] {
    analyze_one(path, args.common, options,
                [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                  fs.warnings = warnings;
                  if (args.common.format == Format::Json && args.files.size() > 1) {
                    fs.output = report::segments_json_document(src, result, size_t(args.top), shown_path(path));
                    return;
                  }
                  std::ostringstream out;
                  write_segments(out, args, src, result, style);
                  fs.output = std::move(out).str();
                });
  });
  return fs;
}
}  // namespace

void add_segments(CLI::App& app) {
  auto args = std::make_shared<SegmentsArgs>();
  CLI::App* cmd =
      app.add_subcommand("segments", "The segment map: each segment's blocks to scale, worst fragmented first");
  add_files_option(*cmd, args->files);
  cmd->add_option("--top", args->top, "Segments shown per device (default 20; 0 shows all)")->option_text("N");
  add_common_options(*cmd, args->common);
  add_state_options(*cmd, args->state);
  add_jobs_option(*cmd, args->jobs);
  cmd->parse_complete_callback([args] {
    if (args->top < 0) throw Failure("--top: must be 0 (all) or more, got " + std::to_string(args->top), kBadInput);
  });
  cmd->callback([args] {
    io::OutputFile output = app::open_output("-", args->files);  // never onto an input (`>> X`)
    analysis::AnalyzeOptions options;
    apply(args->state, options);
    options.trace = false;  // the segment map needs the state only
    report::TextStyle style = text_style(args->common);
    if (args->files.size() == 1) {
      analyze_one(args->files[0], args->common, options,
                  [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                    std::cerr << warnings;
                    write_segments(std::cout, *args, src, result, style);
                  });
      return;
    }
    if (std::count(args->files.begin(), args->files.end(), std::string("-")) > 1)
      throw Failure("- (stdin) can be given once", kBadInput);
    // Several files: text reports one after another; JSON as {"files": [document + "file"]}.
    bool json = args->common.format == Format::Json;
    options.threads = 1;  // the files are the parallel work
    std::vector<std::string> docs;
    std::vector<FileSegments> results(args->files.size());
    size_t errors = 0, printed = 0;
    app::run_ordered(
        args->files.size(), app::effective_jobs(args->jobs),
        [&](size_t i) { results[i] = segments_of(args->files[i], *args, options, style); },
        [&](size_t i) {
          FileSegments& fs = results[i];
          std::cerr << fs.warnings;
          if (fs.error) {
            std::cerr << "memsnap: " << terminal_safe(*fs.error) << '\n';
            ++errors;
          } else if (json) {
            docs.push_back(std::move(fs.output));
          } else {
            if (printed++) std::cout << '\n';
            std::cout << fs.output << std::flush;
          }
          fs = {};
        });
    if (json) report::write_files_json(std::cout, docs);
    std::cout.flush();
    if (errors)
      throw Failure(std::to_string(errors) + " of " + std::to_string(args->files.size()) + " files could not be read",
                    kBadInput);
  });
}

}  // namespace memsnap::cli
