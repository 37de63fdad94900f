// `memsnap analyze` as text: one block per device, the OOM first, numbers right-aligned, 80 columns.
#include "memsnap/report/analyze.hpp"

#include <map>
#include <ostream>

#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "sections.hpp"
#include "text_util.hpp"
#include "words.hpp"

namespace memsnap::report {

using detail::kBytes;
using detail::kHuman;
using detail::kLabel;
using detail::pad_left;
using detail::pad_right;

namespace {

void row(std::ostream& out, const std::string& label, uint64_t bytes) {
  out << "  " << pad_right(label, kLabel) << pad_left(with_commas(bytes), kBytes)
      << pad_left(human_bytes(bytes), kHuman) << '\n';
}

std::string input_line(const snapshot::InputInfo& in, const snapshot::Snapshot& s) {
  std::string line = human_bytes(in.bytes);
  if (in.compression != io::Compression::None)
    line += " " + std::string(io::to_string(in.compression)) + " (" + human_bytes(in.decoded_bytes) + " decoded)";
  if (in.encoding == io::Encoding::Json)
    line += ", JSON";
  else
    line += ", pickle protocol " + std::to_string(in.pickle_protocol);
  line += ", " + std::string(snapshot::to_string(s.form)) + " form";
  if (s.legacy_history) line += " (legacy block history)";
  line += ", " + std::to_string(s.devices.size()) + (s.devices.size() == 1 ? " device" : " devices");
  return line;
}

// "devices 1-3: unused" for runs of consecutive unused devices.
void unused_line(std::ostream& out, const std::vector<int>& idx) {
  std::string text;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1) ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(idx[i]) + (j > i ? "-" + std::to_string(idx[j]) : "");
    i = j + 1;
  }
  out << (idx.size() == 1 ? "device " : "devices ") << text << ": unused (no segments and no allocator events)\n";
}

void totals_block(std::ostream& out, const analysis::DeviceAnalysis& d, const TextStyle& style) {
  const auto& a = d.accounting;
  const char* bold = style.color ? "\033[1m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  if (d.at) {
    std::string line = "state after event " + with_commas(d.at->event_index);
    if (d.at->time_us) line += " (" + detail::utc_time(*d.at->time_us) + ")";
    line += ", reconstructed by replaying the trace";
    if (d.at->estimated_blocks)
      line += "; " + with_commas(d.at->estimated_blocks) + " block sizes inferred from their requests";
    out << detail::wrap_block(line, detail::prose_width(style), 2);
  }
  out << "  " << bold << pad_right("totals", kLabel) << reset << pad_left("bytes", kBytes) << pad_left("human", kHuman)
      << '\n';
  row(out, "reserved", a.reserved_bytes);
  row(out, "  allocated", a.allocated_bytes);
  row(out, "    requested", a.requested_bytes);
  row(out, "    internal free (rounding slack)", a.internal_free_bytes);
  row(out, "  pending free (awaiting streams)", a.pending_free_bytes);
  row(out, "  inactive (external free)", a.external_free_bytes);
  if (a.unaccounted_bytes) row(out, "  not covered by blocks", a.unaccounted_bytes);
  row(out, "active (allocated + pending)", a.active_bytes);
  row(out, "largest free block", a.largest_free_block_bytes);
  if (a.pools.empty()) return;
  // Per pool and stream (private pools folded into their pool and stream).
  struct Group {
    uint64_t segments = 0, blocks = 0, reserved = 0, allocated = 0, free = 0;
  };
  std::map<std::pair<int, uint64_t>, Group> by;  // (pool, stream)
  for (const auto& p : a.pools) {
    Group& g = by[{int(p.pool), p.stream}];
    g.segments += p.segments, g.blocks += p.blocks, g.reserved += p.reserved_bytes;
    g.allocated += p.allocated_bytes, g.free += p.free_bytes;
  }
  // Byte columns are one wider than the widest figure ("1023.99 MiB"), so that
  // neighbours never touch; 80 columns in all.
  out << '\n'
      << "  " << pad_right("pool", 7) << pad_right("stream", 15) << pad_left("segments", 9) << pad_left("blocks", 9)
      << pad_left("reserved", 13) << pad_left("allocated", 13) << pad_left("free", 12) << '\n';
  for (const auto& [key, g] : by) {
    std::string stream = detail::stream_name(key.second);
    if (stream.size() > 14) stream = stream.substr(0, 13) + "~";
    out << "  " << pad_right(snapshot::to_string(snapshot::Pool(key.first)), 7) << pad_right(stream, 15)
        << pad_left(with_commas(g.segments), 9) << pad_left(with_commas(g.blocks), 9)
        << pad_left(human_bytes(g.reserved), 13) << pad_left(human_bytes(g.allocated), 13)
        << pad_left(human_bytes(g.free), 12) << '\n';
  }
  out << "  " << pad_right("total", 22) << pad_left(with_commas(a.segment_count), 9)
      << pad_left(with_commas(a.block_count), 9) << pad_left(human_bytes(a.reserved_bytes), 13)
      << pad_left(human_bytes(a.allocated_bytes), 13) << pad_left(human_bytes(a.external_free_bytes), 12) << '\n';
}

}  // namespace

