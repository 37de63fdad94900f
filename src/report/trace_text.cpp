// Text for the trace part of `analyze`: span, replay, peak, iterations, leaks, findings.
#include <cctype>
#include <cmath>
#include <ostream>

#include "memsnap/util/units.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report::detail {

namespace {

constexpr size_t kHead = 13;  // "  iterations " column

std::string head(const char* word) { return "  " + pad_right(word, kHead - 2); }

std::string bytes_per_iter(double b) {
  return (b < 0 ? "-" : "") + human_bytes(static_cast<uint64_t>(std::llround(std::fabs(b))));
}

}  // namespace

void write_trace_text(std::ostream& out, const analysis::DeviceTotals& t, const analysis::TraceAnalysis* tr,
                      const TextStyle& style) {
  size_t width = static_cast<size_t>(std::max(60, std::min(style.width, 120)));
  out << '\n' << head("trace");
  if (t.trace.entries == 0) {
    out << "no entries (history recording was off, or enabled=\"state\")\n";
    out << std::string(kHead, ' ')
        << wrap("if this was dumped after an out-of-memory error, --oom-size SIZE (the \"Tried to allocate\" figure) "
                "explains it from the dumped state",
                kHead, kHead, width)
        << '\n';
    return;
  }
  std::string span = with_commas(t.trace.entries) + (t.trace.entries == 1 ? " entry" : " entries");
  if (t.trace.first_time_us && t.trace.last_time_us)
    span += " over " + duration(*t.trace.last_time_us - *t.trace.first_time_us) + ", from " +
            utc_time(*t.trace.first_time_us);
  else
    span += " (no timestamps)";
  out << wrap(span, kHead, kHead, width) << '\n';
  if (!tr) return;
  std::string pad(kHead, ' ');
  if (tr->window_starts_mid_run)
    out << pad << wrap("the window starts mid-run: memory was allocated before its first event", kHead, kHead, width)
        << '\n';
  if (tr->consistent) {
    std::string line = "replay: consistent with the dumped state";
    if (tr->estimated_blocks) line += " (" + with_commas(tr->estimated_blocks) + " block sizes inferred)";
    out << pad << wrap(line, kHead, kHead, width) << '\n';
  } else if (tr->first_mismatch) {
    out << pad << wrap("replay: INCONSISTENT from event " + with_commas(tr->first_mismatch->event) + ": " +
                           tr->first_mismatch->what,
                       kHead, kHead, width)
        << '\n';
  }

  if (tr->peak) {
    const auto& p = *tr->peak;
    std::string line = human_bytes(p.allocated_bytes) + " allocated, " + human_bytes(p.reserved_bytes) +
                       " reserved, at event " + with_commas(p.event_index);
    if (p.time_us && t.trace.first_time_us) line += " (+" + duration(*p.time_us - *t.trace.first_time_us) + ")";
    out << head("peak") << wrap(line, kHead, kHead, width) << '\n';
    if (!p.top_sites.empty()) {
      size_t site_w = width - 4 - 12 - 8;
      out << "    " << pad_right("live at the peak, by site", site_w) << pad_left("bytes", 12) << pad_left("blocks", 8)
          << '\n';
      for (const auto& s : p.top_sites)
        out << "    " << pad_right(shorten(s.site, site_w), site_w) << pad_left(human_bytes(s.live_bytes), 12)
            << pad_left(with_commas(s.allocations), 8) << '\n';
    }
  }

  const auto& it = tr->iterations;
  out << head("iterations");
  if (!it.found) {
    out << wrap("none found: " + it.evidence, kHead, kHead, width) << '\n';
  } else {
    std::string line = std::to_string(it.count) + " found (" + it.method + "), " + with_commas(it.period_events) +
                       " events" + (it.period_us ? ", " + duration(int64_t(*it.period_us)) : std::string()) +
                       " each; allocated memory grows " + bytes_per_iter(it.growth_bytes_per_iteration) +
                       " per iteration";
    out << wrap(line, kHead, kHead, width) << '\n';
  }

  if (it.found && it.count >= 5) {
    out << head("leaks");
    if (tr->leaks.empty()) {
      out << "none: no site keeps allocations from iteration after iteration\n";
    } else {
      out << "sites that keep allocations from iteration after iteration:\n";
      size_t site_w = width - 4 - 11 - 11 - 7 - 2 - 16;
      out << "    " << pad_right("site", site_w) << pad_left("per iter", 11) << pad_left("live now", 11)
          << pad_left("iters", 7) << "  " << "pattern" << '\n';
      for (const auto& l : tr->leaks)
        out << "    " << pad_right(shorten(l.site, site_w), site_w)
            << pad_left(bytes_per_iter(l.growth_bytes_per_iteration), 11) << pad_left(human_bytes(l.live_bytes), 11)
            << pad_left(std::to_string(l.iterations_retained), 7) << "  " << l.pattern << '\n';
    }
  }
}

void write_findings_text(std::ostream& out, const std::vector<analysis::Finding>& findings, const TextStyle& style) {
  const size_t width = static_cast<size_t>(std::max(60, std::min(style.width, 120)));
  out << '\n' << "  " << (style.color ? "\033[1m" : "") << "findings" << (style.color ? "\033[0m" : "") << '\n';
  if (findings.empty()) {
    out << "    none: nothing here crosses a threshold\n";
    return;
  }
  for (const auto& f : findings) {
    std::string sev = analysis::to_string(f.severity);
    for (char& c : sev) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (style.color) {
      const char* c = f.severity == analysis::Severity::Critical  ? "\033[1;31m"
                      : f.severity == analysis::Severity::Warning ? "\033[1;33m"
                                                                  : "\033[1;36m";
      sev = c + sev + "\033[0m";
    }
    out << "  " << sev << "  " << f.kind << '\n' << wrap_block(f.message, width, 4);
    if (!f.advice.empty()) out << wrap_block("fix: " + f.advice, width, 4);
  }
}

}  // namespace memsnap::report::detail
