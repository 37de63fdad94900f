// -o files, the checked final flush of stdout, and the progress line.
#include "output.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "common.hpp"

namespace memsnap::cli {

io::OutputFile open_output(const std::string& path, const std::vector<std::string>& inputs) {
  try {
    return io::OutputFile(path, inputs);
  } catch (const io::OutputError& e) {
    throw Failure(e.what(), kBadInput);
  }
}

void write_output(io::OutputFile& out, const std::function<void(std::ostream&)>& write) {
  try {
    try {
      write(out.stream());
    } catch (const std::ios_base::failure&) {
      // the stream went bad: commit() names the reason the write failed
    }
    out.commit();
  } catch (const io::OutputError& e) {
    throw Failure(e.what(), kBadInput);
  }
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

}  // namespace memsnap::cli
