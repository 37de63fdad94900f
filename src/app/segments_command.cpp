// `memsnap segments FILE...`: load -> analyze (state only) -> print the segment map.
// Several files are read in parallel (-j) and printed in argument order.
#include "memsnap/app/segments_command.hpp"

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "memsnap/app/output.hpp"
#include "memsnap/app/parallel.hpp"
#include "memsnap/report/segments.hpp"
#include "memsnap/util/terminal.hpp"

namespace memsnap::app {

namespace {

struct FileSegments {
  std::string warnings;
  std::optional<std::string> error;
  std::string output;  // the report, text or one JSON document
};

void write_segments(std::ostream& out, const SegmentsRequest& args, const report::Source& src,
                    const analysis::AnalyzeResult& result, const report::TextStyle& style) {
  if (args.common.format == Format::Json)
    report::write_segments_json(out, src, result, size_t(args.top));
  else
    report::write_segments_text(out, src, result, size_t(args.top), style);
}

FileSegments segments_of(const std::string& path, const SegmentsRequest& args, const analysis::AnalyzeOptions& options,
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

void run_segments(const SegmentsRequest& request, const report::TextStyle& style, std::ostream* into) {
  io::OutputFile output = open_results(into, request.files);  // never onto an input (`>> X`)
  std::ostream& out = output.stream();
  analysis::AnalyzeOptions options;
  apply(request.state, options);
  options.trace = false;  // the segment map needs the state only
  if (request.files.size() == 1) {
    analyze_one(request.files[0], request.common, options,
                [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                  std::cerr << warnings;
                  write_segments(out, request, src, result, style);
                });
    finish_results(output);
    return;
  }
  if (std::count(request.files.begin(), request.files.end(), std::string("-")) > 1)
    throw Failure("- (stdin) can be given once", kBadInput);
  // Several files: text reports one after another; JSON as {"files": [document + "file"]}.
  bool json = request.common.format == Format::Json;
  options.threads = 1;  // the files are the parallel work
  std::vector<std::string> docs;
  std::vector<FileSegments> results(request.files.size());
  size_t errors = 0, printed = 0;
  run_ordered(
      request.files.size(), effective_jobs(request.jobs),
      [&](size_t i) { results[i] = segments_of(request.files[i], request, options, style); },
      [&](size_t i) {
        FileSegments& fs = results[i];
        std::cerr << fs.warnings;
        if (fs.error) {
          std::cerr << "memsnap: " << terminal_safe(*fs.error) << '\n';
          ++errors;
        } else if (json) {
          docs.push_back(std::move(fs.output));
        } else {
          if (printed++) out << '\n';
          out << fs.output << std::flush;
        }
        fs = {};
      });
  if (json) report::write_files_json(out, docs);
  out.flush();
  if (!errors) finish_results(output);
  if (errors)
    throw Failure(std::to_string(errors) + " of " + std::to_string(request.files.size()) + " files could not be read",
                  kBadInput);
}

}  // namespace memsnap::app
