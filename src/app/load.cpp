// Reading a command's inputs: loads under the memory bounds, warnings, JSON inputs.
#include "memsnap/app/load.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "memsnap/app/output.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

RunSettings& run_settings() {
  static RunSettings settings;
  return settings;
}

const analysis::CodeRules& code_rules() {
  return run_settings().code_rules;
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
  lo.parser = run_settings().parser;
  lo.threads = run_settings().one_core     ? 1
               : run_settings().split_wait ? std::max(2u, std::thread::hardware_concurrency())
                                           : std::max(1u, std::thread::hardware_concurrency());
  lo.split_wait = run_settings().split_wait;
  if (run_settings().diagnostics)
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

std::string shown_path(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
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

void apply(const StateOptions& state, analysis::AnalyzeOptions& o) {
  o.device = state.device;
  o.at = state.at;
  o.at_time = state.at_time;
}

}  // namespace memsnap::app
