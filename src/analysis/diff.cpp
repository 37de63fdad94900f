// Two snapshots compared device by device; sites matched by their stack strings.
#include "memsnap/analysis/diff.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "memsnap/analysis/sites.hpp"

namespace memsnap::analysis {

namespace {

struct Side {
  uint64_t bytes = 0, count = 0;
};

// The user's call path of a stack (its frames in the user's code, innermost
// first): what stays the same between two runs of one program, where torch and
// native frames differ with the configuration (autocast, dtype, kernels).
// Stacks without user frames keep their site.
std::vector<std::string> call_path(const snapshot::Snapshot& snap, Sites& sites, snapshot::StackId id) {
  std::vector<std::string> path;
  for (auto f : snap.stacks[id]) {
    const auto& fr = snap.frames[f];
    if (classify_frame(snap.strings[fr.filename]) != FrameKind::User) continue;
    path.push_back(sites.frame_string(f));
  }
  if (path.empty()) path.push_back(sites.site(id));
  return path;
}

// Live allocated blocks by call path.
void collect(const snapshot::Snapshot& snap, const snapshot::Device& d, Sites& sites, bool after,
             std::map<std::vector<std::string>, SiteDelta>& rows) {
  std::unordered_map<uint32_t, std::vector<std::string>> paths;
  for (const auto& b : d.blocks) {
    if (b.state != snapshot::BlockState::ActiveAllocated) continue;
    auto [it, inserted] = paths.try_emplace(b.stack.v);
    if (inserted) it->second = call_path(snap, sites, b.stack);
    const auto& stack = it->second;
    SiteDelta& r = rows[stack];
    if (r.site.empty()) {
      r.site = sites.site(b.stack);
      r.stack = stack;
    }
    (after ? r.after_bytes : r.before_bytes) += b.size;
    (after ? r.after_allocations : r.before_allocations) += 1;
  }
}

std::set<std::pair<uint64_t, uint64_t>> segment_keys(const snapshot::Device& d) {
  std::set<std::pair<uint64_t, uint64_t>> keys;
  for (const auto& s : d.segments) keys.insert({s.address, s.total_size});
  return keys;
}

}  // namespace

std::vector<DeviceDiff> diff_snapshots(const snapshot::Snapshot& a, const snapshot::Snapshot& b) {
  std::set<int> indices;
  for (const auto& d : a.devices) indices.insert(d.index);
  for (const auto& d : b.devices) indices.insert(d.index);
  Sites sa(a), sb(b);
  std::vector<DeviceDiff> out;
  for (int idx : indices) {
    DeviceDiff dd;
    dd.device = idx;
    const snapshot::Device* da = a.device(idx);
    const snapshot::Device* db = b.device(idx);
    dd.in_before = da != nullptr;
    dd.in_after = db != nullptr;
    dd.before.device = dd.after.device = idx;
    if (da) dd.before = summarize(*da);
    if (db) dd.after = summarize(*db);
    auto ka = da ? segment_keys(*da) : std::set<std::pair<uint64_t, uint64_t>>{};
    auto kb = db ? segment_keys(*db) : std::set<std::pair<uint64_t, uint64_t>>{};
    if (da)
      for (const auto& s : da->segments)
        if (!kb.count({s.address, s.total_size})) dd.segments_only_before.push_back({s.address, s.total_size, s.pool, s.stream});
    if (db)
      for (const auto& s : db->segments)
        if (!ka.count({s.address, s.total_size})) dd.segments_only_after.push_back({s.address, s.total_size, s.pool, s.stream});
    std::map<std::vector<std::string>, SiteDelta> rows;
    if (da) collect(a, *da, sa, false, rows);
    if (db) collect(b, *db, sb, true, rows);
    for (auto& [key, r] : rows) dd.sites.push_back(std::move(r));
    std::stable_sort(dd.sites.begin(), dd.sites.end(), [](const SiteDelta& x, const SiteDelta& y) {
      uint64_t ax = uint64_t(std::llabs(x.delta_bytes())), ay = uint64_t(std::llabs(y.delta_bytes()));
      if (ax != ay) return ax > ay;
      if (x.after_bytes != y.after_bytes) return x.after_bytes > y.after_bytes;
      return x.site < y.site;
    });
    out.push_back(std::move(dd));
  }
  return out;
}

}  // namespace memsnap::analysis
