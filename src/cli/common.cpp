// The shared options and the environment (the terminal's width and colour: app/output).
#include "common.hpp"

#include <cstdlib>
#include <map>
#include <string_view>

#include "memsnap/app/output.hpp"
#include "memsnap/app/stacks.hpp"

namespace memsnap::cli {

void add_common_options(CLI::App& cmd, CommonOptions& o, bool format, bool jsonl) {
  std::map<std::string, Format> formats{{"text", Format::Text}, {"json", Format::Json}};
  if (jsonl) formats["jsonl"] = Format::Jsonl;
  if (format && jsonl)
    cmd.add_option("--format", o.format,
                   "Output format: text (default), json, or jsonl (JSON Lines: a header line naming the inputs, "
                   "one line per file as each is done, in input order, then the summary)")
        ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
        ->option_text("text|json|jsonl");
  else if (format)
    cmd.add_option("--format", o.format, "Output format: text (default) or json")
        ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
        ->option_text("text|json");
  cmd.add_flag("--no-color", o.no_color, "Never colour the text output (NO_COLOR is honoured too)");
  add_max_memory_option(cmd, o.max_memory);
  add_quiet_option(cmd, o.quiet);
}

void read_environment() {
  const char* split = std::getenv("MEMSNAP_SPLIT");
  const char* debug = std::getenv("MEMSNAP_FAST_DEBUG");
  app::run_settings().one_core = split && *split == '0';
  app::run_settings().split_wait = split && std::string_view(split) == "wait";
  app::run_settings().diagnostics = debug && *debug == '1';
}

void add_max_output_option(CLI::App& cmd, std::string& max_output) {
  cmd.add_option("--max-output", max_output,
                 "Output bound: refuse, in one line and keeping no partial file, an output larger than SIZE "
                 "(default: 256 times the decoded input, at least 64 MiB)")
      ->option_text("SIZE");
}

void add_max_memory_option(CLI::App& cmd, std::string& max_memory) {
  cmd.add_option("--max-memory", max_memory,
                 std::string("Memory bound for reading the snapshot: decoded input, parse and model (default ") +
                     kDefaultMaxMemory + ")")
      ->option_text("SIZE");
  cmd.add_option("--parser", app::run_settings().parser,
                 "Debugging: which parser reads a pickle: auto (the fast path, the general one where it gives "
                 "way), general, or fast (an error where it would give way)")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, snapshot::Parser>{{"auto", snapshot::Parser::Auto},
                                                                          {"general", snapshot::Parser::General},
                                                                          {"fast", snapshot::Parser::Fast}},
                                  CLI::ignore_case))
      ->option_text("auto|general|fast");
  cmd.add_option("--user-code", app::run_settings().code_rules.user_code,
                 "Frames whose file matches GLOB are your code (sites name them), even under site-packages; "
                 "matched against the path and every part of it after a '/' (repeatable)")
      ->option_text("GLOB")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_option("--library", app::run_settings().code_rules.library,
                 "Frames whose file matches GLOB are library code, never a site when the stack has your code "
                 "(repeatable; --user-code wins)")
      ->option_text("GLOB")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void add_jobs_option(CLI::App& cmd, unsigned& jobs) {
  cmd.add_option("-j,--jobs", jobs,
                 "Files processed at once, one per worker; each holds one snapshot, so memory is up to N times "
                 "--max-memory (default: the number of hardware threads)")
      ->option_text("N")
      ->check(CLI::Range(1u, 1024u));
}

void add_quiet_option(CLI::App& cmd, bool& quiet) {
  cmd.add_flag("-q,--quiet", quiet, "No progress line on stderr while reading a large input");
}

report::TextStyle text_style(const CommonOptions& o) {
  return app::stdout_text_style(o.no_color, std::getenv("NO_COLOR"), std::getenv("COLUMNS"));
}

void add_state_options(CLI::App& cmd, app::StateOptions& o) {
  cmd.add_option("--device", o.device, "Only this device (default: all)")->option_text("N");
  auto* at = cmd.add_option("--at", o.at, "The allocator state right after trace event INDEX (rebuilt by replay)")
                 ->option_text("INDEX");
  cmd.add_option("--at-time", o.at_time,
                 "The state at the last trace event at or before this time (epoch microseconds)")
      ->option_text("US")
      ->excludes(at);
}

void add_file_option(CLI::App& cmd, std::string& file) {
  cmd.add_option("FILE", file, "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin)")->required();
}

void add_files_option(CLI::App& cmd, std::vector<std::string>& files) {
  cmd.add_option("FILE", files,
                 "Snapshots (.pickle, .pkl, .json; gzip/zstd detected; - for stdin, once); several are read in "
                 "parallel (-j)")
      ->required();
}

void add_stack_options(CLI::App& cmd, app::StackArgs& a) {
  cmd.add_option("FILE", a.file, "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin)")->required();
  cmd.add_option("--device", a.device, "Only this device (default: all, each under a <device N> frame)")
      ->option_text("N");
  cmd.add_option("--at", a.at,
                 "Which state: dump (default), peak (most allocated, rebuilt from the trace), oom (the last "
                 "out-of-memory event) or a trace event INDEX")
      ->option_text("WHEN");
  cmd.add_option("--state", a.stack.state,
                 "Which blocks: allocated (default), active (also pending frees) or all (also cached free "
                 "blocks, under <cached free>)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, analysis::StackState>{{"allocated", analysis::StackState::Allocated},
                                                      {"active", analysis::StackState::Active},
                                                      {"all", analysis::StackState::All}},
          CLI::ignore_case))
      ->option_text("WHICH");
  cmd.add_flag("--cpp", a.stack.cpp, "Keep C++ frames in stacks that have Python frames (default: dropped there)");
  add_max_memory_option(cmd, a.max_memory);
  add_max_output_option(cmd, a.max_output);
  add_quiet_option(cmd, a.quiet);
}

}  // namespace memsnap::cli
