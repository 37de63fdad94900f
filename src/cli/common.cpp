// Shared command plumbing: options, loading, warnings, terminal detection.
#include "common.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "memsnap/util/error.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/app/output.hpp"

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

namespace {

// What the environment says about loading, read once: the library never reads it.
struct LoadEnvironment {
  bool one_core = false;     // MEMSNAP_SPLIT=0
  bool diagnostics = false;  // MEMSNAP_FAST_DEBUG=1
};
const LoadEnvironment& load_environment() {
  static const LoadEnvironment env = [] {
    LoadEnvironment e;
    const char* split = std::getenv("MEMSNAP_SPLIT");
    const char* debug = std::getenv("MEMSNAP_FAST_DEBUG");
    e.one_core = split && *split == '0';
    e.diagnostics = debug && *debug == '1';
    return e;
  }();
  return env;
}

// --parser, on every command that reads a snapshot (they all take --max-memory); one run
// has one command, so the choice is the process's.
snapshot::Parser g_parser = snapshot::Parser::Auto;
// --user-code / --library, likewise the run's.
analysis::CodeRules g_code_rules;

}  // namespace

void add_max_output_option(CLI::App& cmd, std::string& max_output) {
  cmd.add_option("--max-output", max_output,
                 "Output bound: refuse, in one line and keeping no partial file, an output larger than SIZE "
                 "(default: 256 times the decoded input, at least 64 MiB)")
      ->option_text("SIZE");
}

const analysis::CodeRules& code_rules() {
  return g_code_rules;
}

