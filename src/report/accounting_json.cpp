// JSON of the accounting (`fragmentation`), fits and allocator-settings sections (field names are a contract).
#include "sections.hpp"

namespace memsnap::report::detail {

namespace {
template <class T>
Json opt_u(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}
Json pool_id_json(const int64_t id[2]) {
  return Json::array({id[0], id[1]});
}
}  // namespace

Json settings_json(const snapshot::AllocatorSettings& s) {
  if (!s.present) return nullptr;
  Json divisions = Json::object();
  for (const auto& [bucket, div] : s.roundup_power2_divisions) divisions[std::to_string(bucket)] = div;
  return {{"PYTORCH_CUDA_ALLOC_CONF", s.alloc_conf},
          {"expandable_segments", s.expandable_segments},
          {"max_split_size_bytes", opt_u(s.max_split_size)},
          {"garbage_collection_threshold", s.garbage_collection_threshold},
          {"roundup_power2_divisions", std::move(divisions)}};
}

Json accounting_json(const analysis::Accounting& f) {
  Json j;
  j["regime"] = analysis::to_string(f.regime);
  j["reserved_bytes"] = f.reserved_bytes;
  j["requested_bytes"] = f.requested_bytes;
  j["internal_free_bytes"] = f.internal_free_bytes;
  j["external_free_bytes"] = f.external_free_bytes;
  j["pending_free_bytes"] = f.pending_free_bytes;
  j["releasable_bytes"] = f.releasable_bytes;
  j["stranded_bytes"] = f.stranded_bytes;
  j["largest_free_block_bytes"] = f.largest_free_block_bytes;
  j["releasable_segments"] = f.releasable_segments;
  j["stranding_segments"] = f.stranding_segments;
  j["pinning_blocks"] = f.pinning_blocks;
  j["private_held_bytes"] = f.private_held_bytes;
  j["empty_cache_bytes"] = f.empty_cache_bytes();
  j["empty_cache_pending_bytes"] = f.empty_cache_pending_bytes;
  Json pools = Json::array();
  for (const auto& p : f.pools) {
    Json hist = Json::array();
    for (const auto& b : p.histogram)
      hist.push_back(
          {{"min_bytes", b.min_bytes}, {"max_bytes", b.max_bytes}, {"blocks", b.blocks}, {"bytes", b.bytes}});
    pools.push_back({{"pool", snapshot::to_string(p.pool)},
                     {"pool_id", pool_id_json(p.pool_id)},
                     {"stream", p.stream},
                     {"segments", p.segments},
                     {"reserved_bytes", p.reserved_bytes},
                     {"free_bytes", p.free_bytes},
                     {"free_blocks", p.free_blocks},
                     {"largest_free_block_bytes", p.largest_free_block_bytes},
                     {"releasable_bytes", p.releasable_bytes},
                     {"stranded_bytes", p.stranded_bytes},
                     {"fragmentation", p.fragmentation},
                     {"largest_stranded_block_bytes", p.largest_stranded_block_bytes},
                     {"private_held_bytes", p.private_held_bytes},
                     {"allocated_bytes", p.allocated_bytes},
                     {"blocks", p.blocks},
                     {"histogram", std::move(hist)}});
  }
  j["pools"] = std::move(pools);
  Json sites = Json::array();
  for (const auto& s : f.pinning_sites) sites.push_back(pinning_site_json(s));
  j["pinning_sites"] = std::move(sites);
  return j;
}

Json pinning_site_json(const analysis::PinningSite& s) {
  return {
      {"site", s.site},
      {"stack", s.stack},
      {"callers", s.callers},
      {"live_bytes", s.live_bytes},
      {"stranded_bytes", s.stranded_bytes},
      {"blocks", s.blocks},
      {"segments", s.segments},
      {"example_block",
       {{"address", s.example_address}, {"size_bytes", s.example_size}, {"stranded_bytes", s.example_stranded_bytes}}}};
}

Json fits_json(const analysis::FitsAnswer& a) {
  Json j;
  j["request_bytes"] = a.request_bytes;
  j["rounded_bytes"] = a.rounded_bytes;
  j["pool"] = snapshot::to_string(a.pool);
  j["stream"] = a.stream;
  j["regime"] = a.expandable ? "expandable" : "classic";
  j["max_split_size_bytes"] = opt_u(a.max_split_size);
  j["free_blocks"] = a.free_blocks;
  j["free_bytes"] = a.free_bytes;
  j["largest_free_block_bytes"] = a.largest_free_block_bytes;
  j["pending_free_bytes"] = a.pending_free_bytes;
  j["other_streams_free_bytes"] = a.other_streams_free_bytes;
  j["private_pools_free_bytes"] = a.private_pools_free_bytes;
  j["served_from_cache"] = a.served_from_cache;
  j["block_address"] = opt_u(a.block_address);
  j["block_bytes"] = opt_u(a.block_bytes);
  j["split"] = a.served_from_cache ? Json(a.split) : Json(nullptr);
  j["remainder_bytes"] = a.served_from_cache ? Json(a.remainder_bytes) : Json(nullptr);
  j["oversize_rejected_bytes"] = opt_u(a.oversize_rejected_bytes);
  j["new_segment_bytes"] = a.served_from_cache ? Json(nullptr) : Json(a.new_segment_bytes);
  j["grows_block_address"] = opt_u(a.grows_block_address);
  j["grows_block_bytes"] = opt_u(a.grows_block_bytes);
  return j;
}

}  // namespace memsnap::report::detail
