// `memsnap diff --format json`: the field names here are a contract with users' scripts.
#include <ostream>

#include "json_util.hpp"
#include "memsnap/report/diff.hpp"
#include "memsnap/util/version.hpp"
#include "sections.hpp"

namespace memsnap::report {

using detail::Json;

namespace {
Json segments_json(const std::vector<analysis::SegmentRef>& segs) {
  Json arr = Json::array();
  for (const auto& s : segs)
    arr.push_back(
        {{"address", s.address}, {"size", s.size}, {"pool", snapshot::to_string(s.pool)}, {"stream", s.stream}});
  return arr;
}

int64_t delta(uint64_t a, uint64_t b) {
  return analysis::signed_delta(a, b);
}

Json sites_json(const std::vector<analysis::SiteDelta>& sites) {
  Json out = Json::array();
  for (const auto& s : sites) {
    Json callers = Json::array();
    for (const auto& c : s.callers)
      callers.push_back({{"path", c.path},
                         {"before_bytes", c.before_bytes},
                         {"after_bytes", c.after_bytes},
                         {"before_allocations", c.before_allocations},
                         {"after_allocations", c.after_allocations}});
    out.push_back({{"site", s.site},
                   {"role", s.role ? Json(analysis::to_string(*s.role)) : Json(nullptr)},
                   {"file", s.file},
                   {"function", s.function},
                   {"line", s.line},
                   {"stack", s.stack},
                   {"callers", std::move(callers)},
                   {"before_bytes", s.before_bytes},
                   {"after_bytes", s.after_bytes},
                   {"delta_bytes", s.delta_bytes()},
                   {"before_allocations", s.before_allocations},
                   {"after_allocations", s.after_allocations},
                   {"status", s.is_new()     ? "new"
                              : s.vanished() ? "vanished"
                                             : "both"}});
  }
  return out;
}

// One side's peaks: null when its trace cannot be replayed (or the file lacks the device).
// by_role and phase as analyze's peak.by_role and peak.phase.
Json peak_json(const analysis::DiffPeak& p, const std::optional<analysis::RoleState>& roles,
               const std::vector<std::string>& names) {
  if (!p.known) return nullptr;
  Json j = {{"allocated_bytes", p.allocated_bytes},
            {"allocated_event_index", p.allocated_at_window_start ? Json(nullptr) : Json(p.allocated_event)},
            {"reserved_bytes", p.reserved_bytes},
            {"reserved_event_index", p.reserved_at_window_start ? Json(nullptr) : Json(p.reserved_event)}};
  j["by_role"] = roles ? detail::by_role_json(*roles, names) : Json(nullptr);
  j["phase"] = roles ? detail::phase_json(*roles) : Json(nullptr);
  return j;
}

// Role name -> after - before, every role.
Json role_delta_json(const analysis::RoleState& a, const analysis::RoleState& b,
                     const std::vector<std::string>& names) {
  Json o = Json::object();
  for (size_t r = 0; r < names.size(); ++r)
    o[names[r]] =
        delta(r < a.by_role.bytes.size() ? a.by_role.bytes[r] : 0, r < b.by_role.bytes.size() ? b.by_role.bytes[r] : 0);
  return o;
}

Json peaks_json(const analysis::DeviceDiff& d) {
  Json j = {{"before", peak_json(d.peak_before, d.roles_before.peak, d.role_names)},
            {"after", peak_json(d.peak_after, d.roles_after.peak, d.role_names)}};
  bool both = d.peak_before.known && d.peak_after.known;
  j["allocated_delta_bytes"] =
      both ? Json(delta(d.peak_before.allocated_bytes, d.peak_after.allocated_bytes)) : Json(nullptr);
  j["reserved_delta_bytes"] =
      both ? Json(delta(d.peak_before.reserved_bytes, d.peak_after.reserved_bytes)) : Json(nullptr);
  // A device one file lacks peaks at nothing on that side (zeros by role).
  bool roles = d.roles_before.peak && d.roles_after.peak && (!d.in_before || d.peak_before.known) &&
               (!d.in_after || d.peak_after.known);
  j["by_role_delta_bytes"] =
      roles ? role_delta_json(*d.roles_before.peak, *d.roles_after.peak, d.role_names) : Json(nullptr);
  return j;
}

// Whether the allocated peak moved phase: null unless both peaks have a phase.
Json moved_json(const analysis::DeviceDiff& d) {
  const auto &a = d.roles_before.peak, &b = d.roles_after.peak;
  if (!(a && b && a->phase && b->phase && d.peak_before.known && d.peak_after.known)) return nullptr;
  return d.peak_moved_phase();
}
}  // namespace

namespace detail {

Json diff_json(const DiffView& v) {
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["before"] = detail::input_json(v.before.input, v.before.context.snap);
  doc["after"] = detail::input_json(v.after.input, v.after.context.snap);
  doc["process"] = {{"relation", analysis::to_string(v.process.relation)},
                    {"evidence", analysis::to_string(v.process.evidence)},
                    {"device", v.process.device ? Json(*v.process.device) : Json(nullptr)},
                    {"segments_matched_by_address", v.process.segments_by_address()}};
  Json devices = Json::array();
  for (const auto& d : v.devices) {
    Json j;
    j["device"] = d.device;
    j["in_before"] = d.in_before;
    j["in_after"] = d.in_after;
    j["totals_delta"] = {
        {"reserved_bytes", delta(d.before.reserved_bytes, d.after.reserved_bytes)},
        {"allocated_bytes", delta(d.before.allocated_bytes, d.after.allocated_bytes)},
        {"active_bytes", delta(d.before.active_bytes, d.after.active_bytes)},
        {"requested_bytes", delta(d.before.requested_bytes, d.after.requested_bytes)},
        {"inactive_bytes", delta(d.before.inactive_bytes, d.after.inactive_bytes)},
        {"largest_free_block_bytes", delta(d.before.largest_free_block_bytes, d.after.largest_free_block_bytes)},
        {"segments", delta(d.before.segments, d.after.segments)},
        {"blocks", delta(d.before.blocks, d.after.blocks)}};
    j["segments_only_before"] = segments_json(d.segments_only_before);
    j["segments_only_after"] = segments_json(d.segments_only_after);
    j["sites"] = sites_json(d.sites);
    j["totals_by_role"] = {{"before", detail::by_role_json(d.roles_before.dump, d.role_names)},
                           {"after", detail::by_role_json(d.roles_after.dump, d.role_names)},
                           {"delta_bytes", role_delta_json(d.roles_before.dump, d.roles_after.dump, d.role_names)}};
    j["peaks"] = peaks_json(d);
    j["peak_moved_phase"] = moved_json(d);
    j["peak_sites"] = sites_json(d.peak_sites);
    devices.push_back(std::move(j));
  }
  doc["devices"] = std::move(devices);
  Json warnings = Json::array();
  for (const auto& w : v.before.context.snap.warnings) warnings.push_back("before: " + w);
  for (const auto& w : v.after.context.snap.warnings) warnings.push_back("after: " + w);
  doc["warnings"] = std::move(warnings);
  detail::add_site_context(doc, v.after.context.sites, &v.before.context.sites);
  return doc;
}

}  // namespace detail

void write_diff_json(std::ostream& out, const DiffView& v) {
  detail::write_json(out, detail::diff_json(v));
}

}  // namespace memsnap::report
