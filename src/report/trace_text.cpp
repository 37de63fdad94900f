// Text for the trace part of `analyze` (span, replay, peaks, iterations or structure,
// leaks), the OOM section and the findings.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <ostream>

#include "frame_label.hpp"
#include "memsnap/util/units.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report::detail {

using namespace analysis;

namespace {

constexpr size_t kHead = 13;  // "  iterations " column

std::string head(const char* word) {
  return "  " + pad_right(word, kHead - 2);
}

std::string plural_blocks(uint64_t n) {
  return with_commas(n) + (n == 1 ? " block" : " blocks");
}

std::string bytes_per_iter(double b) {
  return (b < 0 ? "-" : "") + human_bytes(static_cast<uint64_t>(std::llround(std::fabs(b))));
}

// The library call a site went through ("via torch.nn.modules.linear.forward"), or "".
std::string via_of(const Sites* sites, const std::string& site) {
  if (!sites) return "";
  auto id = sites->find(site);
  if (!id || sites->context(*id).empty()) return "";
  return "via " + term(sites->context(*id), 512);
}

// Whether every site of a table fits its column with its library call after it.
bool vias_fit(const std::vector<std::string>& sites, const std::vector<std::string>& vias, size_t site_w) {
  for (size_t i = 0; i < sites.size(); ++i)
    if (!vias[i].empty() &&
        display_width(shorten_left(term(sites[i], 512), site_w - 1)) + 1 + display_width(vias[i]) >= site_w)
      return false;
  return true;
}

// A table row whose first column is a site: shortened from the left to fit; a site
// that cannot be shortened without cutting its function gets a line of its own. Its
// library call follows the site (`inline_via`, when it fits for every row of the
// table) or has a line below.
void site_row(std::ostream& out, const std::string& raw, size_t site_w, const std::string& numbers, size_t width,
              std::string via = "", bool inline_via = false) {
  std::string site = shorten_left(term(raw, 512), site_w - 1);
  if (display_width(site) < site_w) {
    if (inline_via && !via.empty() && display_width(site) + 1 + display_width(via) < site_w) {
      site += " " + via;
      via.clear();
    }
    out << "    " << pad_right(site, site_w) << numbers << '\n';
  } else {
    out << wrap_block(term(raw, 512), width, 4) << "    " << std::string(site_w, ' ') << numbers << '\n';
  }
  if (!via.empty()) out << "      " << middle_cut(via, width - 6) << '\n';
}

// Why the peak's `<no stack recorded>` row has no stack, where the trace says: every
// allocation in it carries a stack (so these blocks were allocated before its first event,
// and the file keeps none for them), or none does. Else "" (some do, some do not).
std::string no_stack_note(const DeviceAnalysis& d) {
  const auto& it = d.iterations;
  if (it.allocations == 0) return "";
  if (it.allocations_with_stack == it.allocations)
    return "allocated before the trace's first event: the file keeps no stack for them";
  if (it.allocations_with_stack == 0) return "the trace was recorded without stacks";
  return "";
}

// The sites live at one state, largest first, with the rest summed on a last row.
void write_site_table(std::ostream& out, const char* title, const std::vector<analysis::SiteBytes>& top,
                      const analysis::OtherSites& rest, const DeviceAnalysis& d, size_t width, const Sites* sites) {
  if (top.empty()) return;
  size_t site_w = width - 4 - 12 - 8;
  out << "    " << pad_right(title, site_w) << pad_left("bytes", 12) << pad_left("blocks", 8) << '\n';
  std::vector<std::string> names, vias;
  for (const auto& s : top) names.push_back(s.site), vias.push_back(via_of(sites, s.site));
  bool inline_via = vias_fit(names, vias, site_w);
  for (size_t i = 0; i < top.size(); ++i) {
    const auto& s = top[i];
    site_row(out, s.site, site_w, pad_left(human_bytes(s.live_bytes), 12) + pad_left(with_commas(s.allocations), 8),
             width, vias[i], inline_via);
    if (s.site != Sites::kNoStack) continue;
    std::string note = d.trace.entries ? no_stack_note(d)
                                       : "allocated while memory history recording was off: the file keeps no "
                                         "stack for them";
    if (!note.empty()) out << wrap_block(note, width, 6);
  }
  if (rest.sites)
    out << "    " << pad_right(with_commas(rest.sites) + (rest.sites == 1 ? " more site" : " more sites"), site_w)
        << pad_left(human_bytes(rest.live_bytes), 12) << pad_left(with_commas(rest.allocations), 8) << '\n';
}

void write_peak(std::ostream& out, const DeviceAnalysis& d, const std::optional<int64_t>& origin, size_t width,
                const Sites* sites) {
  const auto& p = *d.peaks.allocated;
  std::string line =
      human_bytes(p.allocated_bytes) + " allocated, " + human_bytes(p.reserved_bytes) + " reserved, " +
      (p.at_window_start ? std::string("when the recorded window opened") : "at event " + with_commas(p.event_index));
  std::string t = at_time(p.time_us, origin);
  if (!t.empty()) line += " (" + t + ")";
  if (d.peaks.reserved && d.peaks.reserved->bytes > p.reserved_bytes) {
    const auto& r = *d.peaks.reserved;
    std::string rt = at_time(r.time_us, origin);
    line += "; reserved peaks at " + human_bytes(r.bytes) + " " +
            (r.at_window_start ? std::string("when the recorded window opened")
                               : "at event " + with_commas(r.event_index)) +
            (rt.empty() ? std::string() : " (" + rt + ")");
  }
  if (d.trace.dropped != analysis::DroppedEvents::NotShown)
    line += "; the highest in the trace only: older events were dropped (above)";
  out << head("peak") << wrap(line, kHead, kHead, width) << '\n';
  if (d.roles.peak)
    out << head("by role")
        << wrap(roles_line("peak", p.allocated_bytes, *d.roles.peak, d.roles.names, d.roles.phases_from_ranges), kHead,
                kHead, width)
        << '\n';
  write_site_table(out, "live at the peak, by site", p.top_sites, p.other_sites, d, width, sites);
}

void write_iterations(std::ostream& out, const DeviceAnalysis& d, size_t width) {
  const auto& it = d.iterations;
  if (!it.found()) {
    if (d.structure) {
      out << head("structure") << wrap(term(structure_words(*d.structure, it), 2048), kHead, kHead, width) << '\n';
      // torch.compile's benchmarking repeats allocations: no iterations of the program are read from it
      const std::string why = d.structure->compile_range.empty()
                                  ? iteration_evidence(it)
                                  : "the repeated allocations are torch.compile's autotuning, not the program's steps";
      out << head("iterations") << wrap("none: " + term(why, 2048), kHead, kHead, width) << '\n';
    } else {
      out << head("iterations") << wrap("none: " + term(iteration_evidence(it), 2048), kHead, kHead, width) << '\n';
    }
    return;
  }
  std::string line =
      with_commas(it.count) + " found (" + term(iteration_method(it), 512) + "), " + with_commas(it.period_events) +
      " events" + (it.period_us ? ", " + duration(int64_t(*it.period_us)) : std::string()) +
      " each; allocated memory grows " + bytes_per_iter(it.growth_bytes_per_iteration) + " per iteration";
  out << head("iterations") << wrap(line, kHead, kHead, width) << '\n';
  out << std::string(kHead, ' ') << wrap(term(iteration_evidence(it), 2048), kHead, kHead, width) << '\n';
}

void write_leaks(std::ostream& out, const DeviceAnalysis& d, size_t width, const Sites* sites) {
  const auto& it = d.iterations;
  if (!analysis::leaks_judged(it)) return;
  out << head("leaks");
  if (d.leaks.empty()) {
    out << "none: no site keeps allocations from iteration after iteration\n";
    return;
  }
  out << "sites that keep allocations from iteration after iteration:\n";
  size_t site_w = width - 4 - 13 - 12 - 8 - 2 - 16;  // figures one wider than "+1023.99 MiB"
  out << "    " << pad_right("site", site_w) << pad_left("per iter", 13) << pad_left("live now", 12)
      << pad_left("kept", 8) << "  "
      << "pattern" << '\n';
  std::vector<std::string> names, vias;
  for (const auto& l : d.leaks) names.push_back(l.site), vias.push_back(via_of(sites, l.site));
  bool inline_via = vias_fit(names, vias, site_w);
  for (size_t i = 0; i < d.leaks.size(); ++i) {
    const auto& l = d.leaks[i];
    std::string kept = std::to_string(l.iterations_retained) + "/" + std::to_string(l.iterations_judged);
    site_row(out, l.site, site_w,
             pad_left(bytes_per_iter(l.growth_bytes_per_iteration), 13) + pad_left(human_bytes(l.live_bytes), 12) +
                 pad_left(kept, 8) + "  " + to_string(l.pattern),
             width, vias[i], inline_via);
  }
  out << wrap_block("(kept: in how many of the " + with_commas(d.leaks.front().iterations_judged) +
                        " complete iterations the site allocated memory still allocated at the dump)",
                    width, 4);
}

}  // namespace

