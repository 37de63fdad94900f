// `memsnap diff` as text: totals side by side, segments on one side only, live memory by stack.
#include "memsnap/report/diff.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <ostream>

#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "text_util.hpp"

namespace memsnap::report {

using detail::pad_left;
using detail::pad_right;
using detail::shorten;

namespace {

// b - a with its sign, without overflow.
std::string signed_bytes(uint64_t a, uint64_t b) {
  if (a == b) return "0 B";
  return b > a ? "+" + human_bytes(b - a) : "-" + human_bytes(a - b);
}

std::string signed_count(uint64_t a, uint64_t b) {
  if (a == b) return "0";
  return b > a ? "+" + with_commas(b - a) : "-" + with_commas(a - b);
}

// A right-aligned column that never runs into the one before it.
std::string col(const std::string& s, size_t w) {
  return detail::display_width(s) >= w ? " " + s : pad_left(s, w);
}

void bytes_row(std::ostream& out, const std::string& label, uint64_t a, uint64_t b) {
  out << "  " << pad_right(label, 26) << col(human_bytes(a), 16) << col(human_bytes(b), 16)
      << col(signed_bytes(a, b), 16) << '\n';
}

void count_row(std::ostream& out, const char* label, uint64_t a, uint64_t b) {
  out << "  " << pad_right(label, 26) << col(with_commas(a), 16) << col(with_commas(b), 16)
      << col(signed_count(a, b), 16) << '\n';
}

void segments_line(std::ostream& out, const char* side, const std::vector<analysis::SegmentRef>& segs) {
  out << "  segments only " << side << ": ";
  if (segs.empty()) {
    out << "none\n";
    return;
  }
  uint64_t bytes = 0;
  for (const auto& s : segs) bytes += s.size;
  out << segs.size() << " (" << human_bytes(bytes) << ")\n";
  size_t shown = 0;
  for (const auto& s : segs) {
    if (shown++ == 5) {
      out << "    ... and " << segs.size() - 5 << " more (all listed in --format json)\n";
      break;
    }
    out << "    " << pad_right(detail::hex(s.address), 18) << pad_right(snapshot::to_string(s.pool), 8) << "stream "
        << pad_right(detail::stream_name(s.stream), 16) << pad_left(human_bytes(s.size), 12) << '\n';
  }
}

// The one line that says whether segments were matched by address, and why.
std::string process_line(const analysis::ProcessMatch& m) {
  using E = analysis::ProcessEvidence;
  switch (m.evidence) {
    case E::SharedEvents: return "one process (the traces share their events): segments matched by address";
    case E::OverlapWithoutSharedEvents:
      return "two processes (the traces overlap in time with no event in common): segments are not matched by "
             "address";
    case E::DisjointWindows:
      return "perhaps two processes (the traces share no event): segments are not matched by address";
    case E::NoTimeStamps: return "perhaps two processes (no time stamps to tell): segments are not matched by address";
    case E::NoTrace: return "perhaps two processes (no trace to tell): segments are not matched by address";
  }
  return "";
}

// A role's name for people: "activations", "optimizer state" (a user's rule by its name).
std::string role_label(const analysis::DeviceDiff& d, size_t r) {
  if (r < size_t(analysis::kBuiltinRoles)) return analysis::role_words(analysis::Role(r));
  return r < d.role_names.size() ? detail::term(d.role_names[r], 32) : "?";
}

uint64_t role_bytes(const analysis::RoleState& s, size_t r) {
  return r < s.by_role.bytes.size() ? s.by_role.bytes[r] : 0;
}

// The roles with bytes on either side, largest change first (then largest after).
std::vector<size_t> role_order(const analysis::DeviceDiff& d, const analysis::RoleState& a,
                               const analysis::RoleState& b) {
  std::vector<size_t> order;
  for (size_t r = 0; r < d.role_names.size(); ++r)
    if (role_bytes(a, r) || role_bytes(b, r)) order.push_back(r);
  auto change = [&](size_t r) {
    uint64_t x = role_bytes(a, r), y = role_bytes(b, r);
    return x > y ? x - y : y - x;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (change(x) != change(y)) return change(x) > change(y);
    return role_bytes(b, x) > role_bytes(b, y);
  });
  return order;
}

// "forward", "optimizer step"; "unknown" without a phase.
std::string phase_cell(const std::optional<analysis::RoleState>& s) {
  if (!s || !s->phase) return "unknown";
  std::string w = analysis::phase_words(*s->phase);
  return w.rfind("the ", 0) == 0 ? w.substr(4) : w;
}

// Both sides' peaks are known (a device a file lacks peaks at nothing).
bool peaks_known(const analysis::DeviceDiff& d) {
  return (!d.in_before || d.peak_before.known) && (!d.in_after || d.peak_after.known) && d.roles_before.peak &&
         d.roles_after.peak;
}

// "+1.94 GiB (6.54 GiB -> 8.49 GiB)", or "unchanged (6.54 GiB)".
std::string change_words(uint64_t a, uint64_t b) {
  if (a == b) return "unchanged (" + human_bytes(a) + ")";
  return signed_bytes(a, b) + " (" + human_bytes(a) + " -> " + human_bytes(b) + ")";
}

// "+1.89 GiB", or "unchanged".
std::string change_short(uint64_t a, uint64_t b) {
  return a == b ? "unchanged" : signed_bytes(a, b);
}

// The device's takeaway, in one sentence before its table: the peak's change, the phase of
// each peak (and whether it moved), and the roles that changed most at the peak (at the dump
// when a side has no trace). Roles, not sites: a gradient made by another autograd node in the
// other run is still a gradient.
std::string lead(const analysis::DeviceDiff& d) {
  std::string s;
  const bool peaks = peaks_known(d);
  const analysis::RoleState& ra = peaks ? *d.roles_before.peak : d.roles_before.dump;
  const analysis::RoleState& rb = peaks ? *d.roles_after.peak : d.roles_after.dump;
  uint64_t scale = 0;
  if (peaks) {
    s = "peak allocated " + change_words(d.peak_before.allocated_bytes, d.peak_after.allocated_bytes) +
        ", peak reserved " + change_short(d.peak_before.reserved_bytes, d.peak_after.reserved_bytes);
    scale = std::max(d.peak_before.allocated_bytes, d.peak_after.allocated_bytes);
    const auto &pa = d.roles_before.peak->phase, &pb = d.roles_after.peak->phase;
    if (d.peak_moved_phase())
      s += "; the peak moved from " + std::string(analysis::phase_words(*pa)) + " to " + analysis::phase_words(*pb);
    else if (pa && pb && d.in_before && d.in_after)
      s += "; both peaks in " + std::string(analysis::phase_words(*pa));
  } else {
    s = "allocated at the dump " + change_words(d.before.allocated_bytes, d.after.allocated_bytes) + ", reserved " +
        change_short(d.before.reserved_bytes, d.after.reserved_bytes);
    scale = std::max(d.before.allocated_bytes, d.after.allocated_bytes);
  }
  std::string roles;
  size_t listed = 0;
  for (size_t r : role_order(d, ra, rb)) {
    uint64_t x = role_bytes(ra, r), y = role_bytes(rb, r);
    uint64_t change = x > y ? x - y : y - x;
    if (listed == 3 || change == 0 || change < scale / 100) break;  // under 1% of the figure
    roles += (listed++ ? ", " : "") + role_label(d, r) + " " + signed_bytes(x, y);
  }
  const char* where = peaks ? " at the peak" : " at the dump";
  s += roles.empty() ? std::string("; no role changed by 1% or more") + where
                     : std::string("; by role") + where + ": " + roles;
  const size_t cache = size_t(analysis::Role::AutocastCache);
  if (!role_bytes(ra, cache) != !role_bytes(rb, cache))
    s += std::string("; only ") + (role_bytes(rb, cache) ? "after" : "before") +
         " holds autocast's cache (mixed precision)";
  return s;
}

// Rows by role under a heading ("peak by role"), largest change first.
void role_rows(std::ostream& out, const analysis::DeviceDiff& d, const char* heading, const analysis::RoleState& a,
               const analysis::RoleState& b) {
  std::vector<size_t> order = role_order(d, a, b);
  if (order.empty()) return;
  out << "  " << heading << '\n';
  for (size_t r : order) bytes_row(out, "  " + role_label(d, r), role_bytes(a, r), role_bytes(b, r));
}

// Peak rows: each side's peaks from a replay of its trace (a device a file lacks peaks at 0).
void peak_rows(std::ostream& out, const analysis::DeviceDiff& d) {
  bool before = !d.in_before || d.peak_before.known, after = !d.in_after || d.peak_after.known;
  if (before && after) {
    bytes_row(out, "peak allocated", d.peak_before.allocated_bytes, d.peak_after.allocated_bytes);
    bytes_row(out, "peak reserved", d.peak_before.reserved_bytes, d.peak_after.reserved_bytes);
    if (peaks_known(d)) {
      out << "  " << pad_right("peak phase", 26) << col(d.in_before ? phase_cell(d.roles_before.peak) : "-", 16)
          << col(d.in_after ? phase_cell(d.roles_after.peak) : "-", 16)
          << (d.peak_moved_phase() ? col("moved", 16) : "") << '\n';
      role_rows(out, d, "peak by role", *d.roles_before.peak, *d.roles_after.peak);
    }
    out << "  at the dump\n";
    return;
  }
  const char* why = !before && !after ? "neither file has"
                    : !before         ? "the before file has no"
                                      : "the after file has no";
  out << "  peaks unknown (" << why << (!before && !after ? " a" : "") << " trace to replay); at the dump:\n";
}

// Site rows, largest change first, at most `top` of them.
void site_table(std::ostream& out, const char* title, const std::vector<analysis::SiteDelta>& sites, size_t top,
                size_t width) {
  const size_t site_w = width - 2 - 11 - 11 - 12 - 10;
  out << '\n'
      << "  " << title << ", largest change first (+ new, - gone)\n"
      << "  " << pad_right("site", site_w) << pad_left("before", 11) << pad_left("after", 11) << pad_left("change", 12)
      << pad_left("blocks", 10) << '\n';
  size_t shown = 0, unchanged = 0;
  for (const auto& s : sites) {
    if (s.change_magnitude() == 0 && s.before_allocations == s.after_allocations) {
      ++unchanged;
      continue;
    }
    if (shown == top) continue;
    ++shown;
    std::string mark = s.is_new() ? "+ " : s.vanished() ? "- " : "  ";
    std::string blocks = with_commas(s.before_allocations) + ">" + with_commas(s.after_allocations);
    std::string numbers = col(human_bytes(s.before_bytes), 11) + col(human_bytes(s.after_bytes), 11) +
                          col(signed_bytes(s.before_bytes, s.after_bytes), 12) + col(blocks, 10);
    // Numbers wider than their columns (1002.25 MiB) take room from the site.
    size_t over =
        2 + site_w + detail::display_width(numbers) > width ? 2 + site_w + detail::display_width(numbers) - width : 0;
    size_t label_w = site_w > over + 8 ? site_w - over : site_w;
    std::string label = mark + detail::shorten_left(detail::term(s.site, 512), label_w - 3);
    if (detail::display_width(label) < label_w) {
      out << "  " << pad_right(label, label_w) << numbers << '\n';
    } else {  // a name that cannot be shortened without cutting it: a line of its own
      out << detail::wrap_block(mark + detail::term(s.site, 512), width, 2) << "  " << std::string(site_w, ' ')
          << numbers << '\n';
    }
    if (s.callers.size() > 1)
      out << "    via " << with_commas(s.callers.size()) << " call paths (callers in --format json)\n";
  }
  size_t changed = sites.size() - unchanged;
  if (changed > shown)
    out << detail::wrap_block(with_commas(changed - shown) +
                                  (changed - shown == 1 ? " more changed site" : " more changed sites") +
                                  " (--top N to show them; all are in --format json)",
                              width, 2);
  if (unchanged) out << "  " << with_commas(unchanged) << (unchanged == 1 ? " site" : " sites") << " unchanged\n";
  if (changed == 0) out << "  no site's live memory changed\n";
}

}  // namespace

