// JSON for the trace part of `analyze`: trace, peak, iterations, leaks (field names are a contract).
#include "sections.hpp"

namespace memsnap::report::detail {

Json site_bytes_json(const analysis::SiteBytes& s) {
  return {{"site", s.site}, {"stack", s.stack}, {"live_bytes", s.live_bytes}, {"allocations", s.allocations}};
}

Json findings_json(const std::vector<analysis::Finding>& findings) {
  Json arr = Json::array();
  for (const auto& f : findings)
    arr.push_back({{"kind", f.kind},
                   {"severity", analysis::to_string(f.severity)},
                   {"message", f.message},
                   {"advice", f.advice}});
  return arr;
}

void add_trace_json(Json& d, const analysis::DeviceTotals& t, const analysis::TraceAnalysis* tr) {
  Json trace = {{"entries", t.trace.entries},
                {"first_time_us", opt(t.trace.first_time_us)},
                {"last_time_us", opt(t.trace.last_time_us)}};
  if (tr) {
    trace["window_starts_mid_run"] = tr->window_starts_mid_run;
    trace["consistent"] = tr->consistent;
    trace["first_mismatch"] = tr->first_mismatch ? Json{{"event_index", tr->first_mismatch->event},
                                                        {"message", tr->first_mismatch->what}}
                                                  : Json(nullptr);
    trace["estimated_blocks"] = tr->estimated_blocks;
  }
  d["trace"] = std::move(trace);
  if (!tr) return;
  if (tr->peak) {
    const auto& p = *tr->peak;
    Json sites = Json::array();
    for (const auto& s : p.top_sites) sites.push_back(site_bytes_json(s));
    d["peak"] = {{"time_us", opt(p.time_us)},
                 {"event_index", p.event_index},
                 {"allocated_bytes", p.allocated_bytes},
                 {"reserved_bytes", p.reserved_bytes},
                 {"active_bytes", p.active_bytes},
                 {"top_sites", std::move(sites)}};
  } else {
    d["peak"] = nullptr;
  }
  const auto& it = tr->iterations;
  if (it.found) {
    d["iterations"] = {{"count", it.count},
                       {"period_us", opt(it.period_us)},
                       {"growth_bytes_per_iteration", it.growth_bytes_per_iteration},
                       {"period_events", it.period_events},
                       {"method", it.method},
                       {"match_ratio", it.match_ratio},
                       {"boundaries", it.boundaries},
                       {"evidence", it.evidence}};
  } else {
    d["iterations"] = nullptr;
  }
  d["iterations_evidence"] = it.evidence;
  Json leaks = Json::array();
  for (const auto& l : tr->leaks)
    leaks.push_back({{"site", l.site},
                     {"stack", l.stack},
                     {"growth_bytes_per_iteration", l.growth_bytes_per_iteration},
                     {"growth_allocations_per_iteration", l.growth_allocations_per_iteration},
                     {"live_bytes", l.live_bytes},
                     {"live_allocations", l.live_allocations},
                     {"first_iteration", l.first_iteration},
                     {"last_iteration", l.last_iteration},
                     {"iterations_retained", l.iterations_retained},
                     {"pattern", l.pattern}});
  d["leaks"] = std::move(leaks);
  Json growing = Json::array();
  for (const auto& g : tr->growing)
    growing.push_back({{"site", g.site},
                       {"first_bytes", g.first_bytes},
                       {"last_bytes", g.last_bytes},
                       {"first_iteration", g.first_iteration},
                       {"last_iteration", g.last_iteration},
                       {"iterations", g.iterations}});
  d["growing_allocations"] = std::move(growing);
}

}  // namespace memsnap::report::detail
