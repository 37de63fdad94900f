// A command's output files and progress: -o through io::OutputFile, the text style and final
// flush of stdout, and the progress line on stderr. Every command that writes uses these.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/io/output_file.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/util/progress.hpp"

namespace memsnap::app {

/// Opens -o OUT ("-": standard output) before the slow work; refuses one of `inputs`.
/// Every failure is a Failure (exit 2) with a one-line message.
io::OutputFile open_output(const std::string& path, const std::vector<std::string>& inputs);
/// Where a command's results go: into `results` when the caller gives a stream (the MCP server
/// keeps a tool's results in memory), else to standard output, refused when it is redirected
/// onto one of `inputs` (open_output("-")).
io::OutputFile open_results(std::ostream* results, const std::vector<std::string>& inputs);
/// Commits what a command wrote into `out` by itself (not through write_output): a lost write
/// becomes a Failure naming the destination and the reason.
void finish_results(io::OutputFile& out);
/// Runs `write(stream)` into `out` and commits it; a lost write becomes a Failure naming
/// the destination and the reason, and a file destination is left as it was.
void write_output(io::OutputFile& out, const std::function<void(std::ostream&)>& write);
/// Whether -o PATH names a file of that extension (".svg"; in any case, "X.SVG" too): how
/// flame, timeline and export tell the format from the name when --format is not given.
bool output_named(const std::string& path, std::string_view extension);

/// The output bound (docs/bounds.md): what one command may write is at most kOutputMultiple
/// times its input's decoded bytes, and at least kOutputFloor; `--max-output SIZE` sets it.
inline constexpr uint64_t kOutputMultiple = 256;
inline constexpr uint64_t kOutputFloor = uint64_t{64} << 20;
uint64_t output_bound(const std::string& max_output, uint64_t input_bytes);
/// Sets `out`'s bound (write_output stops the writer there with one line, exit 2).
void bound_output(io::OutputFile& out, const std::string& max_output, uint64_t input_bytes);
/// How text goes to stdout: colour when stdout is a terminal and neither --no-color
/// (`no_color`) nor a non-empty NO_COLOR (`no_color_env`) says no; the width the terminal
/// reports, else COLUMNS (`columns_env`), when 40 columns or more, at most 240 (80 when
/// neither says). The CLI reads the two variables (nothing below it reads the environment).
report::TextStyle stdout_text_style(bool no_color, const char* no_color_env, const char* columns_env);
/// The end of main: `status`, or 2 with "memsnap: <stdout>: cannot write: REASON" on stderr
/// when anything written to standard output was lost.
int finish_stdout(io::CheckedStdout& out, int status);

/// The progress line of one load: on stderr, only when stderr is a terminal, the input is
/// over ~100 MB and `quiet` is off; one load at a time shows it (diff reads two at once).
/// The line is cleared when the object goes away, whether the load succeeded or not.
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine();
  /// The callback for snapshot::LoadOptions::progress (empty when nothing will be shown).
  ProgressFn callback();

  /// Inputs below this are read without a progress line.
  static constexpr uint64_t kMinBytes = 100'000'000;

 private:
  struct State;
  static void update(State& s, uint64_t done, uint64_t total);
  std::shared_ptr<State> state_;
};

}  // namespace memsnap::app