void write_diff_text(std::ostream& out, const DiffView& v, const TextStyle& style) {
  const char* bold = style.color ? "\033[1m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  const size_t width = size_t(std::max(72, std::min(style.width, 160)));
  out << "memsnap " << kVersion << " diff\n"
      << detail::label_path("  before  ", v.before.input.path, width)
      << detail::label_path("  after   ", v.after.input.path, width)
      << detail::wrap_block(process_line(v.process), width, 2);
  for (const auto& d : v.devices) {
    std::string name = "device " + std::to_string(d.device);
    out << '\n'
        << bold << name << reset << ": " << detail::wrap(lead(d), name.size() + 2, 2, width) << '\n'
        << std::string(28, ' ') << pad_left("before", 16) << pad_left("after", 16) << pad_left("change", 16) << '\n';
    if (!d.in_before) out << "  (the device is not in the before snapshot)\n";
    if (!d.in_after) out << "  (the device is not in the after snapshot)\n";
    peak_rows(out, d);
    bytes_row(out, "reserved", d.before.reserved_bytes, d.after.reserved_bytes);
    bytes_row(out, "allocated", d.before.allocated_bytes, d.after.allocated_bytes);
    bytes_row(out, "active", d.before.active_bytes, d.after.active_bytes);
    bytes_row(out, "requested", d.before.requested_bytes, d.after.requested_bytes);
    bytes_row(out, "inactive (external free)", d.before.inactive_bytes, d.after.inactive_bytes);
    bytes_row(out, "largest free block", d.before.largest_free_block_bytes, d.after.largest_free_block_bytes);
    count_row(out, "segments", d.before.segments, d.after.segments);
    count_row(out, "blocks", d.before.blocks, d.after.blocks);
    role_rows(out, d, "allocated by role", d.roles_before.dump, d.roles_after.dump);
    if (v.process.segments_by_address()) {
      out << '\n';
      segments_line(out, "in before", d.segments_only_before);
      segments_line(out, "in after", d.segments_only_after);
    }
    if (!d.peak_sites.empty()) site_table(out, "live at the peak by site", d.peak_sites, v.top, width);
    if (!d.sites.empty()) site_table(out, "live at the dump by site", d.sites, v.top, width);
  }
}

}  // namespace memsnap::report