size_t prose_width(const TextStyle& style) {
  return static_cast<size_t>(std::max(60, std::min(style.width, 160)));
}

std::string at_time(const std::optional<int64_t>& t, const std::optional<int64_t>& origin) {
  if (!t || !origin) return "";
  return "+" + duration(span_us(*origin, *t));
}

// Where the trace cannot hold the OOM that a dump after one is about.
constexpr const char* kExplainFromDump =
    "if this was dumped after an out-of-memory error, --oom-message with PyTorch's message (or --oom-size SIZE, "
    "its \"Tried to allocate\" figure) explains it from the dumped state";

void write_trace_text(std::ostream& out, const DeviceAnalysis& d, const snapshot::AllocatorSettings& settings,
                      const std::optional<int64_t>& origin, const TextStyle& style, const Sites* sites) {
  const size_t width = prose_width(style);
  const auto& t = d.trace;
  out << '\n' << head("trace");
  if (t.entries == 0) {
    out << "no entries (history recording was off, or enabled=\"state\")\n";
    if (!d.state().segments.empty() && d.ooms.explained.empty())
      out << std::string(kHead, ' ') << wrap(kExplainFromDump, kHead, kHead, width) << '\n';
    write_site_table(out, "live at the dump, by site", d.dump_sites, d.dump_other_sites, d, width, sites);
    return;
  }
  std::string span = with_commas(t.entries) + (t.entries == 1 ? " entry" : " entries");
  if (t.first_time_us && t.last_time_us) {
    span += " over " + duration(span_us(*t.first_time_us, *t.last_time_us)) + ", from " + utc_time(*t.first_time_us);
    if (origin && *origin != *t.first_time_us) span += " (" + at_time(t.first_time_us, origin) + ")";
  } else {
    span += " (no timestamps)";
  }
  out << wrap(span, kHead, kHead, width) << '\n';
  std::string pad(kHead, ' ');
  if (t.window_starts_mid_run)
    out << pad << wrap("the window starts mid-run: memory was allocated before its first event", kHead, kHead, width)
        << '\n';
  if (std::string dropped = dropped_events_words(t, settings); !dropped.empty()) {
    out << pad << wrap(dropped, kHead, kHead, width) << '\n';
    if (d.ooms.explained.empty()) out << pad << wrap(kExplainFromDump, kHead, kHead, width) << '\n';
  }
  if (t.consistent && t.layout && t.layout->equal) {
    out << pad
        << wrap("replay: ends on the dumped layout, block for block (" + with_commas(t.layout->blocks) +
                    " blocks): every figure below is the allocator's own",
                kHead, kHead, width)
        << '\n';
  } else if (t.consistent) {
    std::string line = "replay: consistent with the dumped state";
    if (t.layout && !t.layout->equal) {
      line += ", but its layout parts from the dump";
      if (t.layout->first_unfollowed_event) line += " from event " + with_commas(*t.layout->first_unfollowed_event);
      if (!t.layout->first_difference.empty()) line += " (" + t.layout->first_difference + ")";
    }
    if (t.estimated_blocks)
      line += "; " + with_commas(t.estimated_blocks) + " block sizes inferred, figures may be low by up to 1 MiB each";
    out << pad << wrap(line, kHead, kHead, width) << '\n';
  } else if (t.first_mismatch) {
    out << pad
        << wrap("replay: INCONSISTENT from event " + with_commas(t.first_mismatch->event) + ": " +
                    t.first_mismatch->what,
                kHead, kHead, width)
        << '\n';
  }
  if (d.peaks.allocated) write_peak(out, d, origin, width, sites);
  write_iterations(out, d, width);
  write_leaks(out, d, width, sites);
}

