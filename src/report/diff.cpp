// `memsnap diff` as text: totals side by side, segments on one side only, live memory by stack.
#include "memsnap/report/diff.hpp"

#include <map>
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

void bytes_row(std::ostream& out, const char* label, uint64_t a, uint64_t b) {
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

// Peak rows: each side's peaks from a replay of its trace (a device a file lacks peaks at 0).
void peak_rows(std::ostream& out, const analysis::DeviceDiff& d) {
  bool before = !d.in_before || d.peak_before.known, after = !d.in_after || d.peak_after.known;
  if (before && after) {
    bytes_row(out, "peak allocated", d.peak_before.allocated_bytes, d.peak_after.allocated_bytes);
    bytes_row(out, "peak reserved", d.peak_before.reserved_bytes, d.peak_after.reserved_bytes);
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
    out << '\n'
        << bold << pad_right("device " + std::to_string(d.device), 28) << reset << pad_left("before", 16)
        << pad_left("after", 16) << pad_left("change", 16) << '\n';
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
