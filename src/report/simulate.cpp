// `memsnap simulate` as text (runs side by side) and JSON (the field names are a contract).
#include "memsnap/report/simulate.hpp"

#include <algorithm>
#include <cstdio>

#include "json_util.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "text_util.hpp"

namespace memsnap::report {

using analysis::SimRun;
using analysis::Simulation;
using detail::Json;
using namespace detail;
using detail::opt;

namespace {

std::string settings_text(const analysis::ModelSettings& s) {
  std::string out = std::string("expandable_segments:") + (s.expandable_segments ? "True" : "False");
  if (s.max_split_size) out += ",max_split_size_mb:" + std::to_string(*s.max_split_size >> 20);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& [mib, div] : s.roundup_power2_divisions) lo = std::min(lo, div), hi = std::max(hi, div);
  if (hi > 0) out += ",roundup_power2_divisions:" + (lo == hi ? std::to_string(hi) : std::string("[per size]"));
  if (s.garbage_collection_threshold > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ",garbage_collection_threshold:%g", s.garbage_collection_threshold);
    out += buf;
  }
  return out;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v * 100);
  return buf;
}

std::string oom_cell(const SimRun& r) {
  if (!r.oom) return "no";
  return r.oom->at_window_start ? std::string("window start") : "event " + with_commas(r.oom->event_index);
}

// [[bucket MiB, divisions], ...] for the buckets that round (an empty list: plain 512 B rounding).
Json divisions_json(const analysis::ModelSettings& s) {
  Json out = Json::array();
  for (const auto& [mib, div] : s.roundup_power2_divisions)
    if (div > 0) out.push_back(Json::array({mib, div}));
  return out;
}

Json run_json(const SimRun& r) {
  Json settings = {{"expandable_segments", r.settings.expandable_segments},
                   {"max_split_size_bytes", opt(r.settings.max_split_size)},
                   {"garbage_collection_threshold", r.settings.garbage_collection_threshold},
                   {"roundup_power2_divisions", divisions_json(r.settings)}};
  return {{"label", r.label},
          {"settings", std::move(settings)},
          {"capacity_bytes", opt(r.capacity)},
          {"peak_reserved_bytes", r.peak_reserved},
          {"peak_allocated_bytes", r.peak_allocated},
          {"stranded_at_peak_bytes", r.stranded_at_peak},
          {"fragmentation_at_peak", r.fragmentation_at_peak},
          {"segment_allocs", r.segment_allocs},
          {"segment_frees", r.segment_frees},
          {"retries", r.retries},
          {"ooms", r.ooms},
          {"oom", r.oom ? Json{{"event_index", r.oom->event_index},
                               {"requested_bytes", r.oom->requested_bytes},
                               {"site", r.oom->site},
                               {"at_window_start", r.oom->at_window_start},
                               {"over_capacity", r.oom->over_capacity}}
                        : Json(nullptr)},
          {"min_capacity_bytes", opt(r.min_capacity)},
          {"start_blocks_moved", r.start_blocks_moved},
          {"unplaced_requests", r.unplaced},
          {"needs", r.need ? Json{{"event_index", r.need->event_index},
                                  {"reserved_bytes", r.need->reserved_bytes},
                                  {"shown_bytes", r.need->shown_bytes}}
                           : Json(nullptr)}};
}