namespace detail {

void write_header_text(std::ostream& out, const Source& src, const std::optional<int64_t>& origin,
                       const TextStyle& style) {
  out << title_line(std::string("memsnap ") + kVersion, src.input.path, size_t(style.width));
  out << input_line(src.input, src.context.snap) << '\n';
  if (origin) out << "times (+) count from the first trace event in the file, " << utc_time(*origin) << '\n';
  out << '\n';
}

}  // namespace detail

void write_analyze_text(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result,
                        const TextStyle& style) {
  const auto& snap = src.context.snap;
  detail::write_header_text(out, src, result.time_origin_us, style);
  detail::write_settings_text(out, snap.settings, style);  // ends with a blank line when printed
  const char* bold = style.color ? "\033[1m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  std::vector<int> unused;
  bool first = true;
  // More than one used device: a line each first, and the failing ones printed first.
  std::vector<const analysis::DeviceAnalysis*> order;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& d : result.devices)
      if (d.unused || (d.ooms.total > 0) == (pass == 0)) {
        if (pass == 0 || !d.unused) order.push_back(&d);
      }
  size_t used = 0;
  for (const auto& d : result.devices) used += d.unused ? 0 : 1;
  if (used > 1) {
    out << bold << "devices" << reset << " (failing first)\n";
    for (const auto* d : order) {
      if (d->unused) continue;
      std::string line = "  device " + std::to_string(d->device) + ": ";
      line += d->ooms.total > 0 ? "OUT OF MEMORY" + (d->ooms.total > 1 ? " (" + with_commas(d->ooms.total) + " times)"
                                                                       : std::string())
                                : std::string("no OOM");
      if (d->peaks.allocated)
        line += ", peak " + human_bytes(d->peaks.allocated->allocated_bytes);
      else
        line += ", " + human_bytes(d->accounting.allocated_bytes) + " allocated";
      const analysis::Finding* f = detail::headline_finding(*d);
      line += f ? std::string("; ") + analysis::to_string(f->kind) : std::string("; no findings");
      out << line << '\n';
    }
    out << '\n';
  }
  for (const auto* dp : order) {
    const auto& d = *dp;
    if (d.unused) {
      unused.push_back(d.device);
      continue;
    }
    if (!first) out << '\n';
    first = false;
    out << bold << "device " << d.device << reset << '\n';
    out << detail::wrap_block("verdict: " + detail::verdict_words(d), detail::prose_width(style), 2);
    detail::write_oom_headline_text(out, d, style);
    totals_block(out, d, style);
    detail::write_dump_roles_text(out, d, style);
    // The cache's state in full only when it mattered (memory pressure) or was asked for (-v).
    const bool state_in_full = style.verbose || d.memory_pressure;
    if (state_in_full)
      detail::write_accounting_text(out, d.accounting, style);
    else
      detail::write_free_summary_text(out, d.accounting, style);
    if (d.fits) detail::write_fits_text(out, *d.fits, style);
    detail::write_trace_text(out, d, snap.settings, result.time_origin_us, style, &src.context.sites);
    detail::write_oom_text(out, d, result.time_origin_us, style);
    detail::write_findings_text(out, d, snap.settings, style, state_in_full);
  }
  if (!unused.empty()) {
    if (!first) out << '\n';
    unused_line(out, unused);
  }
  if (result.devices.empty()) out << "the snapshot holds no devices (no segments and no trace)\n";
}

}  // namespace memsnap::report
