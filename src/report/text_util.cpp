// Text layout helpers for the reporters.
#include "text_util.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <vector>

#include "frame_label.hpp"
#include "memsnap/util/terminal.hpp"

namespace memsnap::report::detail {

size_t display_width(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}

std::string term(std::string_view s, size_t cap) {
  return terminal_safe(s, cap);
}

namespace {
std::string cut_left(std::string path, size_t width) {
  if (display_width(path) <= width || width < 8) return path;
  size_t cut = path.size() - (width - 3);
  while (cut < path.size() && (static_cast<unsigned char>(path[cut]) & 0xC0) == 0x80) ++cut;
  return "..." + path.substr(cut);
}
}  // namespace

std::string display_path(const std::string& path, size_t width) {
  return cut_left(term(path, 1024), width);
}

std::string title_line(const std::string& title, const std::string& path, size_t width) {
  std::string p = cut_left(term(path, 1024), width);
  bool same = title.size() + 2 + display_width(p) <= width;
  return title + (same ? "  " : "\n") + p + "\n";
}

std::string label_path(const std::string& label, const std::string& path, size_t width) {
  size_t room = width > label.size() + 8 ? width - label.size() : 8;
  return label + cut_left(term(path, 1024), room) + "\n";
}

int64_t span_us(int64_t a, int64_t b) {
  int64_t d = 0;
  if (!__builtin_sub_overflow(b, a, &d)) return d;
  return b > a ? INT64_MAX : INT64_MIN;
}

std::string shorten_left(const std::string& s, size_t w) {
  if (display_width(s) <= w || w < 4) return s;
  // "FILE:LINE:FUNCTION": the first ':' followed by digits and another ':'.
  size_t colon = std::string::npos;
  for (size_t i = s.find(':'); i != std::string::npos; i = s.find(':', i + 1)) {
    size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j > i + 1 && j < s.size() && s[j] == ':') {
      colon = i;
      break;
    }
  }
  if (colon == std::string::npos) return middle_cut(s, w);
  size_t second = s.find(':', colon + 1);
  std::string file = s.substr(0, colon), line = s.substr(colon, second + 1 - colon), fn = s.substr(second + 1);
  size_t fixed = display_width(line);
  if (fixed + 6 >= w) return middle_cut(s, w);
  size_t room = w - fixed;  // for the file and the function
  size_t fw = display_width(file), nw = display_width(fn);
  if (nw + std::min<size_t>(fw, 10) <= room) return middle_cut(file, room - nw) + line + fn;
  size_t file_room = std::min<size_t>(fw, std::max<size_t>(10, room / 3));
  return middle_cut(file, file_room) + line + middle_cut(fn, room - file_room);
}

std::string pad_right(const std::string& s, size_t w) {
  size_t d = display_width(s);
  return d >= w ? s : s + std::string(w - d, ' ');
}

std::string pad_left(const std::string& s, size_t w) {
  size_t d = display_width(s);
  return d >= w ? s : std::string(w - d, ' ') + s;
}

std::string stream_name(uint64_t stream) {
  if (stream == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(stream));
  return buf;
}

std::string utc_time(int64_t us) {
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  if (gmtime_r(&secs, &tm) == nullptr) return std::to_string(us) + " us";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string wrap(const std::string& text, size_t first, size_t indent, size_t width) {
  // Words, with a unit kept on the line of its number ("26.00 MiB", "31.9 ms" never break).
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "us", "ms", "s", "min", "h"};
  std::vector<std::string> words;
  for (size_t i = 0; i < text.size();) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string w = text.substr(i, j - i);
    std::string stem = w.substr(0, w.find_last_not_of(".,;:)") + 1);
    bool unit = std::find(std::begin(units), std::end(units), stem) != std::end(units);
    if (unit && !words.empty())
      words.back() += " " + w;
    else if (!w.empty())
      words.push_back(w);
    i = j + 1;
  }
  std::string out;
  size_t col = first;
  bool line_start = true;
  size_t avail = width > indent + 20 ? width - indent : 20;
  auto newline = [&] {
    out += '\n';
    out += std::string(indent, ' ');
    col = indent;
    line_start = true;
  };
  for (const std::string& whole : words) {
    std::string_view word = whole;
    size_t w = display_width(word);
    if (!line_start && col + 1 + w > width) newline();
    while (w > avail) {  // wider than a line (a C++ signature): cut it, in one pass over the word
      if (!line_start) newline();
      size_t cut = 0, cols = 0;
      while (cut < word.size() && cols < avail) {
        ++cut;
        while (cut < word.size() && (static_cast<unsigned char>(word[cut]) & 0xC0) == 0x80) ++cut;
        ++cols;
      }
      // A C++ name breaks after a "::" (or ", ", "<", "(") in the line's last two thirds,
      // not inside an identifier.
      if (cut < word.size()) {
        size_t at = 0;
        for (size_t k = cut; k-- > 1 && !at;)
          if ((word[k - 1] == ':' && word[k] == ':') || word[k] == ',' || word[k] == '<' || word[k] == '(') at = k + 1;
        if (at > cut / 3 && at < cut) {
          cols = display_width(word.substr(0, at));
          cut = at;
        }
      }
      out += word.substr(0, cut);
      word.remove_prefix(cut);
      w -= cols;
      newline();
    }
    if (!line_start) {
      out += ' ';
      ++col;
    }
    out += word;
    col += w;
    line_start = false;
  }
  return out;
}

std::string wrap_block(const std::string& text, size_t width, size_t indent) {
  if (text.empty()) return "";
  return std::string(indent, ' ') + wrap(text, indent, indent, width) + '\n';
}

std::string percent_of(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return std::to_string(static_cast<int>(std::lround(100.0 * double(part) / double(whole)))) + "%";
}

std::string shorten(const std::string& s, size_t w) {
  if (s.size() <= w || w < 2) return s;
  size_t keep = w - 1;
  return s.substr(0, keep / 2) + "~" + s.substr(s.size() - (keep - keep / 2));
}

std::string duration(int64_t us) {
  char buf[64];
  if (us < 0) return "-" + duration(us == INT64_MIN ? INT64_MAX : -us);
  if (us < 1000)
    std::snprintf(buf, sizeof buf, "%lld us", static_cast<long long>(us));
  else if (us < 1000000)
    std::snprintf(buf, sizeof buf, "%.1f ms", double(us) / 1e3);
  else if (us < 60000000)
    std::snprintf(buf, sizeof buf, "%.2f s", double(us) / 1e6);
  else if (us < 3600000000LL)
    std::snprintf(buf, sizeof buf, "%lld min %lld s", static_cast<long long>(us / 60000000),
                  static_cast<long long>((us / 1000000) % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld h %lld min", static_cast<long long>(us / 3600000000LL),
                  static_cast<long long>((us / 60000000) % 60));
  return buf;
}

}  // namespace memsnap::report::detail