// A factor as the user wrote it: 0.5, 0.125, 2.
std::string factor_text(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

// The words for a role id: the built-in roles' words, a --role name as it is.
std::string role_name_words(const std::string& role) {
  for (int r = 0; r < analysis::kBuiltinRoles; ++r)
    if (role == analysis::to_string(analysis::Role(r))) return analysis::role_words(analysis::Role(r));
  return term(role, 64);
}

Json fidelity_json(const analysis::Fidelity& f) {
  return {
      {"identical", f.identical()},
      {"segments_recorded", f.segments_recorded},
      {"segments_simulated", f.segments_simulated},
      {"segments_matching", f.segments_matching},
      {"peak_reserved_equal", f.peak_reserved_equal},
      {"oom_equal", f.oom_equal},
      {"allocs_compared", f.allocs_compared},
      {"allocs_matching", f.allocs_matching},
      {"peak_allocated_equal", f.peak_allocated_equal},
      {"compared_nothing", f.compared_nothing()},
      {"first_divergence", f.first_divergence.empty() && !f.first_divergence_event
                               ? Json(nullptr)
                               : Json{{"event_index", opt(f.first_divergence_event)}, {"what", f.first_divergence}}},
      {"replay_divergence_event", opt(f.replay_divergence_event)}};
}

std::string fidelity_line(const Simulation& sim) {
  const auto& f = sim.fidelity;
  if (f.compared_nothing())
    return "fidelity: nothing to compare (the trace holds no alloc and no segment event): the what-if figures "
           "below are unchecked estimates";
  const std::string allocs =
      with_commas(f.allocs_matching) + " of " + with_commas(f.allocs_compared) + " allocs where the trace put them";
  const std::string segments =
      with_commas(f.segments_matching) + " of " + with_commas(f.segments_recorded) + " segment sizes in order" +
      (f.segments_simulated != f.segments_recorded ? " (simulated " + with_commas(f.segments_simulated) + ")"
                                                   : std::string());
  if (f.identical())
    return "fidelity: identical: " + allocs + ", " + segments + ", peaks equal, " +
           (sim.recorded.oom ? "OOM at the same event" : "no OOM in either");
  std::string line = "fidelity: differs";
  if (f.first_divergence_event) line += " from event " + with_commas(*f.first_divergence_event);
  if (!f.first_divergence.empty()) line += ": " + term(f.first_divergence, 200);
  line += ". " + allocs + "; " + segments + "; peak reserved " + (f.peak_reserved_equal ? "equal" : "differs") +
          ", allocated " + (f.peak_allocated_equal ? "equal" : "differs") + "; OOM " +
          (f.oom_equal ? "at the same event" : "differs");
  if (f.replay_divergence_event)
    line += "; the replay itself cannot follow the trace from event " + with_commas(*f.replay_divergence_event);
  return line + ". The what-if figures below are estimates.";
}

}  // namespace