void write_oom_headline_text(std::ostream& out, const DeviceAnalysis& d, const TextStyle& style) {
  // The OOM itself is the device's verdict line (verdict_words); this says what the totals show.
  if (d.ooms.explained.empty() || !d.ooms.explained.front().from_trace) return;
  const OomReport& last = d.ooms.explained.back();
  if (last.freed_after_bytes)
    out << wrap_block("at the dump " + human_bytes(d.accounting.allocated_bytes) +
                          " is allocated: " + human_bytes(last.freed_after_bytes) +
                          " was freed after the OOM; the totals describe the dump, the OOM section the moment of "
                          "failure",
                      prose_width(style), 2);
}

void write_oom_text(std::ostream& out, const DeviceAnalysis& d, const std::optional<int64_t>& origin,
                    const TextStyle& style) {
  const auto& ooms = d.ooms.explained;
  if (ooms.empty()) return;
  const size_t width = prose_width(style);
  const char* bold = style.color ? "\033[1m" : "";
  const char* red = style.color ? "\033[31m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  constexpr size_t kCol = 15;
  for (size_t k = 0; k < ooms.size(); ++k) {
    const auto& r = ooms[k];
    out << '\n' << "  " << bold << red << "out of memory" << reset;
    if (d.ooms.total > 1) out << " (" << k + 1 << " of " << with_commas(d.ooms.total) << ")";
    if (r.from_trace) {
      out << " at event " << with_commas(*r.event_index);
      std::string t = at_time(r.time_us, origin);
      if (!t.empty()) out << " (" << t << ")";
    } else {
      out << ": not in the trace; the figures are the dumped state's";
    }
    out << '\n';
    auto line = [&](const char* label, const std::string& text) {
      out << "  " << pad_right(label, kCol - 2) << wrap(text, kCol, kCol, width) << '\n';
    };
    if (k < d.roles.ooms.size())
      line("by role", roles_line("", r.allocated_bytes, d.roles.ooms[k], d.roles.names, d.roles.phases_from_ranges));
    line("request", human_bytes(r.requested_bytes) + " (rounded) on stream " + stream_name(r.stream) + ", " +
                        snapshot::to_string(r.pool) + " pool; needed " +
                        (r.expandable ? human_bytes(r.map_bytes) + " of new pages"
                                      : "a new " + human_bytes(r.segment_request_bytes) + " segment"));
    if (r.from_trace) line("from", term(r.site, 512));
    std::string state = "reserved " + human_bytes(r.reserved_bytes) + ", allocated " + human_bytes(r.allocated_bytes) +
                        ", cached free " + human_bytes(r.free_cached_bytes);
    if (r.device_free_bytes) state += ", device free " + human_bytes(*r.device_free_bytes);
    line("state", state);
    line("largest free", human_bytes(r.largest_free_block_bytes) + " on stream " + stream_name(r.stream) + " in the " +
                             snapshot::to_string(r.pool) + " pool (" + human_bytes(r.free_cached_same_pool_bytes) +
                             " free there in all)" +
                             (r.cached_block_could_serve ? "; a cached block could have served it" : ""));
    if (r.from_trace)
      line("accuracy", r.approximate_within_bytes
                           ? "allocated and free figures within " + human_bytes(r.approximate_within_bytes) + " (" +
                                 plural_blocks(r.estimated_blocks) +
                                 " freed after the OOM left only their requested size, and the allocator may have "
                                 "handed out larger blocks)"
                           : "exact (every live block's size is dumped or follows from the allocator's rules)");
    for (size_t i = 0; i < r.causes.size(); ++i)
      line(i == 0 ? "cause" : "also",
           std::string(to_string(r.causes[i])) + ": " + term(cause_evidence(r.causes[i], r, d.leaks), 2048));
    if (r.message) {  // the user's own message, checked, in place of one rebuilt from the figures
      std::vector<std::string> lines = message_check_words(*r.message, r);
      for (size_t i = 0; i < lines.size(); ++i) line(i == 0 ? "your message" : "", lines[i]);
    } else {
      // PyTorch's message, indented less so that its URL fits a line whole.
      out << "  " << pad_right("message", kCol - 2) << "(rebuilt from these numbers)\n"
          << wrap_block("\"" + torch_message(r) + "\"", width, 4);
    }
    for (size_t i = 0; i < r.fixes.size(); ++i) line(i == 0 ? "fix" : "", term(fix_words(r.fixes[i], r), 1024));
    if (const auto& w = r.what_if) {
      // The figure beside the verdict is what the run holds at this request, against the size
      // the device had then: a peak from earlier, when the device held more, says nothing here.
      std::string held =
          w->reserved_at_oom_bytes
              ? "the run holds " + human_bytes(*w->reserved_at_oom_bytes) + " after it" +
                    (w->capacity_bytes ? ", within the " + human_bytes(*w->capacity_bytes) + " the device had"
                                       : std::string())
              : std::string();
      std::string words =
          "with " + w->setting + " this request would " +
          (w->fits ? "have fit: " + held
                   : "still have failed" + (w->oom_event ? ": out of memory at event " + with_commas(*w->oom_event)
                                                         : (held.empty() ? "" : ": " + held)));
      line("what if", words + " (memsnap simulate)");
    }
  }
  if (!d.ooms.more.empty()) {
    out << '\n'
        << wrap_block("first " + with_commas(ooms.size()) + " OOM events explained, " +
                          with_commas(d.ooms.more.size()) + " more listed in JSON (`ooms_more`)",
                      width, 2);
  }
}

