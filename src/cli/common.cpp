// Shared command plumbing: options, loading, warnings, terminal detection.
#include "common.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "memsnap/util/error.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::cli {

void add_common_options(CLI::App& cmd, CommonOptions& o) {
  cmd.add_option("--format", o.format, "Output format: text (default) or json")
      ->transform(CLI::CheckedTransformer(std::map<std::string, Format>{{"text", Format::Text}, {"json", Format::Json}},
                                          CLI::ignore_case))
      ->option_text("text|json");
  cmd.add_flag("--no-color", o.no_color, "Never colour the text output (NO_COLOR is honoured too)");
  cmd.add_option("--max-memory", o.max_memory,
                 "Memory bound for reading the snapshot: decoded input, parse and model (default 4GiB)")
      ->option_text("SIZE");
}

snapshot::Loaded load(const std::string& path, const CommonOptions& o) {
  snapshot::LoadOptions lo;
  auto limit = parse_size(o.max_memory);
  if (!limit || *limit == 0) throw Failure("--max-memory: not a size: '" + o.max_memory + "'", kBadInput);
  lo.read.max_buffer_bytes = *limit;
  lo.max_memory = *limit;
  std::string shown = path == "-" ? "<stdin>" : path;
  try {
    return snapshot::load_snapshot(path, lo);
  } catch (const InputError& e) {
    throw Failure(shown + ": " + e.what(), kBadInput);
  } catch (const std::bad_alloc&) {
    throw Failure(shown + ": out of memory while reading the snapshot", kBadInput);
  }
}

report::TextStyle text_style(const CommonOptions& o) {
  report::TextStyle s;
  bool tty = isatty(STDOUT_FILENO) != 0;
  const char* no_color = std::getenv("NO_COLOR");
  s.color = tty && !o.no_color && !(no_color && *no_color);
  struct winsize ws {};
  if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) s.width = ws.ws_col;
  else if (const char* cols = std::getenv("COLUMNS"); cols && std::atoi(cols) >= 40) s.width = std::atoi(cols);
  return s;
}

void add_state_options(CLI::App& cmd, StateOptions& o) {
  cmd.add_option("--device", o.device, "Only this device (default: all)")->option_text("N");
  auto* at = cmd.add_option("--at", o.at, "The allocator state right after trace event INDEX (rebuilt by replay)")
                 ->option_text("INDEX");
  cmd.add_option("--at-time", o.at_time, "The state at the last trace event at or before this time (epoch microseconds)")
      ->option_text("US")
      ->excludes(at);
}

void check_device(const StateOptions& o, const snapshot::Snapshot& snap) {
  if (o.device && !snap.device(*o.device))
    throw Failure("--device " + std::to_string(*o.device) + ": the snapshot has no such device", kBadInput);
}

std::optional<uint32_t> resolve_at(const StateOptions& a, const snapshot::Device& d) {
  const auto& tr = d.trace;
  if (a.at) {
    if (tr.empty() || *a.at >= tr.size())
      throw Failure("--at " + std::to_string(*a.at) + ": device " + std::to_string(d.index) + " has " +
                        std::to_string(tr.size()) + " trace entries (valid indices 0 to " +
                        (tr.empty() ? std::string("none") : std::to_string(tr.size() - 1)) + ")",
                    kBadInput);
    return static_cast<uint32_t>(*a.at);
  }
  if (a.at_time) {
    std::optional<uint32_t> last;
    for (uint32_t i = 0; i < tr.size(); ++i)
      if (tr[i].has_time() && tr[i].time_us <= *a.at_time) last = i;
    if (!last)
      throw Failure("--at-time " + std::to_string(*a.at_time) + ": device " + std::to_string(d.index) +
                        " has no trace entry at or before that time",
                    kBadInput);
    return last;
  }
  return std::nullopt;
}


bool selected(const StateOptions& o, const snapshot::Device& d) { return !o.device || d.index == *o.device; }

DeviceState device_state(const StateOptions& o, const snapshot::Snapshot& snap, const snapshot::Device& dumped,
                         const analysis::Replay* replay) {
  std::optional<uint32_t> at = resolve_at(o, dumped);
  if (!at) return {dumped, std::nullopt};
  std::optional<analysis::Replay> own;
  if (!replay) replay = &own.emplace(snap, dumped);
  analysis::ReplayState st = replay->state_after(*at);
  DeviceState out{st.to_device(dumped.index), std::nullopt};
  out.device.trace = dumped.trace;
  const auto& e = dumped.trace[*at];
  out.at = report::AtPoint{*at, e.has_time() ? std::optional<int64_t>(e.time_us) : std::nullopt,
                           st.estimated_live_blocks()};
  return out;
}

void add_file_option(CLI::App& cmd, std::string& file) {
  cmd.add_option("FILE", file, "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin)")->required();
}

void print_warnings(const snapshot::Loaded& l) {
  std::string shown = l.input.path == "-" ? "<stdin>" : l.input.path;
  for (const auto& w : l.snapshot.warnings) std::cerr << "memsnap: warning: " << shown << ": " << w << '\n';
}

}  // namespace memsnap::cli