void write_simulate_text(std::ostream& out, const Source& src, const Simulation& sim, const TextStyle& style) {
  const size_t width = static_cast<size_t>(style.width);
  out << title_line("memsnap simulate", src.input.path, width) << '\n';
  auto para = [&](const std::string& text) { out << wrap(text, 0, 2, width) << '\n'; };
  para("device " + std::to_string(sim.device) + "; recorded settings " + settings_text(sim.recorded.settings));
  // A known size is followed by where it comes from; an unknown one is only its reason.
  const auto& known_capacity = sim.runs.front().capacity;
  para("capacity: " +
       (known_capacity ? human_bytes(*known_capacity) + " (" + sim.capacity_source + ")" : sim.capacity_source));
  if (sim.starts_mid_run)
    para("the trace starts mid-run: " + with_commas(sim.start_blocks) + " live blocks (" +
         human_bytes(sim.start_allocated) + ") in " + with_commas(sim.start_segments) + " segments (" +
         human_bytes(sim.start_reserved) +
         " reserved) were alive when the window opened; every run starts from them, where the trace says they "
         "were, and they count against the capacity");
  if (sim.explicit_empty_cache)
    para(with_commas(sim.explicit_empty_cache) +
         " recorded torch.cuda.empty_cache() calls (their stacks name it; never counted as retries) are made in "
         "every run");
  if (sim.other_flushes)
    para(with_commas(sim.other_flushes) +
         " other recorded cache flushes, not forced by a failed cudaMalloc, are made in every run");
  if (sim.gc_ignored)
    para(
        "garbage_collection_threshold changes nothing here: PyTorch collects only when a memory fraction is set "
        "(set_per_process_memory_fraction), which a snapshot does not record");
  para(fidelity_line(sim));
  if (!sim.role_edits.empty() && sim.runs.size() > 1) {
    std::string what;
    for (const auto& e : sim.role_edits)
      what += std::string(what.empty() ? "" : ", ") + role_name_words(e.edit.role) +
              (e.edit.factor == 0 ? " dropped" : " x" + factor_text(e.edit.factor));
    para("what-if by role, an ESTIMATE: [1] is the recorded settings with " + what +
         (sim.runs.size() > 2 ? " (every --set run too)" : std::string()) +
         ". Every block of the role is scaled uniformly (its request, rounded as the allocator rounds it) or "
         "dropped with its frees; the real change would also move other roles (a smaller batch shrinks the "
         "inputs too; sharding adds communication buffers).");
    uint64_t start_blocks = 0;
    for (const auto& e : sim.role_edits) {
      para(role_name_words(e.edit.role) + " (" + with_commas(e.blocks) + " blocks): " + human_bytes(e.peak_before) +
           " at the peak allocated as recorded; in [1] " + human_bytes(e.at_recorded_peak_after) + " at that event, " +
           human_bytes(e.peak_after) + " at its own peak");
      start_blocks += e.start_blocks;
    }
    // Blocks alive before the window change in the segments the trace shows them in.
    if (start_blocks)
      para(with_commas(start_blocks) +
           " of those blocks were alive when the window opened: they shrink or go where they were, in segments "
           "the runs keep (" +
           human_bytes(sim.start_reserved) +
           " reserved then), so their bytes stay reserved, free (stranded) rather than returned; read the peak "
           "allocated");
  }
  if (sim.ends_at_oom)
    para("the recorded run ran out of memory at event " + with_commas(sim.recorded.oom->event_index) +
         " and the trace holds no allocation after its last OOM: every run covers only the recorded part of "
         "that step, not the rest of the job");
  // Columns: the recorded run, then the simulated runs, three at a time.
  std::vector<const SimRun*> all{&sim.recorded};
  for (const auto& r : sim.runs) all.push_back(&r);
  const size_t label_w = 22, col_w = 14, per_table = 1 + std::max<size_t>(1, (width - label_w) / col_w - 1);
  for (size_t first = 0; first < all.size(); first += per_table) {
    size_t last = std::min(all.size(), first + per_table);
    out << '\n';
    if (first > 0) out << "(continued)\n";
    std::string legend;
    out << pad_right("", label_w);
    for (size_t c = first; c < last; ++c) {
      std::string name = c == 0 ? "recorded" : c == 1 ? "as recorded" : "[" + std::to_string(c - 1) + "]";
      out << pad_left(name, col_w);
      if (c > 1) legend += "  [" + std::to_string(c - 1) + "] " + term(all[c]->label, 200) + '\n';
    }
    out << '\n';
    auto row = [&](const std::string& label, auto cell) {
      out << pad_right(label, label_w);
      for (size_t c = first; c < last; ++c) out << pad_left(cell(*all[c]), col_w);
      out << '\n';
    };
    // A run that could not start (its start state does not fit) has no figures.
    auto ran = [](const SimRun& r, std::string cell) { return r.oom && r.oom->at_window_start ? "-" : cell; };
    row("peak reserved", [&](const SimRun& r) { return ran(r, human_bytes(r.peak_reserved)); });
    row("peak allocated", [&](const SimRun& r) { return ran(r, human_bytes(r.peak_allocated)); });
    row("stranded at the peak", [&](const SimRun& r) { return ran(r, human_bytes(r.stranded_at_peak)); });
    row("fragmentation", [&](const SimRun& r) { return ran(r, percent(r.fragmentation_at_peak)); });
    row("cudaMalloc / map", [](const SimRun& r) { return with_commas(r.segment_allocs); });
    row("cudaFree / unmap", [](const SimRun& r) { return with_commas(r.segment_frees); });
    row("flush and retry", [](const SimRun& r) { return with_commas(r.retries); });
    row("out of memory", [](const SimRun& r) { return oom_cell(r); });
    bool any_min = false;
    for (size_t c = first; c < last; ++c) any_min = any_min || all[c]->min_capacity;
    if (any_min)
      row("smallest device", [](const SimRun& r) {
        return r.min_capacity ? human_bytes(*r.min_capacity) : std::string(r.label == "recorded" ? "" : "-");
      });
    if (!legend.empty()) out << legend;
  }
  for (size_t c = 1; c < all.size(); ++c) {
    const std::string name = c == 1 ? "as recorded" : "[" + std::to_string(c - 1) + "]";
    if (all[c]->start_blocks_moved)
      para(name + ": " + with_commas(all[c]->start_blocks_moved) +
           " blocks alive at the window's start could not be put where the trace says (the trace is not "
           "consistent there); the model allocated them itself");
    if (const auto& n = all[c]->need; n && (!all[c]->oom || n->event_index < all[c]->oom->event_index))
      para(name + ": needs " + human_bytes(n->reserved_bytes) + " at event " + with_commas(n->event_index) +
           "; the trace only shows the device held " + human_bytes(n->shown_bytes) +
           " (not an OOM: the device may have had more)");
    if (all[c]->unplaced)
      para(name + ": " + with_commas(all[c]->unplaced) +
           " requests the model could not place (its search budget ran out on this trace) count as out of memory");
    if (!all[c]->oom) continue;
    if (all[c]->oom->over_capacity)
      para(name + ": runs out of memory at event " + with_commas(all[c]->oom->event_index) + ": it holds " +
           human_bytes(all[c]->oom->requested_bytes) + " there, more than the " +
           (all[c]->capacity ? human_bytes(*all[c]->capacity) : std::string("size")) +
           " the device had, even with its cache emptied");
    else if (all[c]->oom->at_window_start)
      para(name + ": runs out of memory at the window's start: the " + human_bytes(all[c]->oom->requested_bytes) +
           " reserved when the window opened do not fit in " +
           (all[c]->capacity ? human_bytes(*all[c]->capacity) : std::string("the device")));
    else
      para(name + ": runs out of memory at event " + with_commas(all[c]->oom->event_index) + " requesting " +
           human_bytes(all[c]->oom->requested_bytes) + " from " + term(all[c]->oom->site, 200));
  }
}

