// Escaping of control characters and invalid UTF-8 for terminal output.
#include "memsnap/util/terminal.hpp"

#include <algorithm>

#include "memsnap/util/utf8.hpp"

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
    size_t len = utf8::sequence(s, i);
    if (len == 0) {  // starts no character (utf8.hpp): shown as its byte
      escape(static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    char32_t cp = utf8::decode(s, i, len);
    if (utf8::is_control(cp)) {
      if (len == 1) {
        escape(static_cast<unsigned char>(s[i]));
      } else {  // a C1 control, U+0080..U+009F: its two bytes
        escape(static_cast<unsigned char>(s[i]));
        escape(static_cast<unsigned char>(s[i + 1]));
      }
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace memsnap
