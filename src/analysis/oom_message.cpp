// PyTorch's OOM message read back into figures (see the header).
#include "memsnap/analysis/oom_message.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

namespace memsnap::analysis {

namespace {

bool digit(char c) {
  return c >= '0' && c <= '9';
}

struct Token {
  size_t begin = 0, end = 0;
  PrintedSize size;
};

// A size starting at `i` as format_size prints it: "1023 bytes", "2.00 GiB" (any
// number of decimals is taken, the unit must follow after one space).
std::optional<Token> size_at(std::string_view t, size_t i) {
  size_t j = i;
  uint64_t whole = 0;
  while (j < t.size() && digit(t[j])) {
    if (whole >= (uint64_t{1} << 50)) return std::nullopt;  // no device has that many of any unit
    whole = whole * 10 + uint64_t(t[j++] - '0');
  }
  if (j == i) return std::nullopt;
  uint64_t frac = 0, p10 = 1;
  if (j < t.size() && t[j] == '.') {
    size_t first = ++j;
    for (; j < t.size() && digit(t[j]); ++j)
      if (j - first < 6) frac = frac * 10 + uint64_t(t[j] - '0'), p10 *= 10;
    if (j == first) return std::nullopt;
  }
  if (j >= t.size() || t[j] != ' ') return std::nullopt;
  ++j;
  struct Unit {
    std::string_view name;
    uint64_t scale;
  };
  static constexpr Unit kUnits[] = {
      {"bytes", 1}, {"KiB", uint64_t{1} << 10}, {"MiB", uint64_t{1} << 20}, {"GiB", uint64_t{1} << 30}};
  for (const Unit& u : kUnits) {
    if (t.substr(j, u.name.size()) != u.name) continue;
    size_t end = j + u.name.size();
    if (end < t.size() && (std::isalnum(static_cast<unsigned char>(t[end])) != 0)) return std::nullopt;
    if (u.scale == 1 && p10 != 1) return std::nullopt;  // "bytes" are whole
    if (whole > (UINT64_MAX >> 1) / u.scale) return std::nullopt;
    uint64_t v = whole * u.scale + (frac * u.scale + p10 / 2) / p10;  // frac < 10^6: no overflow
    // Half a unit of the last digit printed.
    uint64_t within = u.scale == 1 ? 0 : (u.scale + 2 * p10 - 1) / (2 * p10);
    return Token{i, end, PrintedSize{v, within}};
  }
  return std::nullopt;
}

}  // namespace

std::optional<OomMessage> parse_oom_message(std::string_view raw) {
  // A pasted log line may be wrapped or indented: runs of white space read as one space.
  std::string t;
  t.reserve(std::min<size_t>(raw.size(), 65536));
  for (size_t i = 0; i < raw.size() && t.size() < 65536; ++i) {
    char c = raw[i];
    bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
    if (!space)
      t += c;
    else if (!t.empty() && t.back() != ' ')
      t += ' ';
  }
  std::vector<Token> sizes;
  for (size_t i = 0; i < t.size();) {
    if (digit(t[i]) && (i == 0 || (!digit(t[i - 1]) && t[i - 1] != '.')))
      if (std::optional<Token> tok = size_at(t, i)) {
        sizes.push_back(*tok);
        i = tok->end;
        continue;
      }
    ++i;
  }
  // The size right after `lead`, or right before `tail`, at their first occurrence.
  auto after = [&](std::string_view lead) -> std::optional<PrintedSize> {
    size_t p = t.find(lead);
    if (p == std::string::npos) return std::nullopt;
    for (const Token& s : sizes)
      if (s.begin == p + lead.size()) return s.size;
    return std::nullopt;
  };
  auto before = [&](std::string_view tail) -> std::optional<PrintedSize> {
    size_t p = t.find(tail);
    if (p == std::string::npos) return std::nullopt;
    for (const Token& s : sizes)
      if (s.end == p) return s.size;
    return std::nullopt;
  };
  auto either = [](std::optional<PrintedSize> a, std::optional<PrintedSize> b) { return a ? a : b; };

  std::optional<PrintedSize> tried = after("Tried to allocate ");
  if (!tried) return std::nullopt;
  OomMessage m;
  m.tried = *tried;
  if (size_t p = t.find("GPU "); p != std::string::npos) {
    size_t j = p + 4;
    int d = 0, n = 0;
    for (; j < t.size() && digit(t[j]) && n < 4; ++j, ++n) d = d * 10 + (t[j] - '0');
    if (n > 0 && n < 4) m.device = d;
  }
  m.capacity = either(after("total capacity of "), before(" total capacity"));
  m.free = either(before(" is free"), either(before(" free;"), before(" free)")));
  m.process = after("this process has ");
  m.allocated = either(before(" is allocated by PyTorch"), before(" already allocated"));
  if (std::optional<PrintedSize> unallocated = before(" is reserved by PyTorch but unallocated");
      unallocated && m.allocated)
    m.reserved = PrintedSize{m.allocated->bytes + unallocated->bytes, m.allocated->within + unallocated->within};
  else
    m.reserved = before(" reserved in total by PyTorch");
  return m;
}

}  // namespace memsnap::analysis
