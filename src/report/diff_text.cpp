// `memsnap diff` as text: totals side by side, segments on one side only, live memory by stack.
#include <map>
#include <ostream>

#include "memsnap/report/diff.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "text_util.hpp"

namespace memsnap::report {

using detail::pad_left;
using detail::pad_right;
using detail::shorten;

namespace {

std::string signed_bytes(int64_t d) {
  if (d == 0) return "0 B";
  return (d > 0 ? "+" : "-") + human_bytes(uint64_t(d > 0 ? d : -d));
}

std::string signed_count(int64_t d) {
  if (d == 0) return "0";
  return (d > 0 ? "+" : "-") + with_commas(uint64_t(d > 0 ? d : -d));
}

void bytes_row(std::ostream& out, const char* label, uint64_t a, uint64_t b) {
  out << "  " << pad_right(label, 26) << pad_left(human_bytes(a), 16) << pad_left(human_bytes(b), 16)
      << pad_left(signed_bytes(int64_t(b) - int64_t(a)), 16) << '\n';
}

void count_row(std::ostream& out, const char* label, uint64_t a, uint64_t b) {
  out << "  " << pad_right(label, 26) << pad_left(with_commas(a), 16) << pad_left(with_commas(b), 16)
      << pad_left(signed_count(int64_t(b) - int64_t(a)), 16) << '\n';
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

}  // namespace

void write_diff_text(std::ostream& out, const DiffView& v, const TextStyle& style) {
  const char* bold = style.color ? "\033[1m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  out << "memsnap " << kVersion << " diff\n"
      << "  before  " << v.before->input.path << '\n'
      << "  after   " << v.after->input.path << "\n";
  for (const auto& d : *v.devices) {
    out << '\n'
        << bold << pad_right("device " + std::to_string(d.device), 28) << reset << pad_left("before", 16)
        << pad_left("after", 16) << pad_left("change", 16) << '\n';
    if (!d.in_before) out << "  (the device is not in the before snapshot)\n";
    if (!d.in_after) out << "  (the device is not in the after snapshot)\n";
    bytes_row(out, "reserved", d.before.reserved_bytes, d.after.reserved_bytes);
    bytes_row(out, "allocated", d.before.allocated_bytes, d.after.allocated_bytes);
    bytes_row(out, "active", d.before.active_bytes, d.after.active_bytes);
    bytes_row(out, "requested", d.before.requested_bytes, d.after.requested_bytes);
    bytes_row(out, "inactive (external free)", d.before.inactive_bytes, d.after.inactive_bytes);
    bytes_row(out, "largest free block", d.before.largest_free_block_bytes, d.after.largest_free_block_bytes);
    count_row(out, "segments", d.before.segments, d.after.segments);
    count_row(out, "blocks", d.before.blocks, d.after.blocks);
    out << '\n';
    segments_line(out, "in before", d.segments_only_before);
    segments_line(out, "in after", d.segments_only_after);

    if (d.sites.empty()) continue;
    size_t width = size_t(std::max(72, std::min(style.width, 140)));
    size_t site_w = width - 2 - 10 - 10 - 12 - 10;
    out << '\n'
        << "  live memory by call path, largest change first (+ new, - gone)\n"
        << "  " << pad_right("site", site_w) << pad_left("before", 10) << pad_left("after", 10)
        << pad_left("change", 12) << pad_left("blocks", 10) << '\n';
    // Stacks that end at the same site are told apart by their innermost frame.
    std::map<std::string, int> per_site;
    for (const auto& s : d.sites) ++per_site[s.site];
    size_t shown = 0, unchanged = 0;
    for (const auto& s : d.sites) {
      if (s.delta_bytes() == 0 && s.before_allocations == s.after_allocations) {
        ++unchanged;
        continue;
      }
      if (shown == v.top) continue;
      ++shown;
      std::string mark = s.is_new() ? "+ " : s.vanished() ? "- " : "  ";
      std::string blocks = std::to_string(s.before_allocations) + ">" + std::to_string(s.after_allocations);
      std::string name = s.site;
      if (per_site[s.site] > 1) {
        // paths that end at the same site differ in their callers
        if (s.stack.size() > 1) name += " from " + s.stack[1];
      }
      out << "  " << pad_right(mark + shorten(name, site_w - 3), site_w) << pad_left(human_bytes(s.before_bytes), 10)
          << pad_left(human_bytes(s.after_bytes), 10) << pad_left(signed_bytes(s.delta_bytes()), 12)
          << pad_left(blocks, 10) << '\n';
    }
    size_t changed = d.sites.size() - unchanged;
    if (changed > shown)
      out << "  ... " << changed - shown << " more changed call paths (--top N to show them; all are in --format json)\n";
    if (unchanged) out << "  " << unchanged << " call paths unchanged\n";
    if (changed == 0) out << "  no call path's live memory changed\n";
  }
}

}  // namespace memsnap::report
