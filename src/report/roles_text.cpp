// Text for roles: one line of bytes by role at the dump, the peak and an OOM.
#include <algorithm>
#include <numeric>
#include <ostream>

#include "memsnap/analysis/annotation_ranges.hpp"
#include "memsnap/util/units.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report::detail {

std::string roles_words(const analysis::RoleState& s, const std::vector<std::string>& names,
                        const std::vector<analysis::RoleWhere>* where) {
  std::vector<size_t> order(std::min(names.size(), s.by_role.bytes.size()));
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return s.by_role.bytes[a] > s.by_role.bytes[b]; });
  std::string out;
  for (size_t r : order) {
    uint64_t bytes = s.by_role.bytes[r];
    if (!bytes) continue;
    if (!out.empty()) out += ", ";
    bool builtin = r < size_t(analysis::kBuiltinRoles);
    out += builtin ? analysis::role_words(analysis::Role(r)) : term(names[r], 64);
    out += " " + human_bytes(bytes);
    if (where)
      for (const auto& w : *where)
        if (size_t(w.role) == r) {
          if (w.pool)
            out += " in private pool (" + std::to_string(w.pool->first) + ", " + std::to_string(w.pool->second) + ")";
          if (!w.frame.empty()) out += " from " + term(w.frame, 200);
        }
    if (r == size_t(analysis::Role::Gradient) && s.stale_gradients)
      out += human_bytes(s.stale_gradients) == human_bytes(bytes)
                 ? std::string(" of the previous step (zero_grad runs after the forward)")
                 : " (" + human_bytes(s.stale_gradients) + " of the previous step: zero_grad runs after the forward)";
    if (r == size_t(analysis::Role::Unknown)) {
      // what is known of memory allocated before recording
      std::string known;
      if (s.unknown_freed_later && s.unknown_freed_in)
        known = human_bytes(s.unknown_freed_later) + " freed later in " + analysis::phase_words(*s.unknown_freed_in);
      if (s.unknown_never_freed)
        known += (known.empty() ? "" : ", ") + human_bytes(s.unknown_never_freed) + " never freed";
      out += s.unknown_never_freed || s.unknown_freed_later
                 ? " (allocated before recording" + (known.empty() ? std::string() : ": " + known) + ")"
                 : std::string(" (no stack recorded)");
    }
  }
  return out.empty() ? "nothing allocated" : out;
}

std::string range_words(const analysis::RoleState& s, bool ranges_are_phases) {
  if (!s.range) return ranges_are_phases ? " outside the annotated ranges" : "";
  const std::string label = term(analysis::range_label(*s.range), 120);
  if (analysis::is_compile_range(*s.range))
    return std::string(ranges_are_phases ? " in" : ", inside") + " torch.compile autotuning (" + label + ")";
  return ranges_are_phases ? " in '" + label + "'" : "";
}

std::string roles_line(const std::string& what, uint64_t allocated, const analysis::RoleState& s,
                       const std::vector<std::string>& names, bool ranges_are_phases) {
  std::string line = what.empty() ? human_bytes(allocated) + " allocated" : what + " " + human_bytes(allocated);
  if (s.phase && !ranges_are_phases) line += std::string(" in ") + analysis::phase_words(*s.phase);
  line += range_words(s, ranges_are_phases);
  return line + ": " + roles_words(s, names);
}

void write_dump_roles_text(std::ostream& out, const analysis::DeviceAnalysis& d, const TextStyle& style) {
  if (d.roles.names.empty()) return;
  const size_t width = prose_width(style);
  std::string what = d.at ? "at event " + with_commas(d.at->event_index) : std::string("at the dump");
  std::string line = "by role " + what + ": " + roles_words(d.roles.dump, d.roles.names, &d.roles.dump_where);
  if (!d.roles.from_trace) line += " (stacks alone: no trace)";
  out << "  " << wrap(line, 2, 4, width) << '\n';
}

}  // namespace memsnap::report::detail
