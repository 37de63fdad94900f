// The out-of-memory section of `analyze`, as text and JSON (`devices[].oom`, `devices[].ooms`).
#include <ostream>

#include "memsnap/util/units.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report::detail {

namespace {

Json oom_json(const analysis::OomReport& r) {
  Json causes = Json::array();
  for (const auto& c : r.causes) causes.push_back({{"cause", c.cause}, {"evidence", c.evidence}});
  Json top = Json::array();
  for (const auto& s : r.top_sites) top.push_back({{"site", s.site}, {"stack", s.stack}, {"live_bytes", s.live_bytes}});
  Json pins = Json::array();
  for (const auto& s : r.pinning_sites) pins.push_back(site_bytes_json(s));
  return {{"time_us", opt(r.time_us)},
          {"event_index", opt(r.event_index)},
          {"stream", r.stream},
          {"requested_bytes", r.requested_bytes},
          {"segment_request_bytes", r.segment_request_bytes},
          {"device_free_bytes", opt(r.device_free_bytes)},
          {"reserved_bytes", r.reserved_bytes},
          {"allocated_bytes", r.allocated_bytes},
          {"free_cached_bytes", r.free_cached_bytes},
          {"largest_free_block_bytes", r.largest_free_block_bytes},
          {"cause", r.cause},
          {"causes", std::move(causes)},
          {"message", r.message},
          {"site", r.site},
          {"stack", r.stack},
          {"top_sites", std::move(top)},
          {"advice", r.advice},
          {"from_trace", r.from_trace},
          {"pool", snapshot::to_string(r.pool)},
          {"active_bytes", r.active_bytes},
          {"free_cached_same_pool_bytes", r.free_cached_same_pool_bytes},
          {"largest_free_block_any_bytes", r.largest_free_block_any_bytes},
          {"cached_block_could_serve", r.cached_block_could_serve},
          {"capacity_bytes", opt(r.capacity_bytes)},
          {"approximate_within_bytes", r.approximate_within_bytes},
          {"pinning_sites", std::move(pins)},
          {"retry_in_except", r.retry_in_except}};
}

}  // namespace

void add_oom_json(Json& device, const std::vector<analysis::OomReport>* ooms) {
  if (!ooms) return;
  Json all = Json::array();
  for (const auto& r : *ooms) all.push_back(oom_json(r));
  device["oom"] = ooms->empty() ? Json(nullptr) : all.back();
  device["ooms"] = std::move(all);
}

void write_oom_text(std::ostream& out, const std::vector<analysis::OomReport>* ooms,
                    const std::optional<int64_t>& first_time, const TextStyle& style) {
  if (!ooms || ooms->empty()) return;
  size_t width = static_cast<size_t>(std::max(60, std::min(style.width, 120)));
  const char* bold = style.color ? "\033[1m" : "";
  const char* red = style.color ? "\033[31m" : "";
  const char* reset = style.color ? "\033[0m" : "";
  constexpr size_t kCol = 15;
  std::string pad(kCol, ' ');
  for (size_t k = 0; k < ooms->size(); ++k) {
    const auto& r = (*ooms)[k];
    out << '\n' << "  " << bold << red << "out of memory" << reset;
    if (ooms->size() > 1) out << " (" << k + 1 << " of " << ooms->size() << ")";
    if (r.from_trace) {
      out << " at event " << with_commas(*r.event_index);
      if (r.time_us && first_time) out << " (+" << duration(*r.time_us - *first_time) << ")";
    } else {
      out << ": the OOM moment is not in the file; figures are the dumped state's";
    }
    out << '\n';
    auto line = [&](const char* label, const std::string& text) {
      out << "  " << pad_right(label, kCol - 2) << wrap(text, kCol, kCol, width) << '\n';
    };
    line("request", human_bytes(r.requested_bytes) + " (rounded) on stream " + stream_name(r.stream) + ", " +
                        snapshot::to_string(r.pool) + " pool; needed a new " + human_bytes(r.segment_request_bytes) +
                        " segment");
    if (r.from_trace) line("from", r.site);
    std::string state = "reserved " + human_bytes(r.reserved_bytes) + ", allocated " + human_bytes(r.allocated_bytes) +
                        ", cached free " + human_bytes(r.free_cached_bytes);
    if (r.device_free_bytes) state += ", device free " + human_bytes(*r.device_free_bytes);
    line("state", state);
    line("largest free", human_bytes(r.largest_free_block_bytes) + " on stream " + stream_name(r.stream) + " in the " +
                             snapshot::to_string(r.pool) + " pool (" + human_bytes(r.free_cached_same_pool_bytes) +
                             " free there in all)" +
                             (r.cached_block_could_serve ? "; a cached block could have served it" : ""));
    if (r.approximate_within_bytes)
      line("accuracy", "allocated and free figures within " + human_bytes(r.approximate_within_bytes) +
                           " (blocks freed after the OOM left only their requested size)");
    for (size_t i = 0; i < r.causes.size(); ++i)
      line(i == 0 ? "cause" : "also", r.causes[i].cause + ": " + r.causes[i].evidence);
    // PyTorch's message, indented less so that its URL fits a line whole.
    out << "  " << pad_right("message", kCol - 2) << "(rebuilt from these numbers)\n"
        << wrap_block("\"" + r.message + "\"", width, 4);
    for (size_t i = 0; i < r.advice.size(); ++i) line(i == 0 ? "fix" : "", r.advice[i]);
  }
}

}  // namespace memsnap::report::detail