void add_max_memory_option(CLI::App& cmd, std::string& max_memory) {
  cmd.add_option("--max-memory", max_memory,
                 std::string("Memory bound for reading the snapshot: decoded input, parse and model (default ") +
                     kDefaultMaxMemory + ")")
      ->option_text("SIZE");
  cmd.add_option("--parser", g_parser,
                 "Debugging: which parser reads a pickle: auto (the fast path, the general one where it gives "
                 "way), general, or fast (an error where it would give way)")
      ->transform(
          CLI::CheckedTransformer(std::map<std::string, snapshot::Parser>{{"auto", snapshot::Parser::Auto},
                                                                          {"general", snapshot::Parser::General},
                                                                          {"fast", snapshot::Parser::Fast}},
                                  CLI::ignore_case))
      ->option_text("auto|general|fast");
  cmd.add_option("--user-code", g_code_rules.user_code,
                 "Frames whose file matches GLOB are your code (sites name them), even under site-packages; "
                 "matched against the path and every part of it after a '/' (repeatable)")
      ->option_text("GLOB")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd.add_option("--library", g_code_rules.library,
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

// One bound for every file a run reads at once (-j): the first load sets it; each file's own
// budget adds to it what it holds and takes it back when its model goes.
namespace {
std::shared_ptr<util::MemoryBudget> run_budget(uint64_t limit) {
  static std::mutex m;
  static std::shared_ptr<util::MemoryBudget> shared;
  std::lock_guard lock(m);
  if (!shared) shared = std::make_shared<util::MemoryBudget>(limit);
  return shared;
}
}  // namespace

snapshot::Loaded load(const std::string& path, const CommonOptions& o) {
  snapshot::LoadOptions lo;
  auto limit = parse_size(o.max_memory);
  if (!limit || *limit == 0) throw Failure("--max-memory: not a size: '" + o.max_memory + "'", kBadInput);
  lo.read.max_buffer_bytes = *limit;
  lo.max_memory = *limit;
  if (o.max_memory == kDefaultMaxMemory) {  // the default: bounded by the input too (docs/bounds.md)
    lo.input_multiple = util::MemoryBudget::kInputMultiple;
    lo.input_floor = util::MemoryBudget::kInputFloor;
  }
  lo.shared_budget = run_budget(*limit);
  lo.parser = g_parser;
  lo.threads = load_environment().one_core ? 1 : std::max(1u, std::thread::hardware_concurrency());
  if (load_environment().diagnostics)
    lo.diagnostics = [](const std::string& line) { std::cerr << "memsnap: " << line << '\n'; };
  std::string shown = shown_path(path);
  try {  // every command that reads a snapshot: `memsnap CMD X >> X` would write onto X
    io::refuse_stdout_onto_inputs(std::span<const std::string>(&path, 1));
  } catch (const io::OutputError& e) {
    throw Failure(e.what(), kBadInput);
  }
  app::ProgressLine progress(o.quiet);
  lo.progress = progress.callback();
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
  long cols = 0;
  if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
    cols = ws.ws_col;
  else if (const char* env = std::getenv("COLUMNS"))
    cols = std::strtol(env, nullptr, 10);
  if (cols >= 40) s.width = static_cast<int>(std::min(cols, 240L));  // a sane terminal, whatever COLUMNS says
  return s;
}

void add_state_options(CLI::App& cmd, StateOptions& o) {
  cmd.add_option("--device", o.device, "Only this device (default: all)")->option_text("N");
  auto* at = cmd.add_option("--at", o.at, "The allocator state right after trace event INDEX (rebuilt by replay)")
                 ->option_text("INDEX");
  cmd.add_option("--at-time", o.at_time,
                 "The state at the last trace event at or before this time (epoch microseconds)")
      ->option_text("US")
      ->excludes(at);
}

void apply(const StateOptions& state, analysis::AnalyzeOptions& o) {
  o.device = state.device;
  o.at = state.at;
  o.at_time = state.at_time;
}

std::string shown_path(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

void add_file_option(CLI::App& cmd, std::string& file) {
  cmd.add_option("FILE", file, "Snapshot (.pickle, .pkl, .json; gzip/zstd detected; - for stdin)")->required();
}

void print_warnings(const snapshot::Loaded& l, const std::vector<std::string>& more) {
  std::cerr << warnings_text(l, more);
}

std::string warnings_text(const snapshot::Loaded& l, const std::vector<std::string>& more) {
  std::string shown = terminal_safe(shown_path(l.input.path));
  std::string out;
  for (const auto& w : l.snapshot.warnings) out += "memsnap: warning: " + shown + ": " + terminal_safe(w) + '\n';
  for (const auto& w : more) out += "memsnap: warning: " + shown + ": " + terminal_safe(w) + '\n';
  return out;
}

void analyze_one(const std::string& path, const CommonOptions& common, const analysis::AnalyzeOptions& options,
                 const AnalysedFn& use) {
  snapshot::Loaded loaded = load(path, common);
  analysis::Context ctx(loaded.snapshot, code_rules());
  analysis::AnalyzeResult result = analysis::analyze(ctx, options);
  use(report::Source{loaded.input, ctx}, result, warnings_text(loaded, result.warnings));
}

std::optional<std::string> file_error(const std::string& path, const std::function<void()>& fn) {
  std::string shown = shown_path(path);
  try {
    fn();
  } catch (const Failure& e) {
    if (e.code() != kBadInput) throw;
    return std::string(e.what());  // load() already names the file
  } catch (const InputError& e) {
    return shown + ": " + e.what();
  } catch (const UsageError& e) {
    return shown + ": " + e.what();
  } catch (const std::bad_alloc&) {
    return shown + ": out of memory while analysing the snapshot";
  }
  return std::nullopt;
}

void add_files_option(CLI::App& cmd, std::vector<std::string>& files) {
  cmd.add_option("FILE", files,
                 "Snapshots (.pickle, .pkl, .json; gzip/zstd detected; - for stdin, once); several are read in "
                 "parallel (-j)")
      ->required();
}

std::string read_json_input(const std::string& path, uint64_t limit) {
  std::string shown = terminal_safe(shown_path(path));
  std::FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (!f) throw Failure(shown + ": cannot open: " + std::strerror(errno), kBadInput);
  std::string text;
  bool sniffed = false;
  char buf[1 << 16];
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    if (!sniffed) {
      for (size_t i = 0; i < n && !sniffed; ++i) {
        unsigned char c = static_cast<unsigned char>(buf[i]);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        sniffed = true;
        if (c != '{' && c != '[') {
          if (f != stdin) std::fclose(f);
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", c);
          throw Failure(shown + ": offset " + std::to_string(text.size() + i) + ": not JSON: starts with byte " + hex +
                            ", not '{' or '['",
                        kBadInput);
        }
      }
    }
    if (text.size() + n > limit) {
      if (f != stdin) std::fclose(f);
      throw Failure(shown + ": larger than " + human_bytes(limit) + " (--max-memory)", kBadInput);
    }
    text.append(buf, n);
    if (n < sizeof buf) break;
  }
  bool failed = std::ferror(f);
  if (f != stdin) std::fclose(f);
  if (failed) throw Failure(shown + ": cannot read", kBadInput);
  return text;
}

}  // namespace memsnap::cli
