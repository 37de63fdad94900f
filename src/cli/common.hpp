// What every memsnap command shares: output options, loading with file-named errors,
// the state options, exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/app/failure.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::cli {

// The exit statuses and the fatal error live with the commands' work (app/failure.hpp).
using app::Failure;
using app::kBadInput;
using app::kCheckFailed;
using app::kInternalError;
using app::kOk;

enum class Format { Text, Json, Jsonl };

/// --max-memory's default, for every command that loads a snapshot.
inline constexpr const char* kDefaultMaxMemory = "4GiB";

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
void add_state_options(CLI::App& cmd, StateOptions& options);
/// Copies --device / --at / --at-time into the analysis options.
void apply(const StateOptions& state, analysis::AnalyzeOptions& options);

/// Reads a JSON input (a file, or "-" for stdin) of at most `limit` bytes, in chunks. Refused
/// with one line (exit 2) when it cannot be opened, when its first non-blank byte cannot start
/// a JSON document (so /dev/zero and binary files are refused at their first byte), or when it
/// holds more than `limit` bytes (at `limit` + 1 bytes read, never more).
std::string read_json_input(const std::string& path, uint64_t limit);
/// The largest --config file read (a config of every option is a few hundred bytes).
inline constexpr uint64_t kConfigMaxBytes = uint64_t{64} << 20;

/// The FILE positional every single-snapshot command takes.
void add_file_option(CLI::App& cmd, std::string& file);
/// Adds --format text|json (unless the command has its own; `jsonl` adds JSON Lines), --no-color,
/// --max-memory and --quiet.
void add_common_options(CLI::App& cmd, CommonOptions& options, bool format = true, bool jsonl = false);
/// Adds -j,--jobs N. 0 (the default) means std::thread::hardware_concurrency().
void add_jobs_option(CLI::App& cmd, unsigned& jobs);
/// Adds -q/--quiet alone.
void add_quiet_option(CLI::App& cmd, bool& quiet);
/// --max-memory SIZE: one bound on what a load holds (see load()).
void add_max_memory_option(CLI::App& cmd, std::string& max_memory);
/// --max-output SIZE on a command whose output can outgrow its input (export, flame, callgraph).
void add_max_output_option(CLI::App& cmd, std::string& max_output);
/// --user-code / --library as given (registered with --max-memory, on every command that reads a snapshot).
const analysis::CodeRules& code_rules();
/// Loads a snapshot; any InputError becomes a Failure naming the file.
snapshot::Loaded load(const std::string& path, const CommonOptions& options);
/// Terminal width (40 to 240 columns) and colour for stdout.
report::TextStyle text_style(const CommonOptions& options);
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
/// The FILE... positional of the commands that take many snapshots.
void add_files_option(CLI::App& cmd, std::vector<std::string>& files);
/// "<stdin>" for "-".
std::string shown_path(const std::string& path);

void add_analyze(CLI::App& app);
void add_diff(CLI::App& app);
void add_segments(CLI::App& app);
void add_timeline(CLI::App& app);
void add_events(CLI::App& app);
void add_flame(CLI::App& app);
void add_callgraph(CLI::App& app);
void add_export(CLI::App& app);
void add_report(CLI::App& app);
void add_check(CLI::App& app);
void add_merge(CLI::App& app);
void add_simulate(CLI::App& app);
/// The hidden `completions bash|zsh`: shell completion generated from `app` itself.
void add_completions(CLI::App& app);

}  // namespace memsnap::cli
