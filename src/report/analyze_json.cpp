// `memsnap analyze --format json`: the field names here are a contract with users' scripts.
#include <nlohmann/json.hpp>
#include <ostream>

#include "memsnap/report/analyze.hpp"
#include "memsnap/util/version.hpp"
#include "fragmentation_report.hpp"
#include "json_util.hpp"
#include "sections.hpp"

namespace memsnap::report {

using Json = nlohmann::ordered_json;

void write_analyze_json(std::ostream& out, const AnalyzeView& v) {
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["input"] = detail::input_json(*v.input, *v.snapshot);
  doc["allocator_settings"] = detail::settings_json(v.snapshot->settings);
  Json devices = Json::array();
  for (size_t i = 0; i < v.totals->size(); ++i) {
    const auto& t = (*v.totals)[i];
    const analysis::TraceAnalysis* tr = v.trace ? &(*v.trace)[i] : nullptr;
    Json d;
    d["device"] = t.device;
    d["totals"] = {{"reserved_bytes", t.reserved_bytes},
                   {"allocated_bytes", t.allocated_bytes},
                   {"active_bytes", t.active_bytes},
                   {"requested_bytes", t.requested_bytes},
                   {"inactive_bytes", t.inactive_bytes},
                   {"segments", t.segments},
                   {"blocks", t.blocks},
                   {"largest_free_block_bytes", t.largest_free_block_bytes},
                   {"pending_free_bytes", t.pending_free_bytes},
                   {"internal_free_bytes", t.internal_free_bytes},
                   {"external_free_bytes", t.inactive_bytes}};
    Json pools = Json::array();
    for (const auto& g : t.by_pool_stream)
      pools.push_back({{"pool", snapshot::to_string(g.pool)},
                       {"stream", g.stream},
                       {"segments", g.segments},
                       {"blocks", g.blocks},
                       {"reserved_bytes", g.reserved_bytes},
                       {"allocated_bytes", g.allocated_bytes},
                       {"free_bytes", g.free_bytes}});
    d["by_pool_stream"] = std::move(pools);
    if (v.at && (*v.at)[i]) {
      const auto& a = *(*v.at)[i];
      d["at"] = {{"event_index", a.event_index}, {"time_us", detail::opt(a.time_us)}, {"estimated_blocks", a.estimated_blocks}};
    }
    detail::add_device_sections_json(d, v, i);
    detail::add_trace_json(d, t, tr);
    detail::add_oom_json(d, v.ooms ? &(*v.ooms)[i] : nullptr);
    d["findings"] = v.findings ? detail::findings_json((*v.findings)[i]) : Json::array();
    devices.push_back(std::move(d));
  }
  doc["devices"] = std::move(devices);
  doc["warnings"] = v.snapshot->warnings;
  detail::write_json(out, doc);
}

}  // namespace memsnap::report
