// Formatting and parsing of byte sizes.
#include "memsnap/util/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace memsnap {

std::string human_bytes(uint64_t n) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = double(n) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::string torch_format_size(uint64_t n) {
  if (n <= 1024) return std::to_string(n) + " bytes";
  return human_bytes(n);
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<uint64_t> parse_size(std::string_view t) {
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' || t[i] == 'e' || t[i] == 'E' ||
                          ((t[i] == '+' || t[i] == '-') && i > 0 && (t[i - 1] == 'e' || t[i - 1] == 'E')))) {
    // stop at a unit that starts with 'e' ("EiB"): only take 'e' when a digit follows
    if ((t[i] == 'e' || t[i] == 'E') && !(i + 1 < t.size() && (std::isdigit(static_cast<unsigned char>(t[i + 1])) ||
                                                               t[i + 1] == '+' || t[i + 1] == '-')))
      break;
    ++i;
  }
  std::string num(t.substr(0, i));
  if (num.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !(v >= 0)) return std::nullopt;
  std::string unit;
  for (char c : t.substr(i))
    if (!std::isspace(static_cast<unsigned char>(c))) unit.push_back(char(std::tolower(static_cast<unsigned char>(c))));
  double mult;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kib" || unit == "ki")
    mult = 1024.0;
  else if (unit == "m" || unit == "mib" || unit == "mi")
    mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib" || unit == "gi")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib" || unit == "ti")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "gb")
    mult = 1e9;
  else if (unit == "tb")
    mult = 1e12;
  else
    return std::nullopt;
  double bytes = std::round(v * mult);
  if (bytes >= 1.8e19) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

}  // namespace memsnap
