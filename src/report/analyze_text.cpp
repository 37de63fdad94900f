// `memsnap analyze` as text: one block per device, numbers right-aligned, 80 columns.
#include <ostream>

#include "memsnap/report/analyze.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "fragmentation_report.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report {

using detail::pad_left;
using detail::pad_right;

namespace {

constexpr size_t kLabel = 36, kBytes = 17, kHuman = 13;

void row(std::ostream& out, const std::string& label, uint64_t bytes) {
  out << "  " << pad_right(label, kLabel) << pad_left(with_commas(bytes), kBytes)
      << pad_left(human_bytes(bytes), kHuman) << '\n';
}

std::string input_line(const snapshot::InputInfo& in, const snapshot::Snapshot& s) {
  std::string line = human_bytes(in.bytes);
  if (in.compression != io::Compression::None)
    line += " " + std::string(io::to_string(in.compression)) + " (" + human_bytes(in.decoded_bytes) + " decoded)";
  if (in.encoding == io::Encoding::Json) line += ", JSON";
  else line += ", pickle protocol " + std::to_string(in.pickle_protocol);
  line += ", " + std::string(snapshot::to_string(s.form)) + " form";
  if (s.legacy_history) line += " (legacy block history)";
  line += ", " + std::to_string(s.devices.size()) + (s.devices.size() == 1 ? " device" : " devices");
  return line;
}

void device_block(std::ostream& out, const analysis::DeviceTotals& t, const std::optional<AtPoint>& at,
                  const TextStyle& style) {
  const char* bold = style.color ? "\033[1m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  out << bold << pad_right("device " + std::to_string(t.device), kLabel + 2) << reset
      << pad_left("bytes", kBytes) << pad_left("human", kHuman) << '\n';
  if (at) {
    out << "  state after event " << with_commas(at->event_index);
    if (at->time_us) out << " (" << detail::utc_time(*at->time_us) << ")";
    out << ", reconstructed by replaying the trace";
    if (at->estimated_blocks) out << ";\n  " << with_commas(at->estimated_blocks) << " block sizes inferred from their requests";
    out << '\n';
  }
  if (t.segments == 0 && t.trace.entries == 0) {
    out << "  no segments and no trace entries on this device\n";
    return;
  }
  row(out, "reserved", t.reserved_bytes);
  row(out, "  allocated", t.allocated_bytes);
  row(out, "    requested", t.requested_bytes);
  row(out, "    internal free (rounding slack)", t.internal_free_bytes);
  row(out, "  pending free (awaiting streams)", t.pending_free_bytes);
  row(out, "  inactive (external free)", t.inactive_bytes);
  if (t.unaccounted_bytes) row(out, "  not covered by blocks", t.unaccounted_bytes);
  row(out, "active (allocated + pending)", t.active_bytes);
  row(out, "largest free block", t.largest_free_block_bytes);

  if (!t.by_pool_stream.empty()) {
    out << '\n'
        << "  " << pad_right("pool", 7) << pad_right("stream", 16) << pad_left("segments", 9) << pad_left("blocks", 9)
        << pad_left("reserved", 13) << pad_left("allocated", 13) << pad_left("free", 11) << '\n';
    for (const auto& g : t.by_pool_stream) {
      std::string stream = detail::stream_name(g.stream);
      if (stream.size() > 15) stream = stream.substr(0, 14) + "~";
      out << "  " << pad_right(snapshot::to_string(g.pool), 7) << pad_right(stream, 16)
          << pad_left(with_commas(g.segments), 9) << pad_left(with_commas(g.blocks), 9)
          << pad_left(human_bytes(g.reserved_bytes), 13) << pad_left(human_bytes(g.allocated_bytes), 13)
          << pad_left(human_bytes(g.free_bytes), 11) << '\n';
    }
    out << "  " << pad_right("total", 23) << pad_left(with_commas(t.segments), 9) << pad_left(with_commas(t.blocks), 9)
        << pad_left(human_bytes(t.reserved_bytes), 13) << pad_left(human_bytes(t.allocated_bytes), 13)
        << pad_left(human_bytes(t.inactive_bytes), 11) << '\n';
  }

}
}  // namespace

void write_analyze_text(std::ostream& out, const AnalyzeView& v, const TextStyle& style) {
  std::string title = std::string("memsnap ") + kVersion;
  // the path on its own line when both do not fit the width
  out << title << (title.size() + 2 + v.input->path.size() > size_t(style.width) ? "\n" : "  ") << v.input->path << '\n';
  out << input_line(*v.input, *v.snapshot) << "\n\n";
  detail::write_settings_text(out, v.snapshot->settings, style);  // ends with a blank line when printed
  for (size_t i = 0; i < v.totals->size(); ++i) {
    if (i) out << '\n';
    const auto& t = (*v.totals)[i];
    device_block(out, t, v.at ? (*v.at)[i] : std::nullopt, style);
    detail::write_device_sections_text(out, v, i, style);
    const analysis::TraceAnalysis* tr = v.trace ? &(*v.trace)[i] : nullptr;
    detail::write_trace_text(out, t, tr, style);
    detail::write_oom_text(out, v.ooms ? &(*v.ooms)[i] : nullptr, t.trace.first_time_us, style);
    if (v.findings) {
      // The OOM section above already gives the OOM findings in full.
      std::vector<analysis::Finding> rest;
      for (const auto& f : (*v.findings)[i])
        if (!(v.ooms && !(*v.ooms)[i].empty() && f.kind.rfind("oom_", 0) == 0)) rest.push_back(f);
      detail::write_findings_text(out, rest, style);
    }
  }
  if (v.totals->empty()) out << "the snapshot holds no devices (no segments and no trace)\n";
}

}  // namespace memsnap::report
