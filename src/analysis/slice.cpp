// slice(): one window per device, its end state replayed, the rest of the model copied.
#include "memsnap/analysis/slice.hpp"

#include <algorithm>
#include <string>

#include "memsnap/analysis/events.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/util/error.hpp"

namespace memsnap::analysis {

using snapshot::Device;
using snapshot::Snapshot;

namespace {

std::string num(uint64_t v) {
  return std::to_string(v);
}

// Events [first, last] of one device; `none` when the window holds no event (then the state
// is the one before `first`, i.e. after first - 1, or the start when first == 0).
struct Window {
  bool none = false;
  uint32_t first = 0;
  uint32_t last = 0;
  std::optional<int64_t> time_lo, time_hi;  // annotations kept between these (inclusive)
};

Window resolve(const SliceOptions& o, const Device& d) {
  const auto& tr = d.trace;
  const uint64_t n = tr.size();
  std::string dev = "device " + std::to_string(d.index);
  Window w;
  if (o.last) {
    w.first = static_cast<uint32_t>(n - std::min<uint64_t>(*o.last, n));
    w.last = static_cast<uint32_t>(n - 1);
  } else if (o.from || o.to) {
    if (n == 0) throw UsageError("--from/--to: " + dev + " has no trace entries");
    uint64_t from = o.from.value_or(0), to = o.to.value_or(n - 1);
    if (from >= n || to >= n)
      throw UsageError("--" + std::string(from >= n ? "from " + num(from) : "to " + num(to)) + ": " +
                       event_index_problem(d, std::max(from, to)));
    if (from > to) throw UsageError("--from " + num(from) + " is after --to " + num(to));
    w.first = static_cast<uint32_t>(from);
    w.last = static_cast<uint32_t>(to);
  } else {  // a time window
    int64_t lo = o.from_time.value_or(INT64_MIN), hi = o.to_time.value_or(INT64_MAX);
    if (lo > hi) throw UsageError("--from-time " + std::to_string(lo) + " is after --to-time " + std::to_string(hi));
    bool any_time = false;
    std::optional<uint32_t> first, last;
    for (uint32_t i = 0; i < n; ++i) {
      if (!tr[i].has_time()) continue;
      any_time = true;
      if (!first && tr[i].time_us >= lo) first = i;
      if (tr[i].time_us <= hi) last = i;
    }
    if (n > 0 && !any_time)
      throw UsageError("--from-time/--to-time: " + dev + "'s trace has no timestamps (use --from/--to or --last)");
    w.time_lo = lo;
    w.time_hi = hi;
    if (!first || !last || *first > *last) {
      // No event inside: the state at the window's end is the one after the last event at
      // or before `hi` (before every event when there is none).
      w.none = true;
      w.first = last ? *last + 1 : 0;
      return w;
    }
    w.first = *first;
    w.last = *last;
    return w;
  }
  if (n == 0) {
    w.none = true;
    w.first = 0;
    return w;
  }
  // Index windows: annotations between the kept events' times.
  for (uint32_t i = w.first; i <= w.last; ++i) {
    if (!tr[i].has_time()) continue;
    w.time_lo = std::min(w.time_lo.value_or(INT64_MAX), tr[i].time_us);
    w.time_hi = std::max(w.time_hi.value_or(INT64_MIN), tr[i].time_us);
  }
  return w;
}

void check_options(const SliceOptions& o, const Snapshot& snap) {
  if (o.device && !snap.device(*o.device))
    throw UsageError("--device " + std::to_string(*o.device) + ": the snapshot has no such device");
  int kinds = (o.last ? 1 : 0) + ((o.from || o.to) ? 1 : 0) + ((o.from_time || o.to_time) ? 1 : 0);
  if (kinds > 1)
    throw UsageError("--last, --from/--to and --from-time/--to-time exclude each other: choose one window");
  if (o.last && *o.last == 0) throw UsageError("--last 0: a window holds at least one event");
  if ((o.from || o.to) && !o.device) {
    size_t traced = 0;
    for (const auto& d : snap.devices) traced += !d.trace.empty();
    if (traced > 1)
      throw UsageError("--from/--to: trace indices are per device and " + std::to_string(traced) +
                       " devices have traces: choose one with --device");
  }
}

}  // namespace

Snapshot copy_without_devices(const Snapshot& snap) {
  Snapshot out;
  out.form = snap.form;
  for (uint32_t i = 1; i < snap.strings.size(); ++i) out.strings.intern(snap.strings[snapshot::StrId{i}]);
  out.frames = snap.frames;
  out.stacks = snap.stacks;
  out.settings = snap.settings;
  out.legacy_history = snap.legacy_history;
  return out;
}

Snapshot slice(const Snapshot& snap, const SliceOptions& o) {
  check_options(o, snap);
  Snapshot out = copy_without_devices(snap);
  out.form = snapshot::Form::Dict;
  out.legacy_history = false;  // written back as frames + requested_size

  std::vector<Window> windows;
  bool any_event = false, any_traced = false;
  const Context ctx(snap);
  for (const auto& d : snap.devices) {
    if (o.device && d.index != *o.device) continue;
    if (!o.has_window()) {
      out.devices.push_back(d);
      continue;
    }
    Window w = resolve(o, d);
    any_traced = any_traced || !d.trace.empty();
    any_event = any_event || !w.none;
    const uint32_t n = static_cast<uint32_t>(d.trace.size());
    // The state after the window's last event (or before its first, for an empty window).
    bool at_end = n == 0 || (!w.none && w.last == n - 1) || (w.none && w.first >= n);
    if (at_end) {
      out.devices.push_back(d);  // the dumped state: exact
    } else {
      Replay replay(ctx, d);
      ReplayedState st = w.none ? (w.first == 0 ? replay.state_at_start() : replay.state_after(w.first - 1))
                                : replay.state_after(w.last);
      out.devices.push_back(std::move(st.device));
      if (!replay.consistent()) {
        const auto& m = *replay.first_mismatch();
        out.warnings.push_back("device " + std::to_string(d.index) +
                               ": the trace does not replay consistently (event " + std::to_string(m.event) + ": " +
                               m.what + "); the cut state is the replay's best estimate");
      }
      if (uint64_t est = st.estimated_blocks; est > 0)
        out.warnings.push_back("device " + std::to_string(d.index) + ": " + std::to_string(est) +
                               (est == 1 ? " block live at the window's end is sized from its request (its exact "
                                           "size is not in the file)"
                                         : " blocks live at the window's end are sized from their requests (their "
                                           "exact sizes are not in the file)"));
    }
    Device& nd = out.devices.back();
    nd.trace.clear();
    if (!w.none) {
      nd.trace.reserve(w.last + 1 - w.first);
      for (size_t i = w.first; i <= w.last; ++i) nd.trace.push_back(d.trace[i]);
    }
    windows.push_back(w);
  }
  if (o.has_window() && (o.from_time || o.to_time) && any_traced && !any_event)
    throw UsageError("--from-time/--to-time: no trace entry lies in that window on " +
                     std::string(o.device ? "device " + std::to_string(*o.device) : "any device"));

  for (const auto& a : snap.annotations) {
    if (o.device && a.device != *o.device) continue;
    if (o.has_window()) {
      // out.devices is sorted by index, as the model's devices are
      auto it = std::lower_bound(out.devices.begin(), out.devices.end(), a.device,
                                 [](const Device& d, int index) { return d.index < index; });
      if (it == out.devices.end() || it->index != a.device) continue;
      const Window& w = windows[static_cast<size_t>(it - out.devices.begin())];
      if (a.time_us == snapshot::TraceEvent::kNoTime || !w.time_lo || !w.time_hi) continue;
      if (a.time_us < *w.time_lo || a.time_us > *w.time_hi) continue;
    }
    out.annotations.push_back(a);
  }
  return out;
}

}  // namespace memsnap::analysis
