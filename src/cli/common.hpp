// The options every memsnap command shares, declared once; the commands' work is in app.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "memsnap/app/failure.hpp"
#include "memsnap/app/load.hpp"
#include "memsnap/app/stacks.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::cli {

// The exit statuses and the fatal error (app/failure.hpp), and what the options fill in
// (app/load.hpp): the CLI's vocabulary from the layer that runs the commands.
using app::CommonOptions;
using app::Failure;
using app::Format;
using app::kBadInput;
using app::kDefaultMaxMemory;
using app::kOk;

/// Reads what the environment says about loading (MEMSNAP_SPLIT, MEMSNAP_FAST_DEBUG) into
/// app::run_settings(): the CLI reads the environment, nothing below it does.
void read_environment();

/// --device, --at, --at-time (app::StateOptions).
void add_state_options(CLI::App& cmd, app::StateOptions& options);

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
/// Terminal width (40 to 240 columns) and colour for stdout: app::stdout_text_style, given
/// NO_COLOR and COLUMNS.
report::TextStyle text_style(const CommonOptions& options);
/// FILE, --device, --at, --state, --cpp, --max-memory, --max-output and -q of flame and callgraph.
void add_stack_options(CLI::App& cmd, app::StackArgs& args);
/// The FILE... positional of the commands that take many snapshots.
void add_files_option(CLI::App& cmd, std::vector<std::string>& files);

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
void add_mcp(CLI::App& app);
/// The hidden `completions bash|zsh|fish`: shell completion generated from `app` itself.
void add_completions(CLI::App& app);

}  // namespace memsnap::cli
