// Two snapshots compared device by device; sites matched by file, function and line.
#include "memsnap/analysis/diff.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "memsnap/analysis/peak.hpp"
#include "memsnap/analysis/phases.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/roles.hpp"
#include "memsnap/util/canonical_text.hpp"

namespace memsnap::analysis {

int64_t signed_delta(uint64_t a, uint64_t b) {
  if (b >= a) return b - a > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(b - a);
  return a - b > uint64_t(INT64_MAX) ? INT64_MIN : -int64_t(a - b);
}

int64_t SiteDelta::delta_bytes() const {
  return signed_delta(before_bytes, after_bytes);
}

bool DeviceDiff::peak_moved_phase() const {
  const auto& a = roles_before.peak;
  const auto& b = roles_after.peak;
  return a && b && a->phase && b->phase && *a->phase != *b->phase;
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
  // Equal strings of the two snapshots are one view (CanonicalText): compared unread.
  bool operator<(const SiteKey& o) const {
    if (int c = compare_text(file, o.file)) return c < 0;
    if (int c = compare_text(function, o.function)) return c < 0;
    if (line != o.line) return line < o.line;
    return compare_text(text, o.text) < 0;
  }
};

SiteKey site_key(const Context& ctx, snapshot::StackId stack, CanonicalText& canonical) {
  if (auto f = ctx.sites.site_frame(stack)) {
    const snapshot::Frame& fr = ctx.snap.frames[*f];
    return {canonical(ctx.snap.strings[fr.filename]), canonical(ctx.snap.strings[fr.name]), {}, fr.line};
  }
  return {{}, {}, canonical(ctx.sites.site(stack)), 0};
}

std::string capped(std::string_view s) {
  return s.size() <= 1024 ? std::string(s) : std::string(s.substr(0, 1024)) + "...";
}

// The call paths of one side's stacks, kept across the dump and the peak state
// (a frame's text can be long: each is built once).
using CallerCache = std::unordered_map<uint32_t, std::vector<std::string>>;

// The one key of the gradients autograd nodes made, whichever node made them.
constexpr std::string_view kDiffGradientsKey = Sites::kGradients;

// Live allocated blocks by site (and by call path within the site). A block whose address is
// in `gradients` (sorted: the state's blocks whose role is gradient) and whose site is an
// autograd node or operator (no frame of the user's code) goes to the one gradients row.
void collect(const Context& ctx, const snapshot::Device& d, bool after, std::map<SiteKey, Row>& rows,
             CallerCache& cache, CanonicalText& canonical, const std::vector<uint64_t>& gradients) {
  struct PerStack {
    Row* row;
    const std::vector<std::string>* callers;
  };
  std::unordered_map<uint32_t, PerStack> seen, seen_gradients;  // dense stack ids
  for (const auto& b : d.blocks) {
    if (b.state != snapshot::BlockState::ActiveAllocated) continue;
    const bool gradient =
        std::binary_search(gradients.begin(), gradients.end(), b.address) && !ctx.sites.site_frame(b.stack);
    auto [it, inserted] = (gradient ? seen_gradients : seen).try_emplace(b.stack.v);
    if (inserted) {
      SiteKey key = gradient ? SiteKey{{}, {}, kDiffGradientsKey, 0} : site_key(ctx, b.stack, canonical);
      auto [row, fresh] = rows.try_emplace(key);
      if (fresh) {
        row->second.delta.site = gradient ? std::string(kDiffGradientsKey) : ctx.sites.site(b.stack);
        row->second.delta.file = capped(key.file);
        row->second.delta.function = capped(key.function);
        row->second.delta.line = key.line;
      }
      if (gradient) row->second.delta.role = Role::Gradient;
      it->second.row = &row->second;
      auto cached = cache.find(b.stack.v);
      if (cached == cache.end()) cached = cache.emplace(b.stack.v, ctx.sites.callers(b.stack, 8)).first;
      it->second.callers = &cached->second;
    }
    Row& r = *it->second.row;
    CallerPath& c = r.callers[*it->second.callers];
    if (c.path.empty()) c.path = *it->second.callers;
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

namespace {

// The rows as site deltas: callers largest first, labels distinct, largest change first.
std::vector<SiteDelta> site_deltas(std::map<SiteKey, Row>& rows) {
  std::vector<SiteDelta> sites;
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
    sites.push_back(std::move(r.delta));
  }
  distinct_labels(sites);
  std::stable_sort(sites.begin(), sites.end(), [](const SiteDelta& x, const SiteDelta& y) {
    if (x.change_magnitude() != y.change_magnitude()) return x.change_magnitude() > y.change_magnitude();
    if (x.after_bytes != y.after_bytes) return x.after_bytes > y.after_bytes;
    return x.site < y.site;
  });
  return sites;
}

// One side's peaks, the state at its allocated peak and its roles, from a replay of its trace
// (the roles of a side without one from its dumped stacks alone, as analyze does).
struct SideState {
  DiffPeak peak;
  std::optional<snapshot::Device> state;
  DiffRoles roles;
  std::vector<uint64_t> peak_gradients, dump_gradients;  // sorted addresses of gradient blocks
};

// Roles add up to the state's allocated bytes (analyze checks it too): a shortfall is unknown.
void top_up(RoleState& s, uint64_t allocated) {
  uint64_t total = s.by_role.total();
  if (total < allocated && s.by_role.bytes.size() > size_t(Role::Unknown))
    s.by_role.bytes[size_t(Role::Unknown)] += allocated - total;
}

// The addresses of the gradient blocks live right after `event` (at the window's start when
// none), in the order BlockRoles::at counts them.
std::vector<uint64_t> live_gradients(const Replay& replay, const BlockRoles& roles, std::optional<uint32_t> event) {
  std::vector<uint64_t> out;
  const uint32_t n = static_cast<uint32_t>(replay.ranges().size()), first = replay.first_window_range();
  for (uint32_t id = 0; id < n; ++id) {
    uint32_t begin = replay.begin_of(id), freed = replay.freed_of(id);
    if (!event && id >= first) break;
    if (event && id >= first && begin > *event) break;
    if (replay.pending_at_start_of(id) || (event && freed != kNever && freed <= *event)) continue;
    if (roles.of(id) == RoleId(Role::Gradient)) out.push_back(replay.range(id).addr);
  }
  std::sort(out.begin(), out.end());
  return out;
}

SideState side_state(const Context& ctx, const RoleTable& table, const snapshot::Device* d) {
  SideState out;
  out.roles.dump.by_role.bytes.assign(table.size(), 0);
  if (!d) {
    out.roles.peak = out.roles.dump;
    return out;
  }
  const uint64_t allocated = account(ctx, *d).allocated_bytes;
  if (d->trace.empty()) {
    out.roles.dump = roles_of_state(table, *d);
    for (const auto& b : d->blocks)
      if (b.state == snapshot::BlockState::ActiveAllocated && table.stack_role(b.stack) == RoleId(Role::Gradient))
        out.dump_gradients.push_back(b.address);
    std::sort(out.dump_gradients.begin(), out.dump_gradients.end());
    top_up(out.roles.dump, allocated);
    return out;
  }
  Replay replay(ctx, *d);
  Phases phases(ctx, table.stacks(), *d, &replay);
  BlockRoles roles(table, replay, phases);
  const uint32_t last = static_cast<uint32_t>(d->trace.size() - 1);
  out.roles.dump = roles.at(last);
  out.roles.dump.phase.reset();
  top_up(out.roles.dump, allocated);
  out.dump_gradients = live_gradients(replay, roles, last);
  Peaks p = find_peaks(ctx, replay, 0);
  if (!p.allocated) return out;
  out.peak.known = true;
  out.peak.allocated_bytes = p.allocated->allocated_bytes;
  out.peak.allocated_event = p.allocated->event_index;
  out.peak.allocated_at_window_start = p.allocated->at_window_start;
  if (p.reserved) {
    out.peak.reserved_bytes = p.reserved->bytes;
    out.peak.reserved_event = p.reserved->event_index;
    out.peak.reserved_at_window_start = p.reserved->at_window_start;
  }
  std::optional<uint32_t> at;
  if (!p.allocated->at_window_start) at = p.allocated->event_index;
  out.roles.peak = at ? roles.at(*at) : roles.at_start();
  if (!ctx.snap.stacks.has_frames()) out.roles.peak->phase.reset();  // nothing says what ran
  top_up(*out.roles.peak, p.allocated->allocated_bytes);
  out.peak_gradients = live_gradients(replay, roles, at);
  out.state = std::move(at ? replay.state_after(*at) : replay.state_at_start()).device;
  return out;
}

void segments_one_side(const snapshot::Device* da, const snapshot::Device* db, DeviceDiff& dd) {
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
}

}  // namespace

const char* to_string(ProcessRelation r) {
  switch (r) {
    case ProcessRelation::Same: return "same";
    case ProcessRelation::Different: return "different";
    case ProcessRelation::Unknown: return "unknown";
  }
  return "?";
}

const char* to_string(ProcessEvidence e) {
  switch (e) {
    case ProcessEvidence::SharedEvents: return "shared_events";
    case ProcessEvidence::OverlapWithoutSharedEvents: return "overlap_without_shared_events";
    case ProcessEvidence::DisjointWindows: return "disjoint_windows";
    case ProcessEvidence::NoTimeStamps: return "no_time_stamps";
    case ProcessEvidence::NoTrace: return "no_trace";
  }
  return "?";
}

namespace {

// |x - y| <= kSameEventMicros without overflow (time stamps come from the file).
bool close_in_time(int64_t x, int64_t y) {
  uint64_t d = x > y ? uint64_t(x) - uint64_t(y) : uint64_t(y) - uint64_t(x);
  return d <= uint64_t(kSameEventMicros);
}

bool same_event(const snapshot::TraceEvent& x, const snapshot::TraceEvent& y) {
  return x.action == y.action && x.addr == y.addr && x.size == y.size && x.stream == y.stream && x.has_time() &&
         y.has_time() && close_in_time(x.time_us, y.time_us);
}

std::optional<int64_t> last_time(const snapshot::Trace& t) {
  for (size_t i = t.size(); i-- > 0;)
    if (auto e = t[i]; e.has_time()) return e.time_us;
  return std::nullopt;
}

std::optional<int64_t> first_time(const snapshot::Trace& t) {
  for (const auto& e : t)
    if (e.has_time()) return e.time_us;
  return std::nullopt;
}

// The rule of match_processes on one device (see diff.hpp).
std::pair<ProcessRelation, ProcessEvidence> match_device(const snapshot::Trace& a, const snapshot::Trace& b) {
  if (a.empty() || b.empty()) return {ProcessRelation::Unknown, ProcessEvidence::NoTrace};
  auto la = last_time(a), lb = last_time(b);
  if (!la || !lb) return {ProcessRelation::Unknown, ProcessEvidence::NoTimeStamps};
  const snapshot::Trace& e = *la <= *lb ? a : b;  // ends first
  const snapshot::Trace& l = &e == &a ? b : a;
  const size_t k = std::min(kSameEventRun, e.size()), start = e.size() - k;
  const snapshot::TraceEvent first = e[start];
  if (!first.has_time()) return {ProcessRelation::Unknown, ProcessEvidence::NoTimeStamps};
  for (size_t j = 0; j + k <= l.size(); ++j) {
    if (l.action_at(j) != first.action || l.addr_at(j) != first.addr) continue;
    bool all = true;
    for (size_t m = 0; m < k && all; ++m) all = same_event(e[start + m], l[j + m]);
    if (all) return {ProcessRelation::Same, ProcessEvidence::SharedEvents};
  }
  auto fl = first_time(l);
  if (fl && *fl < first.time_us && !close_in_time(*fl, first.time_us))
    return {ProcessRelation::Different, ProcessEvidence::OverlapWithoutSharedEvents};
  return {ProcessRelation::Unknown, ProcessEvidence::DisjointWindows};
}

}  // namespace

ProcessMatch match_processes(const snapshot::Snapshot& a, const snapshot::Snapshot& b) {
  ProcessMatch out;
  for (const auto& da : a.devices) {
    const snapshot::Device* db = b.device(da.index);
    if (!db) continue;
    auto [relation, evidence] = match_device(da.trace, db->trace);
    if (relation == ProcessRelation::Same) return {relation, evidence, da.index};
    bool better = relation == ProcessRelation::Different
                      ? out.relation != ProcessRelation::Different
                      : out.relation == ProcessRelation::Unknown && evidence < out.evidence;
    if (better) out = {relation, evidence, da.index};
  }
  return out;
}

std::vector<DeviceDiff> diff_snapshots(const Context& a, const Context& b) {
  return diff_snapshots(a, b, match_processes(a.snap, b.snap));
}

std::vector<DeviceDiff> diff_snapshots(const Context& a, const Context& b, const ProcessMatch& process) {
  std::set<int> indices;
  for (const auto& d : a.snap.devices) indices.insert(d.index);
  for (const auto& d : b.snap.devices) indices.insert(d.index);
  std::vector<DeviceDiff> out;
  // The built-in rules alone: both sides name their roles alike.
  const RoleTable table_a(a, RoleRules{}), table_b(b, RoleRules{});
  for (int idx : indices) {
    DeviceDiff dd;
    dd.device = idx;
    const snapshot::Device* da = a.snap.device(idx);
    const snapshot::Device* db = b.snap.device(idx);
    dd.in_before = da != nullptr;
    dd.in_after = db != nullptr;
    if (da) dd.before = totals(account(a, *da));
    if (db) dd.after = totals(account(b, *db));
    if (process.segments_by_address()) segments_one_side(da, db, dd);
    SideState pa = side_state(a, table_a, da), pb = side_state(b, table_b, db);
    dd.peak_before = pa.peak;
    dd.peak_after = pb.peak;
    dd.role_names = table_a.names();
    dd.roles_before = std::move(pa.roles);
    dd.roles_after = std::move(pb.roles);
    // A side whose peak is unknown has no roles at it (a device a file lacks has zeros).
    if (da && !pa.peak.known) dd.roles_before.peak.reset();
    if (db && !pb.peak.known) dd.roles_after.peak.reset();
    CallerCache callers_a, callers_b;
    std::map<SiteKey, Row> rows;
    CanonicalText canonical;
    if (da) collect(a, *da, false, rows, callers_a, canonical, pa.dump_gradients);
    if (db) collect(b, *db, true, rows, callers_b, canonical, pb.dump_gradients);
    dd.sites = site_deltas(rows);
    // Sites at the peaks only when both are known (a device a file lacks has none live).
    if ((!da || pa.state) && (!db || pb.state)) {
      std::map<SiteKey, Row> peak_rows;
      if (pa.state) collect(a, *pa.state, false, peak_rows, callers_a, canonical, pa.peak_gradients);
      if (pb.state) collect(b, *pb.state, true, peak_rows, callers_b, canonical, pb.peak_gradients);
      dd.peak_sites = site_deltas(peak_rows);
    }
    out.push_back(std::move(dd));
  }
  return out;
}

}  // namespace memsnap::analysis
