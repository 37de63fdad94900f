// The one UTF-8 validator (table 3-7 of the Unicode Standard) and what is built on it.
#include "memsnap/util/utf8.hpp"

namespace memsnap::utf8 {

size_t sequence(std::string_view s, size_t i, Surrogates surrogates) noexcept {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  auto cont = [&](size_t k, uint8_t lo = 0x80, uint8_t hi = 0xBF) {
    return k < s.size() && byte(k) >= lo && byte(k) <= hi;
  };
  const uint8_t c = byte(i);
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;  // a continuation byte, or C0/C1: overlong forms of ASCII
  if (c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c == 0xE0) return cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
  if (c == 0xED) return cont(i + 1, 0x80, surrogates == Surrogates::Allowed ? 0xBF : 0x9F) && cont(i + 2) ? 3 : 0;
  if (c <= 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (c == 0xF0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;  // F5..FF: no code point
}

char32_t decode(std::string_view s, size_t i, size_t len) noexcept {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  switch (len) {
    case 1: return byte(0);
    case 2: return char32_t(byte(0) & 0x1F) << 6 | (byte(1) & 0x3F);
    case 3: return char32_t(byte(0) & 0x0F) << 12 | char32_t(byte(1) & 0x3F) << 6 | (byte(2) & 0x3F);
    case 4:
      return char32_t(byte(0) & 0x07) << 18 | char32_t(byte(1) & 0x3F) << 12 | char32_t(byte(2) & 0x3F) << 6 |
             (byte(3) & 0x3F);
    default: return 0xFFFD;
  }
}

namespace {
// Bytes of the well-formed prefix of `s`.
size_t valid_prefix(std::string_view s, Surrogates surrogates) noexcept {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = sequence(s, i, surrogates);
    if (n == 0) break;
    i += n;
  }
  return i;
}
}  // namespace

bool valid(std::string_view s, Surrogates surrogates) noexcept {
  return valid_prefix(s, surrogates) == s.size();
}

std::string_view sanitize(std::string_view s, std::string& scratch, Surrogates surrogates) {
  size_t i = valid_prefix(s, surrogates);
  if (i == s.size()) return s;
  scratch.assign(s.substr(0, i));
  while (i < s.size()) {
    size_t n = sequence(s, i, surrogates);
    if (n == 0) {
      scratch += kReplacement;
      ++i;
    } else {
      scratch.append(s.substr(i, n));
      i += n;
    }
  }
  return scratch;
}

std::string sanitized(std::string_view s) {
  std::string scratch;
  return std::string(sanitize(s, scratch));
}

std::string_view prefix(std::string_view s, size_t n) noexcept {
  if (n >= s.size()) return s;
  size_t i = 0;
  while (i < n) {
    size_t len = sequence(s, i);
    if (len == 0) len = 1;  // a byte that starts nothing stands alone
    if (i + len > n) break;
    i += len;
  }
  return s.substr(0, i);
}

}  // namespace memsnap::utf8
