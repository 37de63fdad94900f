// `memsnap check FILE...`: limits on snapshots for CI, with exit status, JSON and JUnit XML.
// Files are checked in parallel (-j), reported in argument order.
#include "memsnap/app/check_command.hpp"

#include <algorithm>
#include <iostream>
#include <optional>
#include <span>

#include "memsnap/app/output.hpp"
#include "memsnap/app/parallel.hpp"
#include "memsnap/report/check.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

namespace {

uint64_t size_value(const std::string& text, const std::string& where) {
  auto v = parse_size(text);
  if (!v) throw Failure(where + ": not a size: '" + text + "'", kBadInput);
  return *v;
}

double fraction_value(const std::string& text, const std::string& where) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= 0 && v <= 1))
    throw Failure(where + ": not a fraction from 0 to 1: '" + text + "'", kBadInput);
  return v;
}

/// The limits in force: the command line over --config.
analysis::Limits limits_of(const CheckRequest& a) {
  analysis::Limits l;
  if (!a.config.empty()) {
    std::string shown = terminal_safe(a.config);
    std::string text = read_json_input(a.config, kConfigMaxBytes);
    try {
      report::read_check_config(text, l);
    } catch (const report::CheckConfigError& e) {
      throw Failure(shown + ": " + e.what(), kBadInput);
    }
  }
  for (analysis::CheckKind k : analysis::kSizeChecks) {
    const std::string& text = a.sizes.at(analysis::to_string(k));
    if (!text.empty()) l.size(k) = size_value(text, std::string("--") + analysis::to_string(k));
  }
  for (const char* name : {"capacity", "min-headroom"}) {
    auto it = a.sizes.find(name);
    if (it == a.sizes.end() || it->second.empty()) continue;
    (std::string(name) == "capacity" ? l.capacity : l.min_headroom) = size_value(it->second, std::string("--") + name);
  }
  if (!a.max_fragmentation.empty()) l.max_fragmentation = fraction_value(a.max_fragmentation, "--max-fragmentation");
  if (a.no_leaks) l.no_leaks = true;
  if (a.no_oom) l.no_oom = true;
  return l;
}

struct FileChecks {
  std::vector<analysis::CheckLine> lines;
  std::string warnings;
};

FileChecks check_file(const std::string& path, const CommonOptions& common, const analysis::Limits& limits,
                      unsigned threads) {
  FileChecks fc;
  std::string shown = shown_path(path);
  auto error = file_error(path, [&] {
    analysis::AnalyzeOptions options;
    options.threads = threads;
    analyze_one(path, common, options,
                [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                  fc.warnings = warnings;
                  fc.lines = analysis::evaluate_limits(result, src.context.snap.settings, limits, shown);
                });
  });
  if (error) {
    analysis::CheckLine l;
    l.file = shown;
    l.status = analysis::CheckStatus::Error;
    l.message = *error;
    fc.lines = {std::move(l)};
  }
  return fc;
}

// The command: every file checked (-j), lines written in argument order, the exit status.
}  // namespace

void run_check(const CheckRequest& args, const report::TextStyle& style, std::ostream* into) {
  std::vector<std::string> inputs = args.files;  // what no output may be written onto
  if (!args.config.empty()) inputs.push_back(args.config);
  io::OutputFile output = open_results(into, inputs);
  std::ostream& out = output.stream();
  analysis::Limits limits = limits_of(args);
  if (!limits.any())
    throw Failure(
        "check: no limit given (--max-reserved, --max-allocated, --max-peak, --max-fragmentation, "
        "--max-stranded, --no-leaks, --no-oom, --capacity, --min-headroom or --config)",
        kBadInput);
  size_t stdin_count = std::count(args.files.begin(), args.files.end(), std::string("-"));
  if (stdin_count > 1) throw Failure("- (stdin) can be given once", kBadInput);
  std::optional<io::OutputFile> junit;
  if (!args.junit.empty()) {
    if (args.junit == "-") throw Failure("--junit: a file, not standard output", kBadInput);
    try {  // as open_output does: refused or unwritable before the work
      junit.emplace(args.junit, std::span<const std::string>(inputs));
    } catch (const io::OutputError& e) {
      throw Failure(e.what(), kBadInput);
    }
  }
  std::vector<FileChecks> results(args.files.size());
  std::vector<analysis::CheckLine> all;  // every line, but for JSON Lines without --junit: none kept
  analysis::CheckTotals t;
  const bool jsonl = args.common.format == Format::Jsonl;
  run_ordered(
      args.files.size(), effective_jobs(args.jobs),
      [&](size_t i) { results[i] = check_file(args.files[i], args.common, limits, args.files.size() > 1 ? 1 : 0); },
      [&](size_t i) {
        FileChecks fc = std::move(results[i]);
        results[i] = {};
        std::cerr << fc.warnings;
        analysis::CheckTotals ft = analysis::check_totals(fc.lines);
        t.checks += ft.checks, t.passed += ft.passed, t.failed += ft.failed, t.errors += ft.errors;
        t.skipped += ft.skipped;
        for (const auto& l : fc.lines)
          if (l.status == analysis::CheckStatus::Error) std::cerr << "memsnap: " << terminal_safe(l.message) << '\n';
        if (jsonl) report::write_check_jsonl_file(out, fc.lines);
        if (jsonl && !junit) return;
        for (auto& l : fc.lines) all.push_back(std::move(l));
      });
  if (jsonl)
    report::write_check_jsonl_summary(out, t);
  else if (args.common.format == Format::Json)
    report::write_check_json(out, all, limits);
  else
    report::write_check_text(out, all, style);
  if (junit) write_output(*junit, [&](std::ostream& os) { report::write_check_junit(os, all); });
  finish_results(output);
  if (t.errors)
    throw Failure(std::to_string(t.errors) + (t.errors == 1 ? " file" : " files") + " could not be read", kBadInput);
  if (t.failed)
    throw Failure(std::to_string(t.failed) + " of " + std::to_string(t.checks) + " checks failed", kCheckFailed);
}

}  // namespace memsnap::app
