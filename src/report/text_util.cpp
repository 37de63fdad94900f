// Text layout helpers for the reporters.
#include "text_util.hpp"

#include <cstdio>
#include <ctime>

namespace memsnap::report::detail {

namespace {
size_t display_width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}
}  // namespace

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
  std::string out;
  size_t col = first;
  size_t i = 0;
  bool line_start = true;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    size_t w = display_width(word);
    if (!line_start && col + 1 + w > width) {
      out += '\n';
      out += std::string(indent, ' ');
      col = indent;
      line_start = true;
    }
    if (!line_start) {
      out += ' ';
      ++col;
    }
    out += word;
    col += w;
    line_start = false;
    i = j + 1;
  }
  return out;
}

std::string duration(int64_t us) {
  char buf[64];
  if (us < 0) return "-" + duration(-us);
  if (us < 1000) std::snprintf(buf, sizeof buf, "%lld us", static_cast<long long>(us));
  else if (us < 1000000) std::snprintf(buf, sizeof buf, "%.1f ms", double(us) / 1e3);
  else if (us < 60000000) std::snprintf(buf, sizeof buf, "%.2f s", double(us) / 1e6);
  else if (us < 3600000000LL)
    std::snprintf(buf, sizeof buf, "%lld min %lld s", static_cast<long long>(us / 60000000),
                  static_cast<long long>((us / 1000000) % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld h %lld min", static_cast<long long>(us / 3600000000LL),
                  static_cast<long long>((us / 60000000) % 60));
  return buf;
}

}  // namespace memsnap::report::detail
