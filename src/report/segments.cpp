// `memsnap segments` as text: one line per segment with its blocks drawn to scale.
#include "memsnap/report/segments.hpp"

#include <algorithm>
#include <array>
#include <ostream>

#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report {

using detail::pad_left;
using detail::pad_right;

namespace {

constexpr size_t kSize = 12, kMinBar = 12;   // one wider than "1023.99 MiB"
constexpr char kGlyph[3] = {'#', '+', '.'};  // allocated, pending free, free
constexpr const char* kColor[3] = {"\033[31m", "\033[33m", "\033[32m"};

int state_index(snapshot::BlockState s) {
  switch (s) {
    case snapshot::BlockState::ActiveAllocated: return 0;
    case snapshot::BlockState::ActivePendingFree: return 1;
    case snapshot::BlockState::Inactive: return 2;
  }
  return 2;
}

/// The blocks of `s` in `cells` cells: each cell shows the state holding most of
/// its bytes (ties: allocated, then pending); a live block that would vanish at this
/// scale takes the cell where it has the most bytes, so a 512 B tensor pinning a
/// 20 MiB segment stays visible.
std::string draw(const snapshot::Device& d, const snapshot::Segment& s, size_t cells, bool color) {
  const uint64_t total = s.total_size;
  if (total == 0 || cells == 0) return std::string(cells, ' ');
  auto cell_start = [&](size_t c) { return uint64_t(c) * total / cells; };
  auto cell_of = [&](uint64_t offset) { return std::min<size_t>(cells - 1, size_t(offset * cells / total)); };
  std::vector<std::array<uint64_t, 3>> bytes(cells, {0, 0, 0});
  uint64_t pos = 0;
  for (const auto& b : d.blocks_of(s)) {
    uint64_t lo = std::min(pos, total), hi = std::min(pos + b.size, total);
    pos += b.size;
    if (hi <= lo) continue;
    int st = state_index(b.state);
    for (size_t c = cell_of(lo), last = cell_of(hi - 1); c <= last; ++c)
      bytes[c][st] += std::min(hi, c + 1 < cells ? cell_start(c + 1) : total) - std::max(lo, cell_start(c));
  }
  std::vector<int> shown(cells);
  for (size_t c = 0; c < cells; ++c) {
    int best = 0;
    for (int k = 1; k < 3; ++k)
      if (bytes[c][k] > bytes[c][best]) best = k;
    shown[c] = best;
  }
  pos = 0;
  for (const auto& b : d.blocks_of(s)) {
    uint64_t lo = std::min(pos, total), hi = std::min(pos + b.size, total);
    pos += b.size;
    int st = state_index(b.state);
    if (hi <= lo || st == 2) continue;
    size_t first = cell_of(lo), last = cell_of(hi - 1), best = first;
    bool visible = false;
    for (size_t c = first; c <= last && !visible; ++c) {
      visible = shown[c] == st;
      if (bytes[c][st] > bytes[best][st]) best = c;
    }
    if (!visible) shown[best] = st;
  }
  std::string out;
  int current = -1;
  for (size_t c = 0; c < cells; ++c) {
    if (color && shown[c] != current) out += kColor[shown[c]];
    current = shown[c];
    out += kGlyph[shown[c]];
  }
  if (color) out += "\033[0m";
  return out;
}

}  // namespace

void write_segments_text(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result, size_t top,
                         const TextStyle& style) {
  const size_t width = size_t(std::max(style.width, 40));
  out << detail::title_line(std::string("memsnap ") + kVersion, src.input.path, width);
  if (result.devices.empty()) {
    out << "the snapshot holds no devices (no segments and no trace)\n";
    return;
  }
  bool any = false;
  for (const auto& d : result.devices) any = any || !d.state().segments.empty();
  if (any)
    out << detail::wrap_block(
        "Each bar is one segment's blocks to scale: '#' allocated, '+' pending free (awaiting "
        "other streams, record_stream), '.' free; a live block too small for a cell still gets "
        "one. Worst first: the most stranded free bytes (free memory in segments that still hold "
        "allocated blocks), then the highest fragmentation (1 - largest free block / free "
        "bytes).",
        width, 0);
  for (const auto& da : result.devices) {
    const snapshot::Device& d = da.state();
    const analysis::Accounting& f = da.accounting;
    const std::vector<uint32_t>& order = da.segment_order;
    size_t shown = top == 0 ? order.size() : std::min(top, order.size());
    out << '\n';
    out << (style.color ? "\033[1m" : "") << "device " << d.index << ':' << (style.color ? "\033[0m" : "") << ' ';
    if (da.at) {
      out << "state after event " << with_commas(da.at->event_index) << " (replayed";
      if (da.at->estimated_blocks) out << "; " << with_commas(da.at->estimated_blocks) << " block sizes inferred";
      out << "):\n  ";
    }
    if (order.empty()) {
      out << "no segments\n";
      continue;
    }
    out << with_commas(order.size()) << (order.size() == 1 ? " segment, " : " segments, ")
        << human_bytes(f.reserved_bytes) << " reserved, " << analysis::to_string(f.regime) << " segments\n"
        << "  free " << human_bytes(f.external_free_bytes) << ": " << human_bytes(f.stranded_bytes) << " stranded, "
        << human_bytes(f.releasable_bytes) << " releasable";
    if (f.private_held_bytes) out << ", " << human_bytes(f.private_held_bytes) << " held by private pools";
    out << '\n';

    size_t addr_w = 7, pool_w = 4, stream_w = 6;
    for (size_t i = 0; i < shown; ++i) {
      const auto& s = d.segments[order[i]];
      addr_w = std::max(addr_w, detail::hex(s.address).size());
      pool_w = std::max(pool_w, detail::pool_label(s.pool, s.pool_id).size());
      stream_w = std::max(stream_w, detail::stream_name(s.stream).size());
    }
    size_t fixed = addr_w + 1 + pool_w + 1 + stream_w + kSize * 2 + 2;
    bool inline_bar = width > fixed + kMinBar + 2;
    size_t cells = inline_bar ? width - fixed - 2 : width - 4;
    out << pad_right("address", addr_w) << ' ' << pad_right("pool", pool_w) << ' ' << pad_right("stream", stream_w)
        << pad_left("size", kSize) << pad_left("free", kSize) << "  " << (inline_bar ? "blocks" : "") << '\n';
    for (size_t i = 0; i < shown; ++i) {
      const auto& s = d.segments[order[i]];
      const auto& sf = f.segments[order[i]];
      out << pad_right(detail::hex(s.address), addr_w) << ' '
          << pad_right(detail::pool_label(s.pool, s.pool_id), pool_w) << ' '
          << pad_right(detail::stream_name(s.stream), stream_w) << pad_left(human_bytes(s.total_size), kSize)
          << pad_left(human_bytes(sf.external_free_bytes), kSize) << "  ";
      if (inline_bar)
        out << '|' << draw(d, s, cells, style.color) << "|\n";
      else
        out << "\n  |" << draw(d, s, cells, style.color) << "|\n";
    }
    if (shown < order.size()) {
      uint64_t free = 0, stranded = 0;
      for (size_t i = shown; i < order.size(); ++i) {
        free += f.segments[order[i]].external_free_bytes;
        stranded += f.segments[order[i]].stranded_bytes;
      }
      out << detail::wrap_block(with_commas(order.size() - shown) + " more segments not shown (" + human_bytes(free) +
                                    " free, " + human_bytes(stranded) + " stranded)",
                                width, 0)
          << "--top N shows more, --top 0 all\n";
    }
  }
}

}  // namespace memsnap::report
