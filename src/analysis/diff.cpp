// Two snapshots compared device by device; sites matched by file, function and line.
#include "memsnap/analysis/diff.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace memsnap::analysis {

int64_t signed_delta(uint64_t a, uint64_t b) {
  if (b >= a) return b - a > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(b - a);
  return a - b > uint64_t(INT64_MAX) ? INT64_MIN : -int64_t(a - b);
}

int64_t SiteDelta::delta_bytes() const {
  return signed_delta(before_bytes, after_bytes);
}

namespace {

DiffTotals totals(const Accounting& a) {
  return {a.reserved_bytes,      a.allocated_bytes,          a.active_bytes,  a.requested_bytes,
          a.external_free_bytes, a.largest_free_block_bytes, a.segment_count, a.block_count};
}

struct Row {
  SiteDelta delta;
  std::map<std::vector<std::string>, CallerPath> callers;
};

// A site's identity across two snapshots: the full file, function and line of its
// frame, or its text for autograd nodes and operators (which have no frame of the
// user's code). Views into the snapshots' string tables: nothing is copied per stack.
struct SiteKey {
  std::string_view file, function, text;
  int64_t line = 0;
  bool operator<(const SiteKey& o) const {
    return std::tie(file, function, line, text) < std::tie(o.file, o.function, o.line, o.text);
  }
};

SiteKey site_key(const Context& ctx, snapshot::StackId stack) {
  if (auto f = ctx.sites.site_frame(stack)) {
    const snapshot::Frame& fr = ctx.snap.frames[*f];
    return {ctx.snap.strings[fr.filename], ctx.snap.strings[fr.name], {}, fr.line};
  }
  return {{}, {}, ctx.sites.site(stack), 0};
}

std::string capped(std::string_view s) {
  return s.size() <= 1024 ? std::string(s) : std::string(s.substr(0, 1024)) + "...";
}

// Live allocated blocks by site (and by call path within the site).
void collect(const Context& ctx, const snapshot::Device& d, bool after, std::map<SiteKey, Row>& rows) {
  struct PerStack {
    Row* row;
    std::vector<std::string> callers;
  };
  std::unordered_map<uint32_t, PerStack> seen;  // dense stack ids
  for (const auto& b : d.blocks) {
    if (b.state != snapshot::BlockState::ActiveAllocated) continue;
    auto [it, inserted] = seen.try_emplace(b.stack.v);
    if (inserted) {
      SiteKey key = site_key(ctx, b.stack);
      auto [row, fresh] = rows.try_emplace(key);
      if (fresh) {
        row->second.delta.site = ctx.sites.site(b.stack);
        row->second.delta.file = capped(key.file);
        row->second.delta.function = capped(key.function);
        row->second.delta.line = key.line;
      }
      it->second.row = &row->second;
      it->second.callers = ctx.sites.callers(b.stack, 8);
    }
    Row& r = *it->second.row;
    CallerPath& c = r.callers[it->second.callers];
    if (c.path.empty()) c.path = it->second.callers;
    (after ? r.delta.after_bytes : r.delta.before_bytes) += b.size;
    (after ? r.delta.after_allocations : r.delta.before_allocations) += 1;
    (after ? c.after_bytes : c.before_bytes) += b.size;
    (after ? c.after_allocations : c.before_allocations) += 1;
  }
}

std::set<std::pair<uint64_t, uint64_t>> segment_keys(const snapshot::Device& d) {
  std::set<std::pair<uint64_t, uint64_t>> keys;
  for (const auto& s : d.segments) keys.insert({s.address, s.total_size});
  return keys;
}

// Labels are the site text; two sites whose text collides (same base name, line
// and function in different directories) get their parent directories until distinct.
void distinct_labels(std::vector<SiteDelta>& sites) {
  std::map<std::string, std::vector<SiteDelta*>> by_label;
  for (auto& s : sites) by_label[s.site].push_back(&s);
  for (auto& [label, group] : by_label) {
    if (group.size() < 2) continue;
    for (size_t depth = 1; depth < 16; ++depth) {
      std::set<std::string> seen;
      bool unique = true;
      for (SiteDelta* s : group) {
        std::string dir = s->file;
        size_t cut = dir.find_last_of('/');
        std::string prefix;
        for (size_t k = 0; k < depth && cut != std::string::npos && cut > 0; ++k) {
          size_t prev = dir.find_last_of('/', cut - 1);
          prefix =
              dir.substr(prev == std::string::npos ? 0 : prev + 1, cut - (prev == std::string::npos ? 0 : prev + 1)) +
              "/" + prefix;
          cut = prev;
        }
        s->site = prefix + label;
        unique = seen.insert(s->site).second && unique;
      }
      if (unique) break;
    }
  }
}

}  // namespace

std::vector<DeviceDiff> diff_snapshots(const Context& a, const Context& b) {
  std::set<int> indices;
  for (const auto& d : a.snap.devices) indices.insert(d.index);
  for (const auto& d : b.snap.devices) indices.insert(d.index);
  std::vector<DeviceDiff> out;
  for (int idx : indices) {
    DeviceDiff dd;
    dd.device = idx;
    const snapshot::Device* da = a.snap.device(idx);
    const snapshot::Device* db = b.snap.device(idx);
    dd.in_before = da != nullptr;
    dd.in_after = db != nullptr;
    if (da) dd.before = totals(account(a, *da));
    if (db) dd.after = totals(account(b, *db));
    auto ka = da ? segment_keys(*da) : std::set<std::pair<uint64_t, uint64_t>>{};
    auto kb = db ? segment_keys(*db) : std::set<std::pair<uint64_t, uint64_t>>{};
    if (da)
      for (const auto& s : da->segments)
        if (!kb.count({s.address, s.total_size}))
          dd.segments_only_before.push_back({s.address, s.total_size, s.pool, s.stream});
    if (db)
      for (const auto& s : db->segments)
        if (!ka.count({s.address, s.total_size}))
          dd.segments_only_after.push_back({s.address, s.total_size, s.pool, s.stream});
    std::map<SiteKey, Row> rows;
    if (da) collect(a, *da, false, rows);
    if (db) collect(b, *db, true, rows);
    for (auto& [key, r] : rows) {
      for (auto& [path, c] : r.callers) r.delta.callers.push_back(std::move(c));
      std::stable_sort(r.delta.callers.begin(), r.delta.callers.end(), [](const CallerPath& x, const CallerPath& y) {
        uint64_t mx = std::max(x.before_bytes, x.after_bytes), my = std::max(y.before_bytes, y.after_bytes);
        return mx > my;
      });
      r.delta.stack = {r.delta.site};
      if (!r.delta.callers.empty())
        r.delta.stack.insert(r.delta.stack.end(), r.delta.callers.front().path.begin(),
                             r.delta.callers.front().path.end());
      dd.sites.push_back(std::move(r.delta));
    }
    distinct_labels(dd.sites);
    std::stable_sort(dd.sites.begin(), dd.sites.end(), [](const SiteDelta& x, const SiteDelta& y) {
      if (x.change_magnitude() != y.change_magnitude()) return x.change_magnitude() > y.change_magnitude();
      if (x.after_bytes != y.after_bytes) return x.after_bytes > y.after_bytes;
      return x.site < y.site;
    });
    out.push_back(std::move(dd));
  }
  return out;
}

}  // namespace memsnap::analysis
