// Iterations from annotations, markers or a repeating allocation sequence, claimed
// only with the evidence the header lists; structure otherwise.
#include "memsnap/analysis/iterations.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "memsnap/util/flat_map.hpp"
#include "memsnap/util/hash.hpp"
#include "memsnap/util/pod_buffer.hpp"

namespace memsnap::analysis {

using snapshot::Action;
using snapshot::StackId;

namespace {

template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

/// The first element of the sorted span from `from` on for which `before` is false (or
/// the span's end): an exponential search from `from`, so it costs the log of the
/// distance to the answer, not of the span's length.
template <class T, class Before>
size_t gallop(std::span<const T> sorted, size_t from, Before before) {
  size_t lo = from, step = 1;
  while (sorted.size() - lo >= step && before(sorted[lo + step - 1])) lo += step, step *= 2;
  auto end = sorted.begin() + static_cast<ptrdiff_t>(std::min(lo + step, sorted.size()));
  return static_cast<size_t>(std::partition_point(sorted.begin() + static_cast<ptrdiff_t>(lo), end, before) -
                             sorted.begin());
}

/// The allocations of the window, in event order: its alloc events, each with a symbol
/// numbering its stack, or its size for allocations without one, in order of first use.
/// Four bytes each. Built from the trace alone (see TracePeriods); once attached to the
/// replay, which makes one range of each alloc event, in order, after the ranges live at
/// the start, an allocation's range and event are read from it. Stack ids are dense, so
/// a stack's symbol is found by index; only allocations without a stack go through a
/// hash map.
class Allocs {
 public:
  explicit Allocs(const snapshot::Trace& trace) {
    size_t count = 0;
    for (Action a : trace.actions()) count += a == Action::Alloc;
    symbol_.reserve(count);
    std::vector<uint32_t> of_stack;  // stack id -> symbol + 1, or 0
    FlatMap64<uint32_t> of_size;     // requested bytes -> symbol
    uint32_t next = 0;
    std::span<const Action> actions = trace.actions();
    for (size_t i = 0; i < actions.size(); ++i) {
      if (actions[i] != Action::Alloc) continue;
      StackId st = trace.stack_at(i);
      if (st.v != 0) {
        ++with_stack_;
        if (st.v >= of_stack.size()) of_stack.resize(std::max<size_t>(size_t{st.v} + 1, of_stack.size() * 2), 0);
        uint32_t& sym = of_stack[st.v];
        if (sym == 0) sym = ++next;
        symbol_.push_back(sym - 1);
      } else {
        auto [sym, added] = of_size.try_emplace(trace.size_at(i), next);
        next += added;
        symbol_.push_back(*sym);
      }
    }
  }
  /// From here on, range() and event() read the replay of the same trace.
  void attach(const Replay& replay) {
    if (replay.ranges().size() - replay.first_window_range() != symbol_.size())
      throw std::logic_error("iterations: the replay has " +
                             std::to_string(replay.ranges().size() - replay.first_window_range()) +
                             " window ranges for " + std::to_string(symbol_.size()) + " alloc events");
    replay_ = &replay;
    first_ = replay.first_window_range();
  }
  size_t size() const { return symbol_.size(); }
  size_t with_stack() const { return with_stack_; }
  uint32_t symbol(size_t j) const { return symbol_[j]; }
  uint32_t range(size_t j) const { return first_ + static_cast<uint32_t>(j); }
  uint32_t event(size_t j) const { return replay_->begin_of(range(j)); }
  std::span<const uint32_t> symbols() const { return {symbol_.data(), symbol_.size()}; }

 private:
  const Replay* replay_ = nullptr;
  uint32_t first_ = 0;
  size_t with_stack_ = 0;
  util::PodBuffer<uint32_t> symbol_;  // huge pages, not zero-filled: first touches cost (see pod_buffer.hpp)
};

// Where each symbol is allocated: allocation indices grouped by symbol (in order of
// first use), ascending within a symbol, in one array. Built in two linear passes
// with no per-symbol vectors: a trace without stacks has a few symbols (sizes) with
// hundreds of thousands of allocations each, whose vectors' regrowth was a tenth of
// `analyze`'s time on such a file (perf: memmove and page faults in detect_repeat).
class Occurrences {
 public:
  explicit Occurrences(const Allocs& allocs) : allocs_(allocs) {
    std::vector<uint32_t> count;
    for (uint32_t k : allocs.symbols()) {
      if (k >= count.size()) count.resize(k + 1, 0);
      ++count[k];
    }
    start_.resize(count.size() + 1, 0);
    for (size_t k = 0; k < count.size(); ++k) start_[k + 1] = start_[k] + count[k];
    pos_.resize_uninitialized(allocs.size());  // every slot is written below
    rank_.resize_uninitialized(allocs.size());
    std::vector<uint32_t> fill(start_.begin(), start_.end() - 1);
    for (size_t i = 0; i < allocs.size(); ++i) {
      uint32_t k = allocs.symbol(i);
      rank_[i] = fill[k] - start_[k];
      pos_[fill[k]++] = static_cast<uint32_t>(i);
    }
  }
  size_t symbols() const { return start_.size() - 1; }
  /// The allocation indices of symbol k, ascending.
  std::span<const uint32_t> of(size_t k) const { return {pos_.data() + start_[k], start_[k + 1] - start_[k]}; }
  /// Those of the symbol of allocation i.
  std::span<const uint32_t> of_alloc(size_t i) const { return of(allocs_.symbol(i)); }
  /// Allocation i's symbol's allocations from i itself on (i first), ascending.
  std::span<const uint32_t> from_alloc(size_t i) const { return of_alloc(i).subspan(rank_[i]); }

