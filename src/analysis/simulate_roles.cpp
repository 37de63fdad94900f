// What-if by role: the values of `simulate --scale ROLE:F` and `--drop ROLE` (simulate.hpp).
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "memsnap/analysis/simulate.hpp"
#include "memsnap/util/error.hpp"

namespace memsnap::analysis {

namespace {

// An option's value as a message shows it: printable, capped.
std::string sim_shown(const std::string& text) {
  std::string out = text.substr(0, 120);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out + (text.size() > 120 ? "..." : "");
}

}  // namespace

RoleEdit parse_role_scale(const std::string& value) {
  const std::string shown = "--scale " + sim_shown(value);
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0) throw UsageError(shown + ": expected ROLE:F, e.g. activation:0.5");
  RoleEdit e{value.substr(0, colon), 1, shown};
  const std::string number = value.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  const double f = number.empty() ? 0 : std::strtod(number.c_str(), &end);
  const bool parsed = !number.empty() && end == number.c_str() + number.size() && errno == 0;
  if (!parsed || !std::isfinite(f) || f <= 0 || f > kMaxRoleScale)
    throw UsageError(shown + ": F must be a number above 0 and at most 1000 (0.5 halves the role's bytes; " +
                     "--drop ROLE removes them)");
  e.factor = f;
  return e;
}

RoleEdit parse_role_drop(const std::string& value) {
  const std::string shown = "--drop " + sim_shown(value);
  if (value.empty() || value.find(':') != std::string::npos)
    throw UsageError(shown + ": expected a role name, e.g. --drop gradient (--scale ROLE:F scales one)");
  return RoleEdit{value, 0, shown};
}

}  // namespace memsnap::analysis