void write_findings_text(std::ostream& out, const DeviceAnalysis& d, const snapshot::AllocatorSettings& settings,
                         const TextStyle& style, bool state_notes) {
  const size_t width = prose_width(style);
  out << '\n' << "  " << (style.color ? "\033[1m" : "") << "findings" << (style.color ? "\033[0m" : "") << '\n';
  auto state_note = [&](const Finding& f) {
    return !state_notes && f.severity == Severity::Info &&
           (f.kind == FindingKind::StrandedFreeMemory || f.kind == FindingKind::FragmentedPool ||
            f.kind == FindingKind::ReleasableCache || f.kind == FindingKind::PendingFree);
  };
  const size_t notes = size_t(std::count_if(d.findings.begin(), d.findings.end(), state_note));
  if (d.findings.size() == notes) {
    out << "    none: nothing here crosses a threshold\n";
    if (notes)
      out << wrap_block(with_commas(notes) + (notes == 1 ? " note" : " notes") +
                            " on the cache's state, none needing a fix while the job fits: -v shows " +
                            (notes == 1 ? "it" : "them"),
                        width, 4);
    return;
  }
  constexpr size_t kShown = 20;
  size_t shown = 0;
  for (const auto& f : d.findings) {
    if (state_note(f)) continue;
    if (shown == kShown) {
      out << wrap_block(with_commas(d.findings.size() - kShown) + " more findings listed in JSON", width, 2);
      break;
    }
    ++shown;
    std::string sev = to_string(f.severity);
    for (char& c : sev) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (style.color) {
      const char* c = f.severity == Severity::Critical  ? "\033[1;31m"
                      : f.severity == Severity::Warning ? "\033[1;33m"
                                                        : "\033[1;36m";
      sev = c + sev + "\033[0m";
    }
    Words w = finding_words(f, d, settings);
    out << "  " << sev << "  " << to_string(f.kind) << '\n' << wrap_block(term(w.message, 4096), width, 4);
    if (!w.advice.empty()) out << wrap_block("fix: " + term(w.advice, 2048), width, 4);
  }
  if (notes)
    out << wrap_block("and " + with_commas(notes) + (notes == 1 ? " note" : " notes") +
                          " on the cache's state, none needing a fix while the job fits: -v shows " +
                          (notes == 1 ? "it" : "them"),
                      width, 2);
}

}  // namespace memsnap::report::detail