 private:
  const Allocs& allocs_;
  std::vector<uint32_t> start_;  // per symbol: where its indices begin in pos_
  util::PodBuffer<uint32_t> pos_;
  util::PodBuffer<uint32_t> rank_;  // per allocation: its place in its symbol's list
};

// How periodic the allocation sequence is with period p: the share of
// allocations whose stack is allocated again about one period later (within a
// tenth of it, so steps of slightly different length still match), over the
// best suffix of the window spanning at least three periods. Evaluated on at
// most 20000 evenly spread allocations.
struct Periodicity {
  double ratio = 0;
  size_t steady_from = 0;  // allocation index where the periodic part starts
};

// One candidate period's samples: sample k is allocation k * stride, and hit[k] says
// whether its symbol comes again about p later.
struct Sampled {
  size_t p = 0, slack = 0, limit = 0, stride = 1;
  std::vector<uint8_t> hit;
};

// `suffix` is working space, kept from one candidate to the next: fresh arrays were
// mapped and page-faulted anew for each (perf: a fifth of a 114 MB analyze's faults).
Periodicity score(const Sampled& c, size_t n, std::vector<size_t>& suffix) {
  Periodicity out;
  const auto& hits = c.hit;
  suffix.assign(hits.size() + 1, 0);
  for (size_t k = hits.size(); k-- > 0;) suffix[k] = suffix[k + 1] + hits[k];
  std::vector<std::pair<size_t, double>> starts;  // (position, ratio from there on)
  // Sixteen evenly spaced starts; a short window (three or four periods after a warm-up)
  // tries every sample, so the periodic part is not missed between two coarse starts.
  const size_t parts = hits.size() <= 256 ? hits.size() : 16;
  for (size_t part = 0; part < parts; ++part) {
    size_t k = hits.size() * part / parts;
    // At least three periods from the start on; a period of a quarter of the window or more
    // (three or four steps) needs two: three steps whose first differs (optimizer state made
    // in step one) leave two alike.
    const size_t need = c.p * 4 >= n ? 2 * c.p : 3 * c.p;
    if (k >= hits.size() || n - k * c.stride < need) break;
    starts.emplace_back(k * c.stride, double(suffix[k]) / double(hits.size() - k));
    out.ratio = std::max(out.ratio, starts.back().second);
  }
  for (auto [pos, r] : starts)  // the earliest start that is nearly as periodic as the best one
    if (r >= out.ratio - 0.03) {
      out.steady_from = pos;
      break;
    }
  return out;
}

// Every candidate period's periodicity, in the candidates' order. The candidates that
// sample with the same stride share one walk over the samples, smallest period first:
// each sample's list of its symbol's allocations is found once, and each period's search
// in it starts where the smaller period's ended (its target is no earlier). Scoring one
// period at a time found the list again for each, a cache miss per sample and period
// (perf: periodicity() was a third of the iteration search on the 114 MB bench file).
std::vector<Periodicity> periodicities(const Allocs& a, const Occurrences& occurrences, const std::vector<size_t>& ps) {
  const size_t n = a.size();
  std::vector<Sampled> c(ps.size());
  std::vector<size_t> order;  // the candidates with at least three periods, by (stride, p)
  for (size_t j = 0; j < ps.size(); ++j) {
    size_t p = ps[j];
    c[j].p = p;
    if (n < 3 * p) continue;
    c[j].slack = std::max<size_t>(1, p / 10);
    c[j].limit = n - p;
    c[j].stride = std::max<size_t>(1, c[j].limit / 20000);
    c[j].hit.reserve((c[j].limit + c[j].stride - 1) / c[j].stride);
    order.push_back(j);
  }
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return c[x].stride != c[y].stride ? c[x].stride < c[y].stride : c[x].p < c[y].p;
  });
  for (size_t g = 0; g < order.size();) {
    size_t h = g;
    size_t stride = c[order[g]].stride, limit = 0;
    while (h < order.size() && c[order[h]].stride == stride) limit = std::max(limit, c[order[h++]].limit);
    for (size_t i = 0; i < limit; i += stride) {
      std::span<const uint32_t> occ = occurrences.from_alloc(i);  // occ[0] == i
      size_t k = 0, last_target = 0;
      for (size_t m = g; m < h; ++m) {
        Sampled& s = c[order[m]];
        if (i >= s.limit) continue;
        size_t target = i + s.p - std::min(s.slack, s.p - 1);  // > i
        if (target < last_target) k = 0;                       // (p - slack does not fall as p grows: a guard)
        last_target = target;
        k = gallop(occ, k, [&](uint32_t j) { return j < target; });
        s.hit.push_back(k < occ.size() && occ[k] <= i + s.p + s.slack);
      }
    }
    g = h;
  }
  std::vector<Periodicity> out(ps.size());
  std::vector<size_t> suffix;
  for (size_t j : order) out[j] = score(c[j], n, suffix);
  return out;
}

