// `memsnap analyze --format json`: the field names here are a contract with users' scripts.
#include <map>
#include <ostream>

#include "memsnap/analysis/annotation_ranges.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/util/version.hpp"
#include "sections.hpp"

namespace memsnap::report {

namespace detail {

Json site_bytes_json(const analysis::SiteBytes& s) {
  return {{"site", s.site}, {"stack", s.stack}, {"live_bytes", s.live_bytes}, {"allocations", s.allocations}};
}

Json at_json(const analysis::AtPoint& a) {
  return {{"event_index", a.event_index}, {"time_us", opt(a.time_us)}, {"estimated_blocks", a.estimated_blocks}};
}

Json findings_json(const analysis::DeviceAnalysis& d, const snapshot::AllocatorSettings& settings) {
  Json arr = Json::array();
  for (const auto& f : d.findings) {
    Words w = finding_words(f, d, settings);
    arr.push_back({{"kind", analysis::to_string(f.kind)},
                   {"severity", analysis::to_string(f.severity)},
                   {"message", w.message},
                   {"advice", w.advice},
                   {"bytes", f.bytes}});
    if (analysis::about_oom(f.kind)) arr.back()["oom_index"] = f.index;  // into the device's "ooms"
  }
  return arr;
}

// The most urgent finding: the highest severity, the first raised among equals.
const analysis::Finding* headline_finding(const analysis::DeviceAnalysis& d) {
  const analysis::Finding* best = nullptr;
  for (const auto& f : d.findings)
    if (!best || f.severity > best->severity) best = &f;
  return best;
}

Json verdict_json(const analysis::DeviceAnalysis& d) {
  const analysis::Finding* f = headline_finding(d);
  return {{"device", d.device},
          {"oom", d.ooms.total > 0},
          {"oom_events", d.ooms.total},
          {"peak_allocated_bytes", d.peaks.allocated ? Json(d.peaks.allocated->allocated_bytes) : Json()},
          {"peak_reserved_bytes", d.peaks.reserved ? Json(d.peaks.reserved->bytes) : Json()},
          {"reserved_bytes", d.accounting.reserved_bytes},
          {"memory_pressure", d.memory_pressure},
          {"training", d.training},
          {"finding", f ? Json(analysis::to_string(f->kind)) : Json()},
          {"severity", f ? Json(analysis::to_string(f->severity)) : Json()},
          {"capacity_bytes", d.capacity_bytes ? Json(*d.capacity_bytes) : Json()},
          {"text", verdict_words(d)}};
}

Json churn_json(const analysis::Churn& c) {
  Json retry_sites = Json::array(), calls = Json::array();
  for (const auto& r : c.retry_sites)
    retry_sites.push_back({{"site", r.site},
                           {"retries", r.retries},
                           {"freed_bytes", r.freed_bytes},
                           {"largest_request_bytes", r.largest_request_bytes}});
  for (const auto& e : c.empty_cache_sites)
    calls.push_back(
        {{"site", e.site}, {"calls", e.calls}, {"returned_bytes", e.returned_bytes}, {"segments", e.segments}});
  return {{"cache_flush_retries", c.retries},
          {"cache_flush_retry_freed_bytes", c.retry_freed_bytes},
          {"cache_flush_retry_segments", c.retry_segments},
          {"cache_flush_retry_largest_bytes", c.retry_largest_burst_bytes},
          {"cache_flush_retry_sites", std::move(retry_sites)},
          {"empty_cache_calls", c.empty_cache_calls},
          {"empty_cache_returned_bytes", c.empty_cache_returned_bytes},
          {"empty_cache_segments", c.empty_cache_segments},
          {"empty_cache_reallocations", c.reallocations},
          {"empty_cache_reallocated_bytes", c.reallocated_bytes},
          {"empty_cache_sites", std::move(calls)}};
}

Json big_layer_json(const analysis::BigLayer& b) {
  return {{"site", b.site},
          {"event_index", b.event},
          {"weight_bytes", b.weight_bytes},
          {"multiple", b.multiple},
          {"footprint_bytes", b.footprint_bytes},
          {"share_of", b.of_device ? "device" : "peak"},
          {"share_base_bytes", b.base_bytes},
          {"other_parameters_bytes", b.other_parameters_bytes}};
}

Json model_per_step_json(const analysis::ModelPerStep& m) {
  return {{"site", m.site},
          {"constructor", m.constructor.empty() ? Json() : Json(m.constructor)},
          {"builds", m.builds},
          {"bytes_per_build", m.bytes_per_build},
          {"total_bytes", m.total_bytes},
          {"still_allocated_bytes", m.still_allocated_bytes}};
}

namespace {

Json trace_json(const analysis::TraceSummary& t) {
  Json trace = {{"entries", t.entries}, {"first_time_us", opt(t.first_time_us)}, {"last_time_us", opt(t.last_time_us)}};
  trace["window_starts_mid_run"] = t.window_starts_mid_run;
  trace["events_dropped"] = t.dropped != analysis::DroppedEvents::NotShown;
  trace["events_dropped_evidence"] =
      t.dropped != analysis::DroppedEvents::NotShown ? Json(analysis::to_string(t.dropped)) : Json(nullptr);
  trace["consistent"] = t.consistent;
  trace["first_mismatch"] = t.first_mismatch
                                ? Json{{"event_index", t.first_mismatch->event}, {"message", t.first_mismatch->what}}
                                : Json(nullptr);
  trace["estimated_blocks"] = t.estimated_blocks;
  if (t.layout)
    trace["layout"] = {
        {"equal", t.layout->equal},
        {"segments_compared", t.layout->segments},
        {"blocks_compared", t.layout->blocks},
        {"first_difference", t.layout->first_difference.empty() ? Json(nullptr) : Json(t.layout->first_difference)},
        {"first_unfollowed_event", opt(t.layout->first_unfollowed_event)}};
  return trace;
}

}  // namespace

// Role name -> bytes, every role (the built-in ones, then the user's).
Json by_role_json(const analysis::RoleState& s, const std::vector<std::string>& names) {
  Json o = Json::object();
  for (size_t r = 0; r < names.size() && r < s.by_role.bytes.size(); ++r) o[names[r]] = s.by_role.bytes[r];
  return o;
}

// The state's phase: memsnap's, or with --phases annotations its record_function range's
// ("torch.compile autotuning" for torch.compile's; null outside every range).
Json phase_json(const analysis::RoleState& s, bool ranges_are_phases) {
  if (ranges_are_phases) return s.range ? Json(analysis::range_phase(*s.range)) : Json(nullptr);
  return s.phase ? Json(analysis::to_string(*s.phase)) : Json(nullptr);
}

namespace {

Json peak_json(const analysis::Peaks& peaks) {
  const auto& p = peaks.allocated;
  if (!p) return nullptr;
  Json sites = Json::array();
  for (const auto& s : p->top_sites) sites.push_back(site_bytes_json(s));
  return {{"time_us", opt(p->time_us)},
          {"event_index", p->at_window_start ? Json(-1) : Json(p->event_index)},
          {"at_window_start", p->at_window_start},
          {"allocated_bytes", p->allocated_bytes},
          {"reserved_bytes", p->reserved_bytes},
          {"active_bytes", p->active_bytes},
          {"top_sites", std::move(sites)},
          {"other_sites",
           {{"sites", p->other_sites.sites},
            {"live_bytes", p->other_sites.live_bytes},
            {"allocations", p->other_sites.allocations}}}};
}

Json peak_reserved_json(const analysis::Peaks& peaks) {
  const auto& r = peaks.reserved;
  if (!r) return nullptr;
  return {{"bytes", r->bytes},
          {"event_index", r->at_window_start ? Json(-1) : Json(r->event_index)},
          {"time_us", opt(r->time_us)},
          {"at_window_start", r->at_window_start}};
}

Json iterations_json(const analysis::Iterations& it, const std::string& evidence) {
  return {{"count", it.count},
          {"period_us", opt(it.period_us)},
          {"growth_bytes_per_iteration", it.found() ? Json(it.growth_bytes_per_iteration) : Json(nullptr)},
          {"period_events", it.period_events},
          {"method", iteration_method(it)},
          {"match_ratio", it.match_ratio},
          {"boundaries", it.boundaries},
          {"evidence", evidence},
          {"allocations", it.allocations},
          {"allocations_with_stack", it.allocations_with_stack}};
}

Json structure_json(const std::optional<analysis::Structure>& s, const analysis::Iterations& it) {
  if (!s) return nullptr;
  return {{"kind", structure_kind(*s, it)},
          {"description", structure_words(*s, it)},
          {"repeats", s->repeats},
          {"allocations_per_repeat", s->period_allocations},
          {"first_event", s->first_event},
          {"last_event", s->last_event},
          {"loop_site", s->loop_site},
          {"keeps_activations", s->keeps_activations},
          {"kept_share", s->kept_share},
          {"kept_bytes", s->kept_bytes},
          {"backward_seen", s->backward_seen},
          {"growth_bytes_per_repeat", s->growth_bytes_per_repeat}};
}

Json leaks_json(const analysis::DeviceAnalysis& a) {
  Json leaks = Json::array();
  for (const auto& l : a.leaks)
    leaks.push_back({{"site", l.site},
                     {"stack", l.stack},
                     {"growth_bytes_per_iteration", l.growth_bytes_per_iteration},
                     {"growth_allocations_per_iteration", l.growth_allocations_per_iteration},
                     {"live_bytes", l.live_bytes},
                     {"live_allocations", l.live_allocations},
                     {"first_iteration", l.first_iteration},
                     {"last_iteration", l.last_iteration},
                     {"iterations_retained", l.iterations_retained},
                     {"iterations_judged", l.iterations_judged},
                     {"pattern", analysis::to_string(l.pattern)}});
  return leaks;
}

Json growing_json(const analysis::DeviceAnalysis& a) {
  Json growing = Json::array();
  for (const auto& g : a.growing)
    growing.push_back({{"site", g.site},
                       {"first_bytes", g.first_bytes},
                       {"last_bytes", g.last_bytes},
                       {"first_iteration", g.first_iteration},
                       {"last_iteration", g.last_iteration},
                       {"iterations", g.iterations}});
  return growing;
}

}  // namespace

void add_trace_json(Json& d, const analysis::DeviceAnalysis& a) {
  d["trace"] = trace_json(a.trace);
  d["peak"] = peak_json(a.peaks);
  if (a.roles.peak && d["peak"].is_object()) {
    d["peak"]["by_role"] = by_role_json(*a.roles.peak, a.roles.names);
    d["peak"]["phase"] = phase_json(*a.roles.peak, a.roles.phases_from_ranges);
    // the record_function range open at the peak (any with --phases annotations, else torch.compile's)
    d["peak"]["annotation"] = a.roles.peak->range ? Json(*a.roles.peak->range) : Json(nullptr);
    // gradients freed by a zero_grad after a peak in the forward: the previous step's
    d["peak"]["stale_gradient_bytes"] = a.roles.peak->stale_gradients;
  }
  d["peak_reserved"] = peak_reserved_json(a.peaks);
  std::string evidence = iteration_evidence(a.iterations);
  d["iterations"] = iterations_json(a.iterations, evidence);
  d["iterations_evidence"] = evidence;
  d["structure"] = structure_json(a.structure, a.iterations);
  d["leaks"] = leaks_json(a);
  d["leaks_judged"] =
      analysis::leaks_judged(a.iterations);  // false: an empty list says nothing (fewer than 5 iterations)
  d["growing_allocations"] = growing_json(a);
}

namespace {

Json oom_message_json(const analysis::OomMessageCheck& c, const analysis::OomReport& r) {
  const analysis::OomMessage& m = c.said;
  auto size = [](const std::optional<analysis::PrintedSize>& s) { return s ? Json(s->bytes) : Json(nullptr); };
  return {{"tried_bytes", m.tried.bytes},
          {"device", opt(m.device)},
          {"capacity_bytes", size(m.capacity)},
          {"free_bytes", size(m.free)},
          {"process_bytes", size(m.process)},
          {"allocated_bytes", size(m.allocated)},
          {"reserved_bytes", size(m.reserved)},
          {"request_matches", c.request_matches},
          {"allocated_matches", opt(c.allocated_matches)},
          {"reserved_matches", opt(c.reserved_matches)},
          {"free_matches", opt(c.free_matches)},
          {"state_differs", c.state_differs()},
          {"message_cause", c.message_cause ? Json(analysis::to_string(*c.message_cause)) : Json(nullptr)},
          {"other_processes_bytes", opt(c.other_processes_bytes)},
          {"outside_allocator_bytes", opt(c.outside_allocator_bytes)},
          {"notes", message_check_words(c, r)}};
}

Json oom_json(const analysis::OomReport& r, const std::vector<analysis::Leak>& leaks) {
  Json causes = Json::array();
  for (auto c : r.causes)
    causes.push_back({{"cause", analysis::to_string(c)}, {"evidence", cause_evidence(c, r, leaks)}});
  Json top = Json::array();
  for (const auto& s : r.top_sites) top.push_back({{"site", s.site}, {"stack", s.stack}, {"live_bytes", s.live_bytes}});
  Json pins = Json::array();
  for (const auto& s : r.pinning_sites)
    pins.push_back({{"site", s.site},
                    {"stack", s.stack},
                    {"live_bytes", s.live_bytes},
                    {"stranded_bytes", s.stranded_bytes},
                    {"allocations", s.blocks}});
  Json advice = Json::array();
  for (auto f : r.fixes) advice.push_back(fix_words(f, r));
  return {{"time_us", opt(r.time_us)},
          {"event_index", opt(r.event_index)},
          {"stream", r.stream},
          {"requested_bytes", r.requested_bytes},
          {"segment_request_bytes", r.segment_request_bytes},
          {"map_bytes", r.map_bytes},
          {"device_free_bytes", opt(r.device_free_bytes)},
          {"reserved_bytes", r.reserved_bytes},
          {"allocated_bytes", r.allocated_bytes},
          {"free_cached_bytes", r.free_cached_bytes},
          {"largest_free_block_bytes", r.largest_free_block_bytes},
          {"cause", analysis::to_string(r.cause())},
          {"causes", std::move(causes)},
          {"message", torch_message(r)},
          {"site", r.site},
          {"stack", r.stack},
          {"top_sites", std::move(top)},
          {"advice", std::move(advice)},
          {"what_if", r.what_if ? Json{{"setting", r.what_if->setting},
                                       {"fits", r.what_if->fits},
                                       {"oom_event_index", opt(r.what_if->oom_event)},
                                       {"peak_reserved_bytes", r.what_if->peak_reserved_bytes},
                                       {"reserved_at_oom_bytes", opt(r.what_if->reserved_at_oom_bytes)},
                                       {"capacity_bytes", opt(r.what_if->capacity_bytes)}}
                                : Json(nullptr)},
          {"from_trace", r.from_trace},
          {"pool", snapshot::to_string(r.pool)},
          {"expandable", r.expandable},
          {"active_bytes", r.active_bytes},
          {"free_cached_same_pool_bytes", r.free_cached_same_pool_bytes},
          {"largest_free_block_any_bytes", r.largest_free_block_any_bytes},
          {"cached_block_could_serve", r.cached_block_could_serve},
          {"capacity_bytes", opt(r.capacity_bytes)},
          {"approximate_within_bytes", r.approximate_within_bytes},
          {"exact", r.from_trace && r.approximate_within_bytes == 0},
          {"estimated_blocks", r.estimated_blocks},
          {"freed_after_bytes", r.freed_after_bytes},
          {"pinning_sites", std::move(pins)},
          {"retry_in_except", r.retry_in_except},
          {"oom_message", r.message ? oom_message_json(*r.message, r) : Json(nullptr)}};
}

}  // namespace

void add_oom_json(Json& d, const analysis::DeviceAnalysis& a) {
  Json all = Json::array();
  for (size_t k = 0; k < a.ooms.explained.size(); ++k) {
    all.push_back(oom_json(a.ooms.explained[k], a.leaks));
    if (k < a.roles.ooms.size()) {
      all.back()["by_role"] = by_role_json(a.roles.ooms[k], a.roles.names);
      all.back()["phase"] = phase_json(a.roles.ooms[k], a.roles.phases_from_ranges);
      all.back()["annotation"] = a.roles.ooms[k].range ? Json(*a.roles.ooms[k].range) : Json(nullptr);
    }
  }
  d["oom"] = all.empty() ? Json(nullptr) : all.back();
  d["ooms"] = std::move(all);
  Json more = Json::array();
  for (const auto& o : a.ooms.more)
    more.push_back({{"event_index", o.event_index},
                    {"time_us", opt(o.time_us)},
                    {"stream", o.stream},
                    {"requested_bytes", o.requested_bytes},
                    {"device_free_bytes", o.device_free_bytes},
                    {"allocated_bytes", o.allocated_bytes},
                    {"reserved_bytes", o.reserved_bytes},
                    {"site", o.site}});
  d["ooms_more"] = std::move(more);
  d["oom_events"] = a.ooms.total;
}

}  // namespace detail

detail::Json detail::analyze_json(const Source& src, const analysis::AnalyzeResult& result) {
  const auto& snap = src.context.snap;
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["input"] = detail::input_json(src.input, snap);
  doc["allocator_settings"] = detail::settings_json(snap.settings);
  doc["time_origin_us"] = detail::opt(result.time_origin_us);
  Json devices = Json::array();
  for (const auto& a : result.devices) {
    const auto& t = a.accounting;
    Json d;
    d["device"] = a.device;
    d["unused"] = a.unused;
    d["totals"] = {{"reserved_bytes", t.reserved_bytes},
                   {"allocated_bytes", t.allocated_bytes},
                   {"active_bytes", t.active_bytes},
                   {"requested_bytes", t.requested_bytes},
                   {"inactive_bytes", t.external_free_bytes},
                   {"segments", t.segment_count},
                   {"blocks", t.block_count},
                   {"largest_free_block_bytes", t.largest_free_block_bytes},
                   {"pending_free_bytes", t.pending_free_bytes},
                   {"internal_free_bytes", t.internal_free_bytes},
                   {"external_free_bytes", t.external_free_bytes}};
    if (!a.roles.names.empty()) d["totals"]["by_role"] = detail::by_role_json(a.roles.dump, a.roles.names);
    Json where = Json::array();  // the KV cache, NCCL and autocast blocks: the frame, the private pool
    for (const auto& w : a.roles.dump_where)
      where.push_back({{"role", analysis::to_string(w.role)},
                       {"bytes", w.bytes},
                       {"frame", w.frame},
                       {"private_pool", w.pool ? Json::array({w.pool->first, w.pool->second}) : Json(nullptr)}});
    d["totals"]["by_role_where"] = std::move(where);
    // where the phases of peak.phase and oom.phase came from: "annotations" (some record_function
    // ranges of the file), "stacks", or null without a trace
    d["phases_source"] = !a.roles.from_trace               ? Json(nullptr)
                         : a.roles.phases_from_ranges      ? Json("user_annotations")
                         : a.roles.phases_from_annotations ? Json("annotations")
                                                           : Json("stacks");
    // gradients the backward added into with no zero_grad in the window (null: none seen)
    if (const auto& g = a.roles.never_zeroed)
      d["gradients_never_zeroed"] = {{"gradients", g->gradients},
                                     {"bytes", g->bytes},
                                     {"first_event", g->first_event},
                                     {"across_a_step", g->across_a_step}};
    else
      d["gradients_never_zeroed"] = nullptr;
    // without a trace: the sites live at the dump, largest first (null with a trace: see peak)
    if (a.trace.entries == 0) {
      Json sites = Json::array();
      for (const auto& st : a.dump_sites) sites.push_back(detail::site_bytes_json(st));
      d["dump_sites"] = {{"top_sites", std::move(sites)},
                         {"other_sites",
                          {{"sites", a.dump_other_sites.sites},
                           {"live_bytes", a.dump_other_sites.live_bytes},
                           {"allocations", a.dump_other_sites.allocations}}}};
    } else {
      d["dump_sites"] = nullptr;
    }
    // a forward's activations still allocated after the backward (null: none, or no backward)
    if (const auto& k = a.roles.kept_after_backward) {
      Json frames = Json::array();
      for (const auto& [frame, bytes] : k->frames) frames.push_back({{"frame", frame}, {"bytes", bytes}});
      d["activations_kept_after_backward"] = {{"bytes", k->bytes},
                                              {"blocks", k->blocks},
                                              {"backward_event", k->backward_event},
                                              {"site", k->site.empty() ? Json(nullptr) : Json(k->site)},
                                              {"frames", std::move(frames)},
                                              {"bitsandbytes", k->bitsandbytes}};
    } else {
      d["activations_kept_after_backward"] = nullptr;
    }
    std::map<std::pair<int, uint64_t>, Json> groups;  // (pool, stream), private pools folded in
    for (const auto& p : t.pools) {
      Json& g = groups[{int(p.pool), p.stream}];
      if (g.is_null())
        g = {{"pool", snapshot::to_string(p.pool)},
             {"stream", p.stream},
             {"segments", 0},
             {"blocks", 0},
             {"reserved_bytes", 0},
             {"allocated_bytes", 0},
             {"free_bytes", 0}};
      g["segments"] = g["segments"].get<uint64_t>() + p.segments;
      g["blocks"] = g["blocks"].get<uint64_t>() + p.blocks;
      g["reserved_bytes"] = g["reserved_bytes"].get<uint64_t>() + p.reserved_bytes;
      g["allocated_bytes"] = g["allocated_bytes"].get<uint64_t>() + p.allocated_bytes;
      g["free_bytes"] = g["free_bytes"].get<uint64_t>() + p.free_bytes;
    }
    Json pools = Json::array();
    for (auto& [key, g] : groups) pools.push_back(std::move(g));
    d["by_pool_stream"] = std::move(pools);
    if (a.at) d["at"] = detail::at_json(*a.at);
    d["fragmentation"] = detail::accounting_json(t);
    if (a.fits) d["fits"] = detail::fits_json(*a.fits);
    detail::add_trace_json(d, a);
    detail::add_oom_json(d, a);
    d["verdict"] = detail::verdict_json(a);
    d["churn"] = detail::churn_json(a.churn);
    d["big_layer"] = a.big_layer ? detail::big_layer_json(*a.big_layer) : Json();
    d["model_per_step"] = a.model_per_step ? detail::model_per_step_json(*a.model_per_step) : Json();
    d["findings"] = detail::findings_json(a, snap.settings);
    devices.push_back(std::move(d));
  }
  doc["devices"] = std::move(devices);
  // one verdict per used device, the failing ones first (as the text report's summary)
  Json verdicts = Json::array();
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& a : result.devices)
      if (!a.unused && (a.ooms.total > 0) == (pass == 0)) verdicts.push_back(detail::verdict_json(a));
  doc["device_verdicts"] = std::move(verdicts);
  Json warnings = Json::array();
  for (const auto& w : snap.warnings) warnings.push_back(w);
  for (const auto& w : result.warnings) warnings.push_back(w);
  doc["warnings"] = std::move(warnings);
  detail::add_site_context(doc, src.context.sites);
  return doc;
}

void write_analyze_json(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result) {
  detail::write_json(out, detail::analyze_json(src, result));
}

}  // namespace memsnap::report
