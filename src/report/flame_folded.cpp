// Folded stacks (`frame;frame;frame BYTES`), the text form every flame graph tool reads.
#include <algorithm>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "frame_label.hpp"
#include "memsnap/report/flame.hpp"

namespace memsnap::report {

namespace {

// One frame as a folded-stack field: terminal-safe, no ';' (it separates frames),
// and never ending in " NUMBER", which flamegraph.pl would read as a count.
std::string folded_frame(const analysis::ProfileFrame& f) {
  std::string text = detail::printable(detail::frame_label(f), 400);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == ';')
      out += "\\x3b";
    else
      out += c;
  }
  size_t digits = out.find_last_not_of("0123456789.");
  if (digits != std::string::npos && digits + 1 < out.size() && out[digits] == ' ') out.replace(digits, 1, "\\x20");
  return out;
}

template <class Stack>
std::string folded_stack(const std::vector<std::string>& names, const Stack& s) {
  std::string line;
  for (size_t i = 0; i < s.frames.size(); ++i) {
    if (i) line += ';';
    line += names[s.frames[i]];
  }
  return line;
}

std::vector<std::string> folded_names(const std::vector<analysis::ProfileFrame>& frames) {
  std::vector<std::string> names;
  names.reserve(frames.size());
  for (const auto& f : frames) names.push_back(folded_frame(f));
  return names;
}

}  // namespace

void write_folded(std::ostream& out, const analysis::StackProfile& profile) {
  auto names = folded_names(profile.frames);
  std::vector<std::pair<std::string, uint64_t>> lines;
  lines.reserve(profile.stacks.size());
  for (const auto& s : profile.stacks) lines.emplace_back(folded_stack(names, s), s.bytes);
  std::sort(lines.begin(), lines.end());
  // Two stacks can print alike (frames that differ only past the display cap): one line each.
  for (size_t i = 0; i < lines.size();) {
    uint64_t bytes = 0;
    size_t j = i;
    for (; j < lines.size() && lines[j].first == lines[i].first; ++j) bytes += lines[j].second;
    out << lines[i].first << ' ' << bytes << '\n';
    i = j;
  }
}

void write_folded(std::ostream& out, const analysis::DiffProfile& diff) {
  auto names = folded_names(diff.frames);
  struct Line {
    std::string stack;
    uint64_t before, after;
  };
  std::vector<Line> lines;
  lines.reserve(diff.stacks.size());
  for (const auto& s : diff.stacks) lines.push_back({folded_stack(names, s), s.before, s.after});
  std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.stack < b.stack; });
  for (size_t i = 0; i < lines.size();) {
    uint64_t before = 0, after = 0;
    size_t j = i;
    for (; j < lines.size() && lines[j].stack == lines[i].stack; ++j) {
      before += lines[j].before;
      after += lines[j].after;
    }
    out << lines[i].stack << ' ' << before << ' ' << after << '\n';
    i = j;
  }
}

std::string describe(const ProfileSource& src) {
  // "device 0 at its peak (event 513); device 1 at its peak (event 88), allocated memory"
  std::string out;
  for (size_t i = 0; i < src.points.size(); ++i) {
    const auto& p = src.points[i];
    if (i) out += "; ";
    out += "device " + std::to_string(p.device);
    if (p.what == "dump")
      out += " as dumped";
    else if (p.what == "peak")
      out += " at its peak";
    else if (p.what == "oom")
      out += " at its last out-of-memory event";
    else
      out += " after trace event";
    if (p.event_index)
      out += (p.what == "event" ? " " : " (event ") + std::to_string(*p.event_index) + (p.what == "event" ? "" : ")");
  }
  return out + ", " + analysis::to_string(src.state) + " memory";
}

}  // namespace memsnap::report