struct Repeat {
  size_t period = 0;       // allocations per repetition
  size_t steady_from = 0;  // allocation index
  double ratio = 0;
  std::vector<uint32_t> boundaries;  // event indices
};

// Candidate periods: the most frequent gaps between consecutive allocations of a
// stack, and the most common per-stack median gaps (a stack allocated once per
// step votes for the step even when per-layer stacks dominate the raw gaps).
std::vector<size_t> candidate_periods(const Occurrences& occurrences, size_t n) {
  FlatMap64<size_t> gaps, medians;  // gap -> count: one increment per allocation, no node allocations
  std::vector<size_t> g;            // one symbol's gaps (reused)
  for (size_t sym = 0; sym < occurrences.symbols(); ++sym) {
    std::span<const uint32_t> occ = occurrences.of(sym);
    if (occ.size() < 2) continue;
    g.clear();
    for (size_t k = 1; k < occ.size(); ++k) {
      size_t d = occ[k] - occ[k - 1];
      if (d >= 2 && d <= n / 2) ++*gaps.try_emplace(d, 0).first, g.push_back(d);
    }
    if (g.size() >= 2) ++*medians.try_emplace(median(g), 0).first;
  }
  auto top = [](const FlatMap64<size_t>& m, size_t k) {
    std::vector<std::pair<size_t, size_t>> v;  // (gap, count)
    v.reserve(m.size());
    m.for_each([&](uint64_t gap, size_t count) { v.emplace_back(gap, count); });
    std::sort(v.begin(), v.end(),
              [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    if (v.size() > k) v.resize(k);
    return v;
  };
  std::vector<size_t> out;
  for (auto& c : top(gaps, 32)) out.push_back(c.first);
  for (auto& c : top(medians, 32)) out.push_back(c.first);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The repetitions start at a stack allocated once per period (robust to steps of
// slightly different length), the one met when memory is lowest: the start of a
// step, after the previous one freed its activations. Judged on the steady part;
// the anchor's earlier occurrences still open repetitions.
std::vector<uint32_t> anchor_boundaries(const Allocs& allocs, const Occurrences& occurrences, const Replay& replay,
                                        const Repeat& rep) {
  const size_t n = allocs.size();
  double expected = double(n - rep.steady_from) / double(rep.period);
  std::optional<std::span<const uint32_t>> anchor;
  double lowest = 0;
  for (size_t sym = 0; sym < occurrences.symbols(); ++sym) {
    std::span<const uint32_t> occ = occurrences.of(sym);
    auto first = std::lower_bound(occ.begin(), occ.end(), rep.steady_from);
    size_t count = size_t(occ.end() - first);
    if (count < 2 || double(count) < 0.8 * expected || double(count) > 1.2 * expected) continue;
    size_t regular = 0;
    for (auto k = first + 1; k != occ.end(); ++k) {
      size_t g = *k - *(k - 1);
      regular += g * 10 >= rep.period * 7 && g * 10 <= rep.period * 13;
    }
    if (regular * 10 < (count - 1) * 9) continue;
    double mean = 0;
    for (size_t i : occ) mean += double(replay.allocated_before_of(allocs.range(i)));
    mean /= double(occ.size());
    if (!anchor || mean < lowest || (mean == lowest && occ.front() < anchor->front())) anchor = occ, lowest = mean;
  }
  std::vector<uint32_t> out;
  if (anchor) {
    for (size_t i : *anchor) out.push_back(allocs.event(i));
    return out;
  }
  // No such stack: the phase of the period where memory is lowest on average.
  size_t phase = 0;
  double low = -1;
  for (size_t ph = rep.steady_from; ph < rep.steady_from + rep.period; ++ph) {
    double sum = 0;
    size_t k = 0;
    for (size_t i = ph; i < n; i += rep.period, ++k) sum += double(replay.allocated_before_of(allocs.range(i)));
    if (low < 0 || sum / double(k) < low) low = sum / double(k), phase = ph;
  }
  for (size_t i = phase; i < n; i += rep.period) out.push_back(allocs.event(i));
  return out;
}

}  // namespace

// The trace-only half of the search (see the header): the allocations' symbols, and,
// where the repeat is looked for, every candidate period's periodicity.
struct TracePeriods::Impl {
  explicit Impl(const snapshot::Device& d) : device(&d), allocs(d.trace) {}
  // The candidate periods and their periodicity; done once.
  void search() {
    if (occurrences) return;
    occurrences.emplace(allocs);
    candidates = candidate_periods(*occurrences, allocs.size());
    periodicity = periodicities(allocs, *occurrences, candidates);
  }
  const snapshot::Device* device;
  Allocs allocs;
  std::optional<Occurrences> occurrences;  // refers to allocs: Impl stays where it is made
  std::vector<size_t> candidates;
  std::vector<Periodicity> periodicity;  // per candidate
};

namespace {

// The repeating allocation sequence, or nullopt (with the reason in `it`).
std::optional<Repeat> detect_repeat(TracePeriods::Impl& tp, const Replay& replay, Iterations& it) {
  const Allocs& allocs = tp.allocs;
  size_t n = allocs.size();
  if (n < 8) {
    it.reason = NoIterations::TooFewAllocations;
    return std::nullopt;
  }
  tp.search();
  double best = 0;
  std::vector<std::pair<size_t, Periodicity>> scored;
  for (size_t j = 0; j < tp.candidates.size(); ++j) {
    scored.emplace_back(tp.candidates[j], tp.periodicity[j]);
    best = std::max(best, tp.periodicity[j].ratio);
  }
  it.allocations = n;
  Repeat rep;
  // The smallest period scoring as well as the best: multiples of the step score the
  // same, a sub-period (one layer of a step) scores less at the phase changes.
  for (auto [p, r] : scored)
    if (r.ratio >= 0.8 && r.ratio >= best - 0.005) {
      rep.period = p;
      rep.steady_from = r.steady_from;
      rep.ratio = r.ratio;
      break;
    }
  it.match_ratio = rep.period ? rep.ratio : best;
  if (rep.period == 0) {
    it.reason = scored.empty() ? NoIterations::NoRepeat : NoIterations::WeakRepeat;
    return std::nullopt;
  }
  it.period_allocations = rep.period;
  it.steady_from = rep.steady_from;
  rep.boundaries = anchor_boundaries(allocs, *tp.occurrences, replay, rep);
  return rep;
}

// The allocations between two boundaries: [lo, hi) indices into allocs.
std::pair<size_t, size_t> unit(const Allocs& allocs, uint32_t from, uint32_t to) {
  auto first_at = [&](size_t begin, uint32_t e) {  // allocs' events ascend
    size_t lo = begin, hi = allocs.size();
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (allocs.event(mid) < e)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  };
  size_t lo = first_at(0, from);
  return {lo, first_at(lo, to)};
}

struct Kept {
  double share = 0;    // median share of a repetition's requested bytes kept
  uint64_t bytes = 0;  // median requested bytes a repetition keeps
};

// What a repetition still holds when the next one starts, as a median share of its
// requested bytes and in bytes: a training step frees most of what it allocates; the
// layers of one forward pass keep their activations for backward.
Kept kept_share(const Allocs& allocs, const Replay& replay, const std::vector<uint32_t>& b) {
  std::vector<double> shares;
  std::vector<uint64_t> bytes;
  for (size_t k = 0; k + 1 < b.size(); ++k) {
    auto [lo, hi] = unit(allocs, b[k], b[k + 1]);
    uint64_t total = 0, kept = 0;
    for (size_t j = lo; j < hi; ++j) {
      uint32_t id = allocs.range(j);
      uint64_t requested = replay.requested_of(id);
      uint32_t freed = replay.freed_of(id);
      total += requested;
      if (freed == kNever || freed >= b[k + 1]) kept += requested;
    }
    if (total) shares.push_back(double(kept) / double(total));
    bytes.push_back(kept);
  }
  return {median(shares), median(bytes)};
}

// The frames every repetition runs inside: per depth from the outermost, the
// Python frame (user or torch) that 97% of the repetitions' allocations share.
// Stacks without Python frames (the autograd engine's threads) do not vote.
std::vector<snapshot::FrameId> common_chain(const Context& ctx, const Allocs& allocs, size_t lo, size_t hi,
                                            const Replay& replay) {
  const auto& snap = ctx.snap;
  std::unordered_map<uint32_t, std::vector<snapshot::FrameId>, util::Hasher> chains;  // per stack, outermost first
  std::vector<const std::vector<snapshot::FrameId>*> voters;
  size_t step = std::max<size_t>(1, (hi - lo) / 4096);
  for (size_t j = lo; j < hi; j += step) {
    StackId st = replay.stack_of(allocs.range(j));
    auto [it, inserted] = chains.try_emplace(st.v);
    if (inserted) {
      for (auto f : snap.stacks[st]) {
        const auto& fi = ctx.sites.frame_info(f);
        if ((fi.kind == FrameKind::User || fi.kind == FrameKind::Torch) && !fi.noise) it->second.push_back(f);
      }
      std::reverse(it->second.begin(), it->second.end());
    }
    if (!it->second.empty()) voters.push_back(&it->second);
  }
  // Per depth, a frame 97% of the voters share is the majority of those deep enough to
  // vote, so the majority vote's candidate (Boyer-Moore: one pass, no counting map) is the
  // only frame that can pass; a second pass counts it.
  std::vector<snapshot::FrameId> out;
  for (size_t depth = 0; !voters.empty(); ++depth) {
    uint32_t best = 0;
    size_t lead = 0;
    for (auto* c : voters) {
      if (depth >= c->size()) continue;
      uint32_t f = (*c)[depth].v;
      if (lead == 0)
        best = f, lead = 1;
      else
        lead += f == best ? 1 : size_t(-1);
    }
    size_t best_n = 0;
    for (auto* c : voters) best_n += depth < c->size() && (*c)[depth].v == best;
    if (best_n * 100 < voters.size() * 97) break;
    out.push_back(snapshot::FrameId{best});
  }
  return out;
}

// PyTorch's own step annotations (record_function): each optimizer step or
// profiler step closes one training iteration.
bool step_annotation(std::string_view name) {
  return name.rfind("Optimizer.step#", 0) == 0 || name.rfind("ProfilerStep#", 0) == 0;
}

// The first event at or after each time (times sorted), in one pass.
std::vector<uint32_t> events_at_times(const snapshot::Device& d, const std::vector<int64_t>& times,
                                      bool strictly_after) {
  std::vector<uint32_t> out;
  size_t e = 0;
  for (int64_t t : times) {
    while (e < d.trace.size() &&
           (!d.trace[e].has_time() || (strictly_after ? d.trace[e].time_us <= t : d.trace[e].time_us < t)))
      ++e;
    if (e < d.trace.size() && (out.empty() || out.back() != e)) out.push_back(static_cast<uint32_t>(e));
  }
  return out;
}

bool has_step_annotations(const snapshot::Snapshot& snap, const snapshot::Device& d) {
  for (const auto& a : snap.annotations)
    if (a.device == d.index && step_annotation(snap.strings[a.name])) return true;
  return false;
}

// Iteration boundaries from step annotations; false when the file has none.
bool annotation_boundaries(const snapshot::Snapshot& snap, const snapshot::Device& d, Iterations& it) {
  if (!has_step_annotations(snap, d)) return false;
  std::vector<int64_t> ends;
  for (const auto& a : snap.annotations) {
    std::string_view n = snap.strings[a.name];
    if (a.device != d.index || !step_annotation(n)) continue;
    if (snap.strings[a.stage] == "END" && a.time_us != snapshot::TraceEvent::kNoTime) {
      ends.push_back(a.time_us);
      if (it.name.empty()) it.name = std::string(n);
    }
  }
  std::sort(ends.begin(), ends.end());
  it.annotations = ends.size();
  // An iteration starts after each step's end that falls inside the trace.
  it.boundaries = events_at_times(d, ends, true);
  it.method = IterationMethod::Annotation;
  if (it.name.empty()) it.name = "Optimizer.step";
  if (it.boundaries.size() < 2) it.reason = NoIterations::FewAnnotations;
  return true;
}

void marker_boundaries(const Context& ctx, const snapshot::Device& d, const std::string& marker, Iterations& it) {
  const auto& snap = ctx.snap;
  it.name = marker;
  it.method = IterationMethod::Marker;
  // A record_function annotation of that name: each START opens an iteration.
  std::vector<int64_t> starts;
  for (const auto& a : snap.annotations)
    if (a.device == d.index && snap.strings[a.name] == marker && snap.strings[a.stage] != "END" &&
        a.time_us != snapshot::TraceEvent::kNoTime)
      starts.push_back(a.time_us);
  if (!starts.empty()) {
    std::sort(starts.begin(), starts.end());
    it.boundaries = events_at_times(d, starts, false);
  } else {
    // "file.py:LINE": each allocation at that site opens an iteration. A bare
    // function name: each run of allocations whose site is in that function.
    bool by_site = marker.find(':') != std::string::npos;
    bool prev = false;
    for (uint32_t i = 0; i < d.trace.size(); ++i) {
      const auto& e = d.trace[i];
      if (e.action != Action::Alloc) continue;
      const std::string& site = ctx.sites.site(e.stack);
      bool m = by_site ? site.rfind(marker, 0) == 0 && (site.size() == marker.size() || site[marker.size()] == ':')
                       : site.size() > marker.size() &&
                             site.compare(site.size() - marker.size(), marker.size(), marker) == 0 &&
                             site[site.size() - marker.size() - 1] == ':';
      if (m && (by_site || !prev)) it.boundaries.push_back(i);
      prev = m;
    }
  }
  if (it.boundaries.size() < 2) it.reason = NoIterations::MarkerNotFound;
}

// What the repetitions are, whatever they turn out to be: count, size, the bytes
// they keep, whether the trace does backward work, and the frames they all run in
// (the innermost user frame among them is the loop's line).
Structure describe(const Context& ctx, const Allocs& allocs, const Replay& replay, const Repeat& rep,
                   std::vector<snapshot::FrameId>& chain) {
  const auto& b = rep.boundaries;
  Structure s;
  s.repeats = b.size();
  s.period_allocations = rep.period;
  s.first_event = b.front();
  s.last_event = static_cast<uint32_t>(replay.events() - 1);
  for (size_t j = 0; j < allocs.size() && !s.backward_seen; ++j)
    s.backward_seen = ctx.sites.traits(replay.stack_of(allocs.range(j))).backward;
  auto [lo, hi] = unit(allocs, b.front(), UINT32_MAX);
  for (size_t j = lo; j < hi; ++j)
    if (uint32_t id = allocs.range(j); replay.freed_of(id) == kNever) s.kept_bytes += replay.size_of(id);
  // Over the complete repetitions: the tail after the last boundary may hold other work.
  chain = common_chain(ctx, allocs, lo, unit(allocs, b.back(), UINT32_MAX).first, replay);
  for (auto f : chain)
    if (ctx.sites.frame_info(f).kind == FrameKind::User) s.loop_site = ctx.sites.frame_string(f);
  return s;
}

// Backward work in nearly every repetition, and the optimizer at work in the
// repeating part (its allocations, or frees whose frames are its: zero_grad and
// in-place steps allocate nothing).
bool training_evidence(const Context& ctx, const Allocs& allocs, const Replay& replay, const std::vector<uint32_t>& b,
                       bool& optimizer) {
  size_t with_backward = 0;
  optimizer = false;
  for (size_t k = 0; k < b.size(); ++k) {
    auto [ulo, uhi] = unit(allocs, b[k], k + 1 < b.size() ? b[k + 1] : UINT32_MAX);
    bool backward = false;
    for (size_t j = ulo; j < uhi; ++j) {
      const StackTraits& t = ctx.sites.traits(replay.stack_of(allocs.range(j)));
      backward = backward || t.backward;
      optimizer = optimizer || t.optimizer;
    }
    with_backward += backward;
  }
  for (uint32_t i = b.front(); i < replay.events() && !optimizer; ++i) {
    const auto& e = replay.device().trace[i];
    if (e.action != Action::Alloc && e.stack.v != 0) optimizer = ctx.sites.traits(e.stack).optimizer;
  }
  return with_backward * 10 >= b.size() * 8;
}

// A module call outside the loop's own line: every repetition runs inside one call
// of that module, so they are its layers.
bool inside_one_module(const Context& ctx, const std::vector<snapshot::FrameId>& chain) {
  size_t loop = chain.size();
  for (size_t k = 0; k < chain.size(); ++k)
    if (ctx.sites.frame_info(chain[k]).kind == FrameKind::User) loop = k;
  for (size_t k = 0; k < loop && loop < chain.size(); ++k)
    if (ctx.sites.frame_info(chain[k]).module_call) return true;
  return false;
}

// What follows the last boundary is one repetition, or the start of another, never
// an epilogue of other work: the repetitions run to the end of the trace.
bool spans_the_trace(const Allocs& allocs, const Repeat& rep) {
  size_t hi = allocs.size();
  size_t tail_start = unit(allocs, rep.boundaries.back(), UINT32_MAX).first;
  size_t tail = hi - tail_start;
  size_t matched = 0, judged = 0;
  for (size_t j = tail_start; j < hi && j >= rep.period; ++j) {
    ++judged;
    matched += allocs.symbol(j) == allocs.symbol(j - rep.period);
  }
  return tail <= rep.period + rep.period / 2 && judged > 0 && matched * 10 >= judged * 8;
}

// Whether the repetitions are whole steps (see the header); fills the reason and
// the structure when they are not, and `level` with the allocated bytes before each
// boundary (the growth figures reuse it when the repetitions are iterations).
bool judge_repeat(const Context& ctx, const Allocs& allocs, const Replay& replay, const Repeat& rep, Iterations& it,
                  std::optional<Structure>& structure, std::vector<uint64_t>& level) {
  const auto& b = rep.boundaries;
  std::vector<snapshot::FrameId> chain;
  Structure s = describe(ctx, allocs, replay, rep, chain);
  auto as_structure = [&](NoIterations why) {
    it.reason = why;
    structure = s;
    return false;
  };
  if (b.size() < 2) {
    it.reason = NoIterations::OneBoundary;
    return false;
  }
  Kept kept = kept_share(allocs, replay, b);
  it.kept_share = s.kept_share = kept.share;
  // Kept bytes are activations piling up only if memory rises by them: blocks cut
  // mid-step keep bytes past the next boundary that the block after frees.
  level = allocated_before(replay, b);
  std::vector<double> steps;  // the median step: one-off work (optimizer state) does not count
  for (size_t k = 1; k < level.size(); ++k) steps.push_back(double(level[k]) - double(level[k - 1]));
  s.growth_bytes_per_repeat = median(steps);
  s.keeps_activations = s.kept_share > 0.5 && s.growth_bytes_per_repeat * 2 >= double(kept.bytes);
  // A loop inside one step (the optimizer visiting each parameter) repeats too,
  // but only over part of the trace.
  if ((allocs.size() - rep.steady_from) * 10 < allocs.size() * 6) return as_structure(NoIterations::PartialRepeat);
  if (s.keeps_activations) return as_structure(NoIterations::KeepsActivations);
  bool optimizer = false;
  if (training_evidence(ctx, allocs, replay, b, optimizer)) {
    if (!optimizer) return as_structure(NoIterations::NoOptimizer);
    it.method = IterationMethod::TrainingLoop;
    return true;
  }
  if (inside_one_module(ctx, chain)) return as_structure(NoIterations::InsideOneCall);
  if (!spans_the_trace(allocs, rep)) return as_structure(NoIterations::NoBackwardWork);
  it.method = IterationMethod::InferenceLoop;
  return true;
}

}  // namespace

std::vector<uint64_t> allocated_before(const Replay& replay, const std::vector<uint32_t>& events) {
  // Each range's changes to allocated bytes land in the bucket of the first
  // boundary after them, then one prefix sum: no sort of the whole trace. Ranges
  // come by alloc event, so an alloc's bucket is a cursor that only moves forward;
  // a free's is its alloc's or the next one, looked at first, or else galloped to:
  // O(ranges + ranges log gap).
  std::vector<int64_t> bucket(events.size() + 1, 0);
  const size_t m = events.size();
  auto after = [&](size_t from, uint32_t at) {        // the first k >= from with events[k] > at
    if (from == m || events[from] > at) return from;  // most frees: their alloc's bucket or the next
    if (from + 1 == m || events[from + 1] > at) return from + 1;
    return gallop(std::span<const uint32_t>(events), from + 2, [&](uint32_t e) { return e <= at; });
  };
  size_t at_begin = 0;
  for (uint32_t id = 0, n = static_cast<uint32_t>(replay.ranges().size()); id < n; ++id) {
    if (replay.pending_at_start_of(id)) continue;
    uint32_t begin = replay.begin_of(id), freed = replay.freed_of(id);
    if (begin == kWindowStart && freed == kNever) continue;
    auto size = static_cast<int64_t>(replay.size_of(id));
    size_t k = 0;
    if (begin != kWindowStart) {
      while (at_begin < m && events[at_begin] <= begin) ++at_begin;  // O(ranges + boundaries) in all
      k = at_begin;
      bucket[k] += size;
    }
    if (freed != kNever) bucket[after(k, freed)] -= size;
  }
  std::vector<uint64_t> out;
  out.reserve(events.size());
  uint64_t level = replay.start_totals().allocated;
  for (size_t k = 0; k < events.size(); ++k) {
    level += static_cast<uint64_t>(bucket[k]);  // two's complement: a net decrease wraps back
    out.push_back(level);
  }
  return out;
}

TracePeriods::TracePeriods(const snapshot::Snapshot& snap, const snapshot::Device& device,
                           const IterationOptions& options)
    : impl_(std::make_unique<Impl>(device)) {
  const Allocs& a = impl_->allocs;
  // Where find_iterations() looks for a repeat (the same order of tests).
  if (!device.trace.empty() && options.marker.empty() && !has_step_annotations(snap, device) &&
      a.with_stack() * 20 >= a.size() && a.size() >= 8)
    impl_->search();
}

TracePeriods::TracePeriods(TracePeriods&&) noexcept = default;
TracePeriods& TracePeriods::operator=(TracePeriods&&) noexcept = default;
TracePeriods::~TracePeriods() = default;

IterationResult find_iterations(const Context& ctx, const snapshot::Device& d, const Replay& replay,
                                const IterationOptions& options) {
  return find_iterations(ctx, d, replay, options, TracePeriods(ctx.snap, d, options));
}

IterationResult find_iterations(const Context& ctx, const snapshot::Device& d, const Replay& replay,
                                const IterationOptions& options, TracePeriods periods) {
  IterationResult result;
  Iterations& it = result.iterations;
  if (d.trace.empty()) {
    it.reason = NoIterations::NoTrace;
    return result;
  }
  TracePeriods::Impl& tp = periods.impl();
  if (tp.device != &d) throw std::logic_error("iterations: the periods were searched on another device");
  Allocs& allocs = tp.allocs;
  allocs.attach(replay);
  it.allocations = allocs.size();
  it.allocations_with_stack = allocs.with_stack();
  it.reason = NoIterations::Claimed;
  std::vector<uint64_t> level_u;  // allocated bytes before each boundary
  if (!options.marker.empty()) {
    marker_boundaries(ctx, d, options.marker, it);
  } else if (!annotation_boundaries(ctx.snap, d, it)) {
    // Backward work, the optimizer and module calls are read from stacks, and a
    // step's allocation sizes alone vary too much to delimit it: without stacks a
    // repeat is neither named nor described.
    if (allocs.with_stack() * 20 < allocs.size()) {
      it.reason = NoIterations::NoStacks;
      return result;
    }
    std::optional<Repeat> rep = detect_repeat(tp, replay, it);
    if (!rep) return result;
    it.boundaries = rep->boundaries;
    if (!judge_repeat(ctx, allocs, replay, *rep, it, result.structure, level_u)) {
      it.boundaries.clear();
      return result;
    }
  }
  if (it.reason != NoIterations::Claimed || it.boundaries.size() < 2) {
    if (it.reason == NoIterations::Claimed) it.reason = NoIterations::OneBoundary;
    it.boundaries.clear();
    it.method = it.method == IterationMethod::Annotation || it.method == IterationMethod::Marker
                    ? it.method
                    : IterationMethod::None;
    return result;
  }
  std::vector<uint64_t> ev_gaps;
  std::vector<int64_t> us_gaps;
  for (size_t k = 1; k < it.boundaries.size(); ++k) {
    ev_gaps.push_back(it.boundaries[k] - it.boundaries[k - 1]);
    const auto& a = d.trace[it.boundaries[k - 1]];
    const auto& b = d.trace[it.boundaries[k]];
    int64_t gap = 0;
    if (a.has_time() && b.has_time() && !__builtin_sub_overflow(b.time_us, a.time_us, &gap)) us_gaps.push_back(gap);
  }
  it.count = it.boundaries.size();
  it.period_events = median(ev_gaps);
  if (us_gaps.size() == ev_gaps.size()) it.period_us = double(median(us_gaps));
  if (level_u.size() != it.boundaries.size()) level_u = allocated_before(replay, it.boundaries);  // not judged here
  std::vector<double> level(level_u.begin(), level_u.end());
  // The median of the steps from one iteration to the next, so one-off allocations
  // (optimizer state in the first step) do not bend it; of two middle steps, the one
  // nearer zero (a steady run with one rising step does not grow).
  std::vector<double> steps;
  size_t stride = std::max<size_t>(1, level.size() / 4000);
  for (size_t j = stride; j < level.size(); j += stride)
    steps.push_back((level[j] - level[j - stride]) / double(stride));
  if (!steps.empty()) {
    std::sort(steps.begin(), steps.end());
    size_t n = steps.size();
    double g = steps[n / 2];
    if (n % 2 == 0 && std::abs(steps[n / 2 - 1]) < std::abs(g)) g = steps[n / 2 - 1];
    it.growth_bytes_per_iteration = g;
  }
  size_t rising = 0;
  for (size_t j = 1; j < level.size(); ++j) rising += level[j] > level[j - 1];
  it.rising_share = level.size() > 1 ? double(rising) / double(level.size() - 1) : 0;
  return result;
}

}  // namespace memsnap::analysis
