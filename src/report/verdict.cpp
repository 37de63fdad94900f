// The one line that opens each device of `analyze`: out of memory or not, the peak and where
// it was, how near the device's size (or that the size is unknown), and the worst finding.

#include "memsnap/util/units.hpp"
#include "sections.hpp"
#include "text_util.hpp"
#include "words.hpp"

namespace memsnap::report::detail {

using namespace analysis;

namespace {

// The kind of memory holding the most of a state's roles, with its bytes ("" when none).
std::string largest_role(const RoleState& s, const std::vector<std::string>& names) {
  size_t best = 0;
  for (size_t r = 1; r < s.by_role.bytes.size(); ++r)
    if (s.by_role.bytes[r] > s.by_role.bytes[best]) best = r;
  if (s.by_role.bytes.empty() || s.by_role.bytes[best] == 0) return "";
  std::string name = best < size_t(kBuiltinRoles) ? role_words(Role(best)) : (best < names.size() ? names[best] : "");
  const uint64_t total = s.by_role.total();
  return name + " hold " + human_bytes(s.by_role.bytes[best]) + " of " + human_bytes(total);
}

}  // namespace

std::string verdict_words(const DeviceAnalysis& d) {
  std::string s;
  const Finding* worst = headline_finding(d);
  if (d.ooms.total > 0 && !d.ooms.explained.empty()) {
    const OomReport& r = d.ooms.explained.front();
    s = "out of memory";
    if (r.from_trace && r.event_index) s += " at event " + with_commas(*r.event_index);
    if (!d.roles.ooms.empty() && d.roles.ooms.front().phase)
      s += std::string(" in ") + phase_words(*d.roles.ooms.front().phase);
    s += ", asking for " + human_bytes(r.requested_bytes) + " (cause " + to_string(r.cause()) + ")";
    if (d.ooms.total > 1) s += ", " + with_commas(d.ooms.total) + " OOM events in all";
    if (!d.roles.ooms.empty()) {
      std::string held = largest_role(d.roles.ooms.front(), d.roles.names);
      if (!held.empty()) s += "; " + held;
    }
    return s + "; the fix is below.";
  }
  if (d.ooms.total > 0)
    s = "out of memory (" + with_commas(d.ooms.total) + " events)";
  else
    s = "no OOM";
  if (d.peaks.allocated) {
    s += "; peak " + human_bytes(d.peaks.allocated->allocated_bytes) + " allocated";
    if (d.roles.peak && d.roles.peak->phase) s += std::string(" in ") + phase_words(*d.roles.peak->phase);
  } else {
    s += "; no trace: " + human_bytes(d.accounting.allocated_bytes) + " allocated at the dump";
  }
  const uint64_t reserved = d.peaks.reserved ? d.peaks.reserved->bytes : d.accounting.reserved_bytes;
  s += ", " + human_bytes(reserved) + " reserved";
  if (d.capacity_bytes)
    s += " (" + percent_of(reserved, *d.capacity_bytes) + " of the " + human_bytes(*d.capacity_bytes) + " device" +
         (d.memory_pressure ? ": near its capacity)" : ")");
  else
    s += " (device size unknown: see --capacity)";
  if (!worst)
    s += "; no findings.";
  else if (worst->severity == Severity::Info)
    s += "; nothing to fix (notes below).";
  else
    s += std::string("; ") + (worst->severity == Severity::Critical ? "critical: " : "warning: ") +
         to_string(worst->kind) + ".";
  return s;
}

}  // namespace memsnap::report::detail