void write_simulate_json(std::ostream& out, const Source& src, const Simulation& sim) {
  Json runs = Json::array();
  for (const auto& r : sim.runs) runs.push_back(run_json(r));
  runs[0]["fidelity"] = fidelity_json(sim.fidelity);
  // What-if by role: fields added only when --scale / --drop were given.
  Json role_edits = Json::array();
  if (!sim.role_edits.empty()) {
    for (size_t k = 0; k < sim.runs.size(); ++k) {
      const SimRun& r = sim.runs[k];
      Json by_role = Json::object();
      for (size_t id = 0; id < sim.role_names.size() && id < r.peak_allocated_by_role.size(); ++id)
        by_role[sim.role_names[id]] = r.peak_allocated_by_role[id];
      runs[k]["role_edited"] = r.role_edited;
      runs[k]["peak_allocated_by_role"] = std::move(by_role);
      runs[k]["layout_vs_recorded"] = r.layout ? fidelity_json(*r.layout) : Json(nullptr);
    }
    for (const auto& e : sim.role_edits)
      role_edits.push_back({{"role", e.edit.role},
                            {"factor", e.edit.factor},
                            {"dropped", e.edit.factor == 0},
                            {"option", e.edit.text},
                            {"blocks", e.blocks},
                            {"start_blocks", e.start_blocks},
                            {"peak_before_bytes", e.peak_before},
                            {"peak_after_bytes", e.peak_after},
                            {"at_recorded_peak_after_bytes", e.at_recorded_peak_after}});
  }
  Json doc = {{"schema_version", 1},
              {"tool", {{"name", "memsnap"}, {"version", kVersion}}},
              {"input", detail::input_json(src.input, src.context.snap)},
              {"device", sim.device},
              {"starts_mid_run", sim.starts_mid_run},
              {"ends_at_oom", sim.ends_at_oom},
              {"start_state",
               {{"blocks", sim.start_blocks},
                {"segments", sim.start_segments},
                {"reserved_bytes", sim.start_reserved},
                {"allocated_bytes", sim.start_allocated}}},
              {"capacity_source", sim.capacity_source},
              {"explicit_empty_cache", sim.explicit_empty_cache},
              {"other_flushes", sim.other_flushes},
              {"recorded", run_json(sim.recorded)},
              {"runs", std::move(runs)},
              {"min_capacity_bytes", opt(sim.runs.front().min_capacity)}};
  if (!sim.role_edits.empty()) {
    doc["role_edits"] = std::move(role_edits);
    doc["role_edits_estimate"] =
        "an estimate: every block of the role scaled uniformly (or dropped); the real change would also move "
        "other roles (a smaller batch shrinks the inputs too; sharding adds communication buffers)";
  }
  detail::add_site_context(doc, src.context.sites);
  detail::write_json(out, doc);
}

}  // namespace memsnap::report
