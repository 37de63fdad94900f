// `memsnap check FILE... --max-peak 40GiB ...`: limits on snapshots for CI, with exit status,
// JSON and JUnit XML. Files are checked in parallel (-j), reported in argument order.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>

#include "common.hpp"
#include "memsnap/report/check.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"
#include "output.hpp"
#include "parallel.hpp"

namespace memsnap::cli {

namespace {

using nlohmann::ordered_json;

// The size limits, in the order they are checked and printed.
constexpr const char* kSizeChecks[] = {"max-reserved", "max-allocated", "max-peak", "max-stranded"};

struct CheckArgs {
  std::vector<std::string> files;
  CommonOptions common;
  unsigned jobs = 0;
  std::string junit;
  std::string config;
  std::map<std::string, std::string> sizes;  // option name -> text, "" when not given
  std::string max_fragmentation;
  bool no_leaks = false, no_oom = false;
};

/// The limits in force: command line over config.
struct Limits {
  std::map<std::string, uint64_t> sizes;
  std::optional<double> fragmentation;
  bool no_leaks = false, no_oom = false;

  bool any() const { return !sizes.empty() || fragmentation || no_leaks || no_oom; }
  ordered_json json() const {
    ordered_json j = ordered_json::object();
    for (const char* name : kSizeChecks)
      if (auto it = sizes.find(name); it != sizes.end()) j[name] = it->second;
    if (fragmentation) j["max-fragmentation"] = *fragmentation;
    if (no_leaks) j["no-leaks"] = true;
    if (no_oom) j["no-oom"] = true;
    return j;
  }
};

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

/// Reads --config FILE into `limits`: keys are the options without dashes.
void read_config(const std::string& path, Limits& limits) {
  std::string shown = terminal_safe(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure(shown + ": cannot open the config file", kBadInput);
  std::stringstream text;
  text << in.rdbuf();
  ordered_json j;
  try {
    j = ordered_json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Failure(shown + ": not JSON: " + e.what(), kBadInput);
  }
  if (!j.is_object()) throw Failure(shown + ": the config must be a JSON object", kBadInput);
  for (const auto& [key, value] : j.items()) {
    std::string where = shown + ": " + terminal_safe(key);
    bool is_size = false;
    for (const char* name : kSizeChecks) is_size |= key == name;
    if (is_size) {
      if (value.is_string())
        limits.sizes[key] = size_value(value.get<std::string>(), where);
      else if (value.is_number_unsigned())
        limits.sizes[key] = value.get<uint64_t>();
      else
        throw Failure(where + ": a size is a string (\"20GiB\") or a number of bytes", kBadInput);
    } else if (key == "max-fragmentation") {
      if (!value.is_number() || !(value.get<double>() >= 0 && value.get<double>() <= 1))
        throw Failure(where + ": a number from 0 to 1", kBadInput);
      limits.fragmentation = value.get<double>();
    } else if (key == "no-leaks" || key == "no-oom") {
      if (!value.is_boolean()) throw Failure(where + ": true or false", kBadInput);
      (key == "no-leaks" ? limits.no_leaks : limits.no_oom) = value.get<bool>();
    } else {
      throw Failure(shown + ": unknown key '" + terminal_safe(key) +
                        "' (known: max-reserved, max-allocated, max-peak, max-fragmentation, max-stranded, "
                        "no-leaks, no-oom)",
                    kBadInput);
    }
  }
}

Limits limits_of(const CheckArgs& a, const CLI::App& cmd) {
  Limits l;
  if (!a.config.empty()) read_config(a.config, l);
  for (const auto& [name, text] : a.sizes)
    if (!text.empty()) l.sizes[name] = size_value(text, "--" + name);
  if (!a.max_fragmentation.empty()) l.fragmentation = fraction_value(a.max_fragmentation, "--max-fragmentation");
  if (cmd.count("--no-leaks")) l.no_leaks = true;
  if (cmd.count("--no-oom")) l.no_oom = true;
  return l;
}

report::CheckLine size_line(const std::string& file, int device, const std::string& check, uint64_t figure,
                            uint64_t limit, std::string what) {
  report::CheckLine l;
  l.file = file;
  l.device = device;
  l.check = check;
  l.status = figure <= limit ? report::CheckStatus::Pass : report::CheckStatus::Fail;
  l.figure = figure;
  l.limit = limit;
  l.figure_text = human_bytes(figure);
  l.limit_text = human_bytes(limit);
  l.what = std::move(what);
  return l;
}

report::CheckLine count_line(const std::string& file, int device, const std::string& check, uint64_t figure,
                             std::string what) {
  report::CheckLine l;
  l.file = file;
  l.device = device;
  l.check = check;
  l.status = figure == 0 ? report::CheckStatus::Pass : report::CheckStatus::Fail;
  l.figure = figure;
  l.limit = 0;
  l.figure_text = std::to_string(figure);
  l.limit_text = "0";
  l.what = std::move(what);
  return l;
}

/// The checks of one analysed device, in a fixed order.
void check_device(const std::string& file, const analysis::DeviceAnalysis& d,
                  const snapshot::AllocatorSettings& settings, const Limits& limits,
                  std::vector<report::CheckLine>& out) {
  const auto& t = d.accounting;
  auto size = [&](const char* name, uint64_t figure, const char* what) {
    if (auto it = limits.sizes.find(name); it != limits.sizes.end())
      out.push_back(size_line(file, d.device, name, figure, it->second, what));
  };
  size("max-reserved", t.reserved_bytes, "devices[].totals.reserved_bytes");
  size("max-allocated", t.allocated_bytes, "devices[].totals.allocated_bytes");
  // A check the file cannot answer is not judged, never passed: no leak can be seen
  // without iterations to compare, no OOM without a trace, and neither an OOM nor a
  // higher peak among events the ring buffer dropped.
  auto not_judged = [&](report::CheckLine l, std::string why) {
    l.status = report::CheckStatus::Skip;
    l.figure = nullptr;  // no figure: 0 would read as a pass
    l.figure_text.clear();
    l.message = std::move(why);
    out.push_back(std::move(l));
  };
  const bool dropped = d.trace.dropped != analysis::DroppedEvents::NotShown;
  auto peak_limit = limits.sizes.find("max-peak");
  if (d.peaks.allocated && dropped && peak_limit != limits.sizes.end() &&
      d.peaks.allocated->allocated_bytes <= peak_limit->second) {
    // Only a peak above the limit is a finding: a higher one may have been dropped.
    not_judged(size_line(file, d.device, "max-peak", d.peaks.allocated->allocated_bytes, peak_limit->second,
                         "devices[].trace.events_dropped"),
               "not judged: the trace's peak, " + human_bytes(d.peaks.allocated->allocated_bytes) +
                   ", is within the limit, but " + report::dropped_events_words(d.trace, settings) +
                   ": a higher peak among them would not show");
  } else if (d.peaks.allocated) {
    size("max-peak", d.peaks.allocated->allocated_bytes, "devices[].peak.allocated_bytes");
  } else {
    size("max-peak", t.allocated_bytes, "devices[].totals.allocated_bytes (no trace, so no peak)");
  }
  if (limits.fragmentation) {
    double worst = 0;
    for (const auto& p : t.pools) worst = std::max(worst, p.fragmentation);
    report::CheckLine l;
    l.file = file;
    l.device = d.device;
    l.check = "max-fragmentation";
    l.status = worst <= *limits.fragmentation ? report::CheckStatus::Pass : report::CheckStatus::Fail;
    l.figure = worst;
    l.limit = *limits.fragmentation;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", worst);
    l.figure_text = buf;
    std::snprintf(buf, sizeof buf, "%.3f", *limits.fragmentation);
    l.limit_text = buf;
    l.what = "devices[].fragmentation.pools[].fragmentation (the highest pool)";
    out.push_back(std::move(l));
  }
  size("max-stranded", t.stranded_bytes, "devices[].fragmentation.stranded_bytes");
  if (limits.no_leaks) {
    if (analysis::leaks_judged(d.iterations))
      out.push_back(count_line(file, d.device, "no-leaks", d.leaks.size(), "devices[].leaks"));
    else
      not_judged(count_line(file, d.device, "no-leaks", 0, "devices[].iterations"),
                 "not judged: leaks are judged over " + std::to_string(analysis::kLeakMinIterations) +
                     " iterations or more, and " +
                     (d.iterations.count ? std::to_string(d.iterations.count) + " were found"
                                         : "none were found: " + report::iteration_evidence(d.iterations)));
  }
  if (limits.no_oom) {
    // An OOM in the trace fails; none passes only when the trace shows no sign of
    // having dropped what came before it.
    if (!d.trace.entries)
      not_judged(count_line(file, d.device, "no-oom", 0, "devices[].trace.entries"),
                 "not judged: the device has no trace, and OOM events are recorded only there");
    else if (d.ooms.total == 0 && dropped)
      not_judged(
          count_line(file, d.device, "no-oom", 0, "devices[].trace.events_dropped"),
          "not judged: " + report::dropped_events_words(d.trace, settings) + ": an OOM among them would not show");
    else
      out.push_back(count_line(file, d.device, "no-oom", d.ooms.total, "devices[].oom_events"));
  }
}

struct FileChecks {
  std::vector<report::CheckLine> lines;
  std::string warnings;
};

FileChecks check_file(const std::string& path, const CommonOptions& common, const Limits& limits, unsigned threads) {
  FileChecks fc;
  std::string shown = shown_path(path);
  auto error = file_error(path, [&] {
    analysis::AnalyzeOptions options;
    options.threads = threads;
    analyze_one(path, common, options,
                [&](const report::Source& src, const analysis::AnalyzeResult& result, const std::string& warnings) {
                  fc.warnings = warnings;
                  bool any_used = false;
                  for (const auto& d : result.devices) any_used |= !d.unused;
                  for (const auto& d : result.devices)
                    if (!d.unused || !any_used) check_device(shown, d, src.context.snap.settings, limits, fc.lines);
                });
  });
  if (error) {
    report::CheckLine l;
    l.file = shown;
    l.status = report::CheckStatus::Error;
    l.message = *error;
    fc.lines = {std::move(l)};
  }
  return fc;
}

}  // namespace

void add_check(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd =
      app.add_subcommand("check", "Limits for CI: PASS/FAIL/SKIP per check, file and device; exit 1 on a failure");
  add_files_option(*cmd, args->files);
  auto size_opt = [&](const char* name, const char* what) {
    args->sizes[name] = "";
    cmd->add_option(std::string("--") + name, args->sizes[name], what)->option_text("SIZE");
  };
  size_opt("max-reserved", "Fail when memory reserved at the dump exceeds SIZE (e.g. 20GiB)");
  size_opt("max-allocated", "Fail when memory allocated at the dump exceeds SIZE");
  size_opt("max-peak",
           "Fail when the trace's peak of allocated memory exceeds SIZE (allocated at the dump without a trace; "
           "SKIP within SIZE when the trace's ring buffer dropped older events)");
  cmd->add_option("--max-fragmentation", args->max_fragmentation,
                  "Fail when a pool's fragmentation (1 - largest stranded piece / stranded bytes, as in analyze) "
                  "exceeds F, from 0 to 1")
      ->option_text("F");
  size_opt("max-stranded", "Fail when free memory stranded by live allocations exceeds SIZE");
  cmd->add_flag("--no-leaks", args->no_leaks,
                "Fail when a site leaks across iterations (SKIP with fewer than 5 iterations found)");
  cmd->add_flag("--no-oom", args->no_oom,
                "Fail when the snapshot records an out-of-memory event (SKIP on a device without a trace, or one whose "
                "ring buffer dropped older events)");
  cmd->add_option("--config", args->config,
                  "Limits from a JSON object whose keys are these options without dashes, e.g. "
                  "{\"max-reserved\": \"20GiB\", \"no-leaks\": true}; the command line overrides it")
      ->option_text("FILE");
  cmd->add_option("--junit", args->junit, "Also write the results as JUnit XML to FILE")->option_text("FILE");
  add_jobs_option(*cmd, args->jobs);
  add_common_options(*cmd, args->common);
  cmd->footer(
      "Exit status: 0 every check passed; 1 a check failed; 2 a usage error, or a file\n"
      "could not be read (the others are still checked and reported; an unreadable file\n"
      "outranks a failed check).");
  cmd->callback([args, cmd] {
    std::vector<std::string> inputs = args->files;  // what no output may be written onto
    if (!args->config.empty()) inputs.push_back(args->config);
    io::OutputFile output = open_output("-", inputs);
    Limits limits = limits_of(*args, *cmd);
    if (!limits.any())
      throw Failure(
          "check: no limit given (--max-reserved, --max-allocated, --max-peak, --max-fragmentation, "
          "--max-stranded, --no-leaks, --no-oom or --config)",
          kBadInput);
    size_t stdin_count = std::count(args->files.begin(), args->files.end(), std::string("-"));
    if (stdin_count > 1) throw Failure("- (stdin) can be given once", kBadInput);
    std::optional<io::OutputFile> junit;
    if (!args->junit.empty()) {
      if (args->junit == "-") throw Failure("--junit: a file, not standard output", kBadInput);
      try {  // as open_output does: refused or unwritable before the work
        junit.emplace(args->junit, std::span<const std::string>(inputs));
      } catch (const io::OutputError& e) {
        throw Failure(e.what(), kBadInput);
      }
    }
    std::vector<FileChecks> results(args->files.size());
    std::vector<report::CheckLine> all;
    report::TextStyle style = text_style(args->common);
    run_ordered(
        args->files.size(), effective_jobs(args->jobs),
        [&](size_t i) {
          results[i] = check_file(args->files[i], args->common, limits, args->files.size() > 1 ? 1 : 0);
        },
        [&](size_t i) {
          std::cerr << results[i].warnings;
          for (auto& l : results[i].lines) {
            if (l.status == report::CheckStatus::Error) std::cerr << "memsnap: " << terminal_safe(l.message) << '\n';
            all.push_back(std::move(l));
          }
          results[i] = {};
        });
    if (args->common.format == Format::Json)
      report::write_check_json(std::cout, all, limits.json());
    else
      report::write_check_text(std::cout, all, style);
    if (junit) write_output(*junit, [&](std::ostream& out) { report::write_check_junit(out, all); });
    report::CheckTotals t = report::check_totals(all);
    std::cout.flush();
    if (t.errors)
      throw Failure(std::to_string(t.errors) + (t.errors == 1 ? " file" : " files") + " could not be read", kBadInput);
    if (t.failed)
      throw Failure(std::to_string(t.failed) + " of " + std::to_string(t.checks) + " checks failed", kCheckFailed);
  });
}

}  // namespace memsnap::cli
