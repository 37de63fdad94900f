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

}  // namespace

void write_diff_text(std::ostream& out, const DiffView& v, const TextStyle& style) {
  const char* bold = style.color ? "\033[1m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  const size_t width = size_t(std::max(72, std::min(style.width, 160)));
  out << "memsnap " << kVersion << " diff\n"
      << detail::label_path("  before  ", v.before.input.path, width)
      << detail::label_path("  after   ", v.after.input.path, width);
  for (const auto& d : v.devices) {
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
    const size_t site_w = width - 2 - 11 - 11 - 12 - 10;
    out << '\n'
        << "  live memory by site, largest change first (+ new, - gone)\n"
        << "  " << pad_right("site", site_w) << pad_left("before", 11) << pad_left("after", 11)
        << pad_left("change", 12) << pad_left("blocks", 10) << '\n';
    size_t shown = 0, unchanged = 0;
    for (const auto& s : d.sites) {
      if (s.change_magnitude() == 0 && s.before_allocations == s.after_allocations) {
        ++unchanged;
        continue;
      }
      if (shown == v.top) continue;
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
      if (s.callers.size() > 1) {
        std::string via = "    via " + with_commas(s.callers.size()) + " call paths (callers in --format json)";
        out << via << '\n';
      }
    }
    size_t changed = d.sites.size() - unchanged;
    if (changed > shown)
      out << detail::wrap_block(
          with_commas(changed - shown) + " more changed sites (--top N to show them; all are in --format json)", width,
          2);
    if (unchanged) out << "  " << with_commas(unchanged) << " sites unchanged\n";
    if (changed == 0) out << "  no site's live memory changed\n";
  }
}

}  // namespace memsnap::report
