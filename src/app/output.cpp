// -o files, stdout's text style and checked final flush, and the progress line.
#include "memsnap/app/output.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "memsnap/app/failure.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

io::OutputFile open_output(const std::string& path, const std::vector<std::string>& inputs) {
  try {
    return io::OutputFile(path, inputs);
  } catch (const io::OutputError& e) {
    throw Failure(e.what(), kBadInput);
  }
}

io::OutputFile open_results(std::ostream* results, const std::vector<std::string>& inputs) {
  if (results) return io::OutputFile(*results, "<results>");
  return open_output("-", inputs);
}

void finish_results(io::OutputFile& out) {
  try {
    out.commit();
  } catch (const io::OutputError& e) {
    throw Failure(e.what(), kBadInput);
  }
}

void write_output(io::OutputFile& out, const std::function<void(std::ostream&)>& write) {
  try {
    try {
      if (out.limit() == 0) {
        write(out.stream());
      } else {
        // Bounded: the writer stops at the bound (the exception passes through the stream),
        // and the temporary file goes with the OutputFile.
        io::LimitStreamBuf limited(out.stream().rdbuf(), out.limit(), out.limit_message());
        std::ostream os(&limited);
        os.exceptions(std::ios::badbit);
        write(os);
        os.flush();
      }
    } catch (const std::ios_base::failure&) {
      // the stream went bad: commit() names the reason the write failed
    }
    out.commit();
  } catch (const io::OutputError& e) {
    throw Failure(e.what(), kBadInput);
  }
}

bool output_named(const std::string& path, std::string_view extension) {
  if (path.size() < extension.size()) return false;
  const size_t at = path.size() - extension.size();
  for (size_t i = 0; i < extension.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(path[at + i])) != extension[i]) return false;
  return true;
}

uint64_t output_bound(const std::string& max_output, uint64_t input_bytes) {
  if (!max_output.empty()) {
    auto limit = parse_size(max_output);
    if (!limit || *limit == 0) throw Failure("--max-output: not a size: '" + max_output + "'", kBadInput);
    return *limit;
  }
  if (input_bytes > UINT64_MAX / kOutputMultiple) return UINT64_MAX;
  return std::max(input_bytes * kOutputMultiple, kOutputFloor);
}

void bound_output(io::OutputFile& out, const std::string& max_output, uint64_t input_bytes) {
  uint64_t limit = output_bound(max_output, input_bytes);
  std::string why = max_output.empty()
                        ? " (" + std::to_string(kOutputMultiple) + "x the input's " + human_bytes(input_bytes) +
                              ", at least " + human_bytes(kOutputFloor) + "); --max-output SIZE raises it"
                        : " (--max-output)";
  out.set_limit(limit, out.shown() + ": the output would exceed " + human_bytes(limit) + why +
                           (out.is_stdout() ? ": stopped there" : ": the file is left as it was"));
}

report::TextStyle stdout_text_style(bool no_color, const char* no_color_env, const char* columns_env) {
  report::TextStyle s;
  bool tty = isatty(STDOUT_FILENO) != 0;
  s.color = tty && !no_color && !(no_color_env && *no_color_env);
  struct winsize ws {};
  long cols = 0;
  if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
    cols = ws.ws_col;
  else if (columns_env)
    cols = std::strtol(columns_env, nullptr, 10);
  if (cols >= 40) s.width = static_cast<int>(std::min(cols, 240L));  // a sane terminal, whatever COLUMNS says
  return s;
}

int finish_stdout(io::CheckedStdout& out, int status) {
  try {
    out.finish();
  } catch (const io::OutputError& e) {
    std::cerr << "memsnap: " << e.what() << '\n';
    return kBadInput;
  }
  return status;
}

// ---- progress ----------------------------------------------------------------------------

namespace {
std::atomic<bool> g_progress_owner{false};  // one progress line at a time

std::string megabytes(uint64_t n) {
  char buf[32];
  if (n >= 10'000'000'000ull)
    std::snprintf(buf, sizeof buf, "%.1f GB", double(n) / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.0f MB", double(n) / 1e6);
  return buf;
}
}  // namespace

struct ProgressLine::State {
  bool active = false;  // this object owns the line
  bool shown = false;   // something is on the terminal to clear
  uint64_t total = 0;
  std::chrono::steady_clock::time_point start, last;
};

ProgressLine::ProgressLine(bool quiet) : state_(std::make_shared<State>()) {
  if (quiet || isatty(STDERR_FILENO) == 0) return;
  bool expected = false;
  state_->active = g_progress_owner.compare_exchange_strong(expected, true);
}

ProgressLine::~ProgressLine() {
  if (!state_->active) return;
  if (state_->shown) std::cerr << "\r\x1b[K" << std::flush;
  g_progress_owner = false;
}

ProgressFn ProgressLine::callback() {
  if (!state_->active) return {};
  std::shared_ptr<State> st = state_;
  return [st](uint64_t done, uint64_t total) { update(*st, done, total); };
}

void ProgressLine::update(State& s, uint64_t done, uint64_t total) {
  auto now = std::chrono::steady_clock::now();
  if (total != s.total) {  // a new phase (decompressing, then parsing): its own rate
    s.total = total;
    s.start = now;
    s.last = now - std::chrono::seconds(1);
  }
  if (total < kMinBytes) return;
  if (done < total && now - s.last < std::chrono::milliseconds(250)) return;
  s.last = now;
  double secs = std::chrono::duration<double>(now - s.start).count();
  double rate = secs > 0.05 ? double(done) / secs : 0;  // bytes per second
  char line[160];
  int pct = static_cast<int>(100.0 * double(done) / double(total));
  if (rate > 0 && done < total) {
    double eta = double(total - done) / rate;
    std::snprintf(line, sizeof line, "memsnap: reading %s of %s (%d%%), %.1f MB/s, ETA %d:%02d",
                  megabytes(done).c_str(), megabytes(total).c_str(), pct, rate / 1e6, int(eta) / 60, int(eta) % 60);
  } else {
    std::snprintf(line, sizeof line, "memsnap: reading %s of %s (%d%%)", megabytes(done).c_str(),
                  megabytes(total).c_str(), pct);
  }
  std::cerr << '\r' << line << "\x1b[K" << std::flush;
  s.shown = true;
}

}  // namespace memsnap::app
