// Reading a command's inputs: a snapshot under its memory bounds with file-named errors, its
// warnings, one file through load and analysis, and a JSON input of bounded size.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/app/failure.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::app {

enum class Format { Text, Json, Jsonl };

/// --max-memory's default, for every command that loads a snapshot.
inline constexpr const char* kDefaultMaxMemory = "4GiB";

/// What every command that reads a snapshot takes.
struct CommonOptions {
  Format format = Format::Text;
  bool no_color = false;
  std::string max_memory = kDefaultMaxMemory;
  bool quiet = false;  // no progress line
};

/// Which device and which moment a command looks at: --device, --at, --at-time.
struct StateOptions {
  std::optional<int> device;
  std::optional<uint64_t> at;
  std::optional<int64_t> at_time;
};
/// Copies --device / --at / --at-time into the analysis options.
void apply(const StateOptions& state, analysis::AnalyzeOptions& options);

/// What holds for every load of one run (one run has one command): --parser, --user-code and
/// --library as given, and what the environment says (the CLI reads it; nothing below does).
struct RunSettings {
  snapshot::Parser parser = snapshot::Parser::Auto;
  analysis::CodeRules code_rules;
  bool one_core = false;     // MEMSNAP_SPLIT=0: the parse on one core
  bool split_wait = false;   // MEMSNAP_SPLIT=wait: the parse in two halves, whatever the timing
  bool diagnostics = false;  // MEMSNAP_FAST_DEBUG=1: the fast path's diagnostics on stderr
};
/// The run's settings, set by the CLI before a command runs.
RunSettings& run_settings();
/// --user-code / --library as given.
const analysis::CodeRules& code_rules();

/// Loads a snapshot; any InputError becomes a Failure naming the file.
snapshot::Loaded load(const std::string& path, const CommonOptions& options);
/// Prints warnings to stderr as "memsnap: warning: FILE: ...", escaped for the terminal.
void print_warnings(const snapshot::Loaded& loaded, const std::vector<std::string>& more = {});
/// The same lines as one string, for a worker to hand to the thread that prints.
std::string warnings_text(const snapshot::Loaded& loaded, const std::vector<std::string>& more = {});
/// One file through the pipeline: load, context, analyze. `use` gets the report's source
/// and the result while the snapshot is alive, and the load and analysis warnings as text
/// (a command prints them, a worker of many files keeps them for later).
using AnalysedFn =
    std::function<void(const report::Source&, const analysis::AnalyzeResult&, const std::string& warnings)>;
void analyze_one(const std::string& path, const CommonOptions& common, const analysis::AnalyzeOptions& options,
                 const AnalysedFn& use);
/// Runs `fn`; an error about this one file (a Failure, an input or usage error, memory
/// exhausted) comes back as its one-line message naming `path`, anything else propagates.
std::optional<std::string> file_error(const std::string& path, const std::function<void()>& fn);
/// "<stdin>" for "-".
std::string shown_path(const std::string& path);

/// Reads a JSON input (a file, or "-" for stdin) of at most `limit` bytes, in chunks. Refused
/// with one line (exit 2) when it cannot be opened, when its first non-blank byte cannot start
/// a JSON document (so /dev/zero and binary files are refused at their first byte), or when it
/// holds more than `limit` bytes (at `limit` + 1 bytes read, never more).
std::string read_json_input(const std::string& path, uint64_t limit);
/// The largest --config file read (a config of every option is a few hundred bytes).
inline constexpr uint64_t kConfigMaxBytes = uint64_t{64} << 20;

}  // namespace memsnap::app
