// Escaping of control characters and invalid UTF-8 for terminal output.
#include "memsnap/util/terminal.hpp"

#include <algorithm>

namespace memsnap {

std::string terminal_safe(std::string_view s, size_t cap) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(s.size(), cap) + 8);
  auto escape = [&](unsigned char c) {
    switch (c) {
      case '\n': out += "\\n"; return;
      case '\t': out += "\\t"; return;
      case '\r': out += "\\r"; return;
      default: break;
    }
    out += "\\x";
    out += digits[c >> 4];
    out += digits[c & 15];
  };
  size_t i = 0;
  while (i < s.size()) {
    if (out.size() >= cap) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += char(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence passes, unless it encodes a C1 control (U+0080..U+009F).
    size_t len = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool ok = len != 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) ok = false;
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace memsnap
