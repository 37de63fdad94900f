// Peak, iterations and leaks from one forward replay of a device's trace.
//
// Finding the iterations. A training step allocates from the same call sites in
// the same order every time, so the sequence of allocation stacks is periodic.
// Candidate periods are the gaps between consecutive allocations from the same
// stack (a stack allocated once per step recurs exactly one period later); each
// candidate P is scored by the share of allocations whose stack equals the one P
// allocations later, and the smallest period scoring within 2 points of the best
// wins (multiples of the period score as well, sub-periods such as one layer of
// a step score worse at the phase changes). Iterations are then anchored where
// memory is lowest within the period (between steps, after the optimizer).
//
// Leaks. An allocation made in iteration k and still live at the dump was
// retained. A site is leaking when it retains allocations from most iterations
// of the window, up to its end. The last iteration is not judged (it may be
// incomplete), and allocations made once (parameters, optimizer state) never
// qualify: they come from a single iteration.
#include "memsnap/analysis/trace_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "memsnap/util/units.hpp"

namespace memsnap::analysis {

using snapshot::Action;
using snapshot::BlockState;
using snapshot::StackId;

namespace {

struct AllocRec {
  uint32_t event;
  uint64_t symbol;
  uint64_t allocated_before;
  uint64_t bytes;                      // requested bytes
  uint32_t freed_at = kBeforeWindow;   // free_requested event, or kBeforeWindow if never freed
};

template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// How periodic the allocation sequence is with period p: the share of
// allocations whose stack is allocated again about one period later (within a
// tenth of it, so steps of slightly different length still match), over the
// best suffix of the window spanning at least three periods: traces often open
// with one-off work (model build, optimizer state) before the loop settles.
// Evaluated on at most 20000 evenly spread allocations.
struct Periodicity {
  double ratio = 0;
  size_t steady_from = 0;  // allocation index where the periodic part starts
};

Periodicity periodicity(const std::vector<AllocRec>& a,
                        const std::unordered_map<uint64_t, std::vector<size_t>>& occurrences, size_t p) {
  size_t n = a.size();
  Periodicity out;
  if (n < 3 * p) return out;
  size_t slack = std::max<size_t>(1, p / 10);
  size_t limit = n - p;
  size_t stride = std::max<size_t>(1, limit / 20000);
  std::vector<std::pair<size_t, bool>> hits;  // (position, repeats)
  for (size_t i = 0; i < limit; i += stride) {
    const auto& occ = occurrences.at(a[i].symbol);
    auto it = std::lower_bound(occ.begin(), occ.end(), i + p - std::min(slack, p - 1));
    hits.emplace_back(i, it != occ.end() && *it <= i + p + slack);
  }
  // suffix sums, evaluated at 16 starting points
  std::vector<size_t> suffix(hits.size() + 1, 0);
  for (size_t k = hits.size(); k-- > 0;) suffix[k] = suffix[k + 1] + hits[k].second;
  std::vector<std::pair<size_t, double>> starts;  // (position, ratio from there on)
  for (size_t part = 0; part < 16; ++part) {
    size_t k = hits.size() * part / 16;
    if (k >= hits.size() || n - hits[k].first < 3 * p) break;
    starts.emplace_back(hits[k].first, double(suffix[k]) / double(hits.size() - k));
    out.ratio = std::max(out.ratio, starts.back().second);
  }
  // the earliest start that is nearly as periodic as the best one
  for (auto [pos, r] : starts)
    if (r >= out.ratio - 0.03) {
      out.steady_from = pos;
      break;
    }
  return out;
}

std::string pct(double r) { return std::to_string(int(std::lround(r * 100))) + "%"; }

void detect_period(const std::vector<AllocRec>& allocs, Iterations& it) {
  size_t n = allocs.size();
  if (n < 8) {
    it.evidence = "too few allocations in the trace (" + std::to_string(n) + ") to find a repeating step";
    return;
  }
  std::unordered_map<uint64_t, std::vector<size_t>> occurrences;
  for (size_t i = 0; i < n; ++i) occurrences[allocs[i].symbol].push_back(i);
  // Candidate periods: the most frequent gaps between consecutive allocations of a
  // stack, and the most common per-stack median gaps (a stack allocated once per
  // step votes for the step even when per-layer stacks dominate the raw gaps).
  std::unordered_map<size_t, size_t> gaps, medians;
  for (const auto& [sym, occ] : occurrences) {
    if (occ.size() < 2) continue;
    std::vector<size_t> g;
    for (size_t k = 1; k < occ.size(); ++k) {
      size_t d = occ[k] - occ[k - 1];
      if (d >= 2 && d <= n / 2) ++gaps[d], g.push_back(d);
    }
    if (g.size() >= 2) ++medians[median(g)];
  }
  auto top = [](const std::unordered_map<size_t, size_t>& m, size_t k) {
    std::vector<std::pair<size_t, size_t>> v(m.begin(), m.end());  // (gap, count)
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    if (v.size() > k) v.resize(k);
    return v;
  };
  std::vector<std::pair<size_t, size_t>> cand = top(gaps, 32);
  for (auto& c : top(medians, 32)) cand.push_back(c);
  std::sort(cand.begin(), cand.end());
  cand.erase(std::unique(cand.begin(), cand.end(), [](auto& a, auto& b) { return a.first == b.first; }), cand.end());
  double best = 0;
  std::vector<std::pair<size_t, Periodicity>> scored;
  for (auto [p, count] : cand) {
    if (count < 1) continue;
    Periodicity r = periodicity(allocs, occurrences, p);
    scored.emplace_back(p, r);
    best = std::max(best, r.ratio);
  }
  size_t period = 0, steady_from = 0;
  // The smallest period scoring as well as the best: multiples of the step score
  // the same, a sub-period (one layer of a step) scores less at the phase changes.
  for (auto [p, r] : scored)
    if (r.ratio >= 0.8 && r.ratio >= best - 0.005) {
      period = p;
      steady_from = r.steady_from;
      it.match_ratio = r.ratio;
      break;
    }
  if (period != 0 && (n - steady_from) * 10 < n * 6) {
    // A loop inside one step (the optimizer visiting each parameter, the layers of
    // one forward) repeats too, but only over part of the trace.
    it.evidence = "the allocation sequence repeats every " + std::to_string(period) +
                  " allocations only from allocation " + std::to_string(steady_from) + " of " + std::to_string(n) +
                  " on: a loop within a step (such as the optimizer visiting each parameter), not whole training "
                  "iterations";
    return;
  }
  if (period == 0) {
    it.evidence = scored.empty() ? "no allocation stack repeats in the trace"
                                 : "no repeating step: the best candidate period repeats only " + pct(best) +
                                       " of the allocation stacks (80% needed)";
    return;
  }
  // Anchor the iterations on a stack allocated once per period (robust to steps of
  // slightly different length), choosing the one met when memory is lowest: the
  // start of a step, after the previous one freed its activations.
  // Judged on the steady part; the anchor's earlier occurrences still open iterations.
  double expected = double(n - steady_from) / double(period);
  const std::vector<size_t>* anchor = nullptr;
  double lowest = 0;
  for (const auto& [sym, occ] : occurrences) {
    auto first = std::lower_bound(occ.begin(), occ.end(), steady_from);
    size_t count = size_t(occ.end() - first);
    if (count < 2 || double(count) < 0.8 * expected || double(count) > 1.2 * expected) continue;
    size_t regular = 0;
    for (auto k = first + 1; k != occ.end(); ++k) {
      size_t g = *k - *(k - 1);
      regular += g * 10 >= period * 7 && g * 10 <= period * 13;
    }
    if (regular * 10 < (count - 1) * 9) continue;
    double mean = 0;
    for (size_t i : occ) mean += double(allocs[i].allocated_before);
    mean /= double(occ.size());
    if (!anchor || mean < lowest || (mean == lowest && occ.front() < anchor->front())) anchor = &occ, lowest = mean;
  }
  if (anchor) {
    for (size_t i : *anchor) it.boundaries.push_back(allocs[i].event);
  } else {
    size_t phase = 0;
    double low = -1;
    for (size_t ph = steady_from; ph < steady_from + period; ++ph) {
      double sum = 0;
      size_t k = 0;
      for (size_t i = ph; i < n; i += period, ++k) sum += double(allocs[i].allocated_before);
      if (low < 0 || sum / double(k) < low) low = sum / double(k), phase = ph;
    }
    for (size_t i = phase; i < n; i += period) it.boundaries.push_back(allocs[i].event);
  }
  it.found = true;
  it.method = "repeating allocation sequence";
  it.evidence = std::to_string(period) + " allocations per iteration; " + pct(it.match_ratio) +
                " of allocation stacks repeat one iteration later" +
                (steady_from ? " (from allocation " + std::to_string(steady_from) + " on)" : "");
}

void marker_boundaries(const snapshot::Snapshot& snap, const snapshot::Device& d, Sites& sites,
                       const std::string& marker, Iterations& it) {
  // A record_function annotation of that name: each START opens an iteration.
  std::vector<int64_t> starts;
  for (const auto& a : snap.annotations)
    if (a.device == d.index && snap.strings[a.name] == marker && snap.strings[a.stage] != "END" &&
        a.time_us != snapshot::TraceEvent::kNoTime)
      starts.push_back(a.time_us);
  if (!starts.empty()) {
    std::sort(starts.begin(), starts.end());
    size_t e = 0;
    for (int64_t t : starts) {
      while (e < d.trace.size() && (!d.trace[e].has_time() || d.trace[e].time_us < t)) ++e;
      if (e < d.trace.size() && (it.boundaries.empty() || it.boundaries.back() != e))
        it.boundaries.push_back(static_cast<uint32_t>(e));
    }
    it.method = "annotation " + marker;
  } else {
    // "file.py:LINE": each allocation at that site opens an iteration. A bare
    // function name: each run of allocations whose site is in that function.
    bool by_site = marker.find(':') != std::string::npos;
    bool prev = false;
    for (uint32_t i = 0; i < d.trace.size(); ++i) {
      if (d.trace[i].action != Action::Alloc) continue;
      const std::string& site = sites.site(d.trace[i].stack);
      bool m = by_site ? site.rfind(marker, 0) == 0 && (site.size() == marker.size() || site[marker.size()] == ':')
                       : site.size() > marker.size() && site.compare(site.size() - marker.size(), marker.size(), marker) == 0 &&
                             site[site.size() - marker.size() - 1] == ':';
      if (m && (by_site || !prev)) it.boundaries.push_back(i);
      prev = m;
    }
    it.method = "marker " + marker;
  }
  it.found = it.boundaries.size() >= 2;
  it.evidence = it.found ? std::to_string(it.boundaries.size()) + " iterations start at '" + marker + "'"
                         : "'" + marker + "' opens fewer than two iterations in the trace (no annotation of that "
                                          "name and fewer than two allocations at that site or function)";
}

// A training iteration frees most of what it allocates before the next one
// starts; the layers of one forward pass keep their activations for backward.
// A repeating unit that keeps most of its allocations is therefore not taken
// for iterations (its "growth" would be reported as a leak otherwise).
void reject_layer_loops(const std::vector<AllocRec>& allocs, Iterations& it) {
  const auto& b = it.boundaries;
  if (b.size() < 3) return;
  std::vector<double> kept_share;
  size_t a = 0;
  for (size_t k = 0; k + 1 < b.size(); ++k) {
    uint64_t total = 0, kept = 0;
    while (a < allocs.size() && allocs[a].event < b[k]) ++a;
    for (size_t j = a; j < allocs.size() && allocs[j].event < b[k + 1]; ++j) {
      total += allocs[j].bytes;
      if (allocs[j].freed_at == kBeforeWindow || allocs[j].freed_at >= b[k + 1]) kept += allocs[j].bytes;
    }
    if (total) kept_share.push_back(double(kept) / double(total));
  }
  double m = median(kept_share);
  if (m > 0.5) {
    it.found = false;
    it.boundaries.clear();
    it.evidence = "the allocation sequence repeats, but each repetition keeps " + pct(m) +
                  " of the bytes it allocates until the next one: these are the layers of one pass (activations "
                  "kept for backward), not training iterations";
  }
}

// PyTorch's own step annotations (record_function): each optimizer step or
// profiler step closes one training iteration.
bool step_annotation(std::string_view name) {
  return name.rfind("Optimizer.step#", 0) == 0 || name.rfind("ProfilerStep#", 0) == 0;
}

// Iteration boundaries from step annotations; false when the file has none.
bool annotation_boundaries(const snapshot::Snapshot& snap, const snapshot::Device& d, Iterations& it) {
  std::vector<int64_t> ends;
  std::string name;
  bool any = false;
  for (const auto& a : snap.annotations) {
    std::string_view n = snap.strings[a.name];
    if (a.device != d.index || !step_annotation(n)) continue;
    any = true;
    if (snap.strings[a.stage] == "END" && a.time_us != snapshot::TraceEvent::kNoTime) {
      ends.push_back(a.time_us);
      if (name.empty()) name = std::string(n);
    }
  }
  if (!any) return false;
  std::sort(ends.begin(), ends.end());
  // An iteration starts after each step's end that falls inside the trace.
  for (int64_t t : ends) {
    size_t e = 0;
    while (e < d.trace.size() && (!d.trace[e].has_time() || d.trace[e].time_us <= t)) ++e;
    if (e < d.trace.size() && (it.boundaries.empty() || it.boundaries.back() != e))
      it.boundaries.push_back(static_cast<uint32_t>(e));
  }
  it.method = "annotation " + (name.empty() ? std::string("Optimizer.step") : name);
  it.found = it.boundaries.size() >= 2;
  it.evidence = it.found ? std::to_string(ends.size()) + " optimizer steps annotated in the file"
                         : "the file annotates " + std::to_string(ends.size()) +
                               " optimizer step(s): too few to delimit whole iterations";
  return true;
}

bool is_forward_stack(const snapshot::Snapshot& s, StackId st) {
  for (auto f : s.stacks[st]) {
    std::string_view name = s.strings[s.frames[f].name];
    std::string_view file = s.strings[s.frames[f].filename];
    if (name == "forward" || file.find("torch/nn/modules/") != std::string_view::npos) return true;
  }
  return false;
}

// Sites whose largest request grows from iteration to iteration: never smaller
// than in the iteration before, larger in at least half of the steps, and at
// least 1.5 times its first size by the end, over four iterations or more.
std::vector<GrowingSite> growing_sites(const snapshot::Device& d, const std::vector<AllocRec>& allocs,
                                       const std::vector<uint32_t>& bounds, Sites& sites) {
  std::unordered_map<uint32_t, std::map<size_t, uint64_t>> largest;  // site -> iteration -> bytes
  for (const auto& a : allocs) {
    if (a.event < bounds.front()) continue;
    size_t iter = size_t(std::upper_bound(bounds.begin(), bounds.end(), a.event) - bounds.begin()) - 1;
    uint64_t& m = largest[sites.site_of(d.trace[a.event].stack).v][iter];
    m = std::max(m, a.bytes);
  }
  std::vector<GrowingSite> out;
  for (const auto& [site, per_iter] : largest) {
    if (per_iter.size() < 4) continue;
    size_t rises = 0;
    bool monotone = true;
    uint64_t prev = 0;
    bool first = true;
    for (const auto& [k, bytes] : per_iter) {
      if (!first && bytes < prev) monotone = false;
      if (!first && bytes > prev) ++rises;
      prev = bytes, first = false;
    }
    uint64_t lo = per_iter.begin()->second, hi = per_iter.rbegin()->second;
    if (!monotone || rises * 2 < per_iter.size() - 1 || hi * 2 < lo * 3) continue;
    out.push_back({sites.name(SiteId{site}), lo, hi, per_iter.begin()->first, per_iter.rbegin()->first,
                   per_iter.size()});
  }
  std::sort(out.begin(), out.end(), [](const GrowingSite& a, const GrowingSite& b) {
    return a.last_bytes != b.last_bytes ? a.last_bytes > b.last_bytes : a.site < b.site;
  });
  return out;
}

// Plain words for what the trace shows, with the fixes the seed documents give.
std::vector<Finding> trace_findings(const TraceAnalysis& t) {
  std::vector<Finding> f;
  if (!t.consistent && t.first_mismatch) {
    f.push_back({"trace_inconsistent", Severity::Warning,
                 "The trace does not replay cleanly to the dumped state: event " +
                     std::to_string(t.first_mismatch->event) + ": " + t.first_mismatch->what + ".",
                 "Figures derived from the trace (peak, timeline, leaks) may be off around that event; the dumped "
                 "state itself is unaffected."});
  }
  double autograd = 0, list = 0, other = 0;
  std::string tiny_site, fwd_site, list_site, other_site;
  auto add_name = [](std::string& names, const std::string& site) {
    if (names.find(site) == std::string::npos) names += (names.empty() ? "" : " and ") + site;
  };
  uint64_t iters = 0;
  for (const auto& l : t.leaks) {
    iters = std::max(iters, l.iterations_retained);
    if (l.pattern == "autograd_history") {
      autograd += l.growth_bytes_per_iteration;
      if (l.growth_bytes_per_iteration / std::max(1.0, l.growth_allocations_per_iteration) <= 512) {
        if (std::count(tiny_site.begin(), tiny_site.end(), ':') < 6) add_name(tiny_site, l.site);
      } else if (fwd_site.empty()) {
        fwd_site = l.site;
      }
    } else if (l.pattern == "tensor_list") {
      list += l.growth_bytes_per_iteration;
      if (list_site.empty()) list_site = l.site;
    } else {
      other += l.growth_bytes_per_iteration;
      if (other_site.empty()) other_site = l.site;
    }
  }
  auto per_iter = [](double b) { return human_bytes(uint64_t(std::llround(b))) + " per iteration"; };
  if (autograd > 0) {
    f.push_back({"leak_autograd_history", Severity::Critical,
                 "Memory grows by " + per_iter(autograd) + ": tiny tensors from " + tiny_site +
                     " are kept every iteration together with the forward activations of their graph" +
                     (fwd_site.empty() ? std::string() : " (largest from " + fwd_site + ")") +
                     ". This is accumulating autograd history across the training loop (e.g. `total_loss += loss`).",
                 "Accumulate a Python number instead: `total_loss += loss.item()` or `float(loss)` (or `loss.detach()`), "
                 "so each step's graph can be freed."});
  }
  if (list > 0) {
    f.push_back({"leak_tensor_list", Severity::Critical,
                 "Memory grows by " + per_iter(list) + ": tensors allocated at " + list_site +
                     " are kept alive from every iteration, as a list or other container that grows would keep them.",
                 "Keep Python numbers (`.item()`), or `.detach().cpu()` copies, instead of GPU tensors; `del` "
                 "references you no longer need."});
  }
  if (other > 0) {
    f.push_back({"leak_growth", Severity::Warning,
                 "Memory grows by " + per_iter(other) + ": allocations at " + other_site +
                     " survive from iteration after iteration; memsnap cannot tell from the trace which reference "
                     "keeps them (see `leaks` for the evidence).",
                 "Find what holds these tensors across steps (lists, caches, attributes on `self`, accumulated "
                 "losses) and `del` them or keep `.item()` values instead."});
  }
  if (!t.growing.empty()) {
    std::string what;
    for (size_t i = 0; i < t.growing.size() && i < 3; ++i) {
      const auto& g = t.growing[i];
      what += std::string(i ? "; " : "") + g.site + " from " + human_bytes(g.first_bytes) + " (iteration " +
              std::to_string(g.first_iteration) + ") to " + human_bytes(g.last_bytes) + " (iteration " +
              std::to_string(g.last_iteration) + ")";
    }
    f.push_back({"growing_with_input", Severity::Warning,
                 "Allocations grow iteration after iteration: " + what +
                     ". Memory that grows with the input, such as the sequence length, raises the peak every step "
                     "until it does not fit.",
                 "Bound the input's length (truncate, or bucket inputs by length); for RNNs, truncated "
                 "backpropagation through time (detach the hidden state every k steps)."});
  }
  if (t.leaks.empty() && t.iterations.found && t.iterations.count >= 5 && t.iterations.growth_bytes_per_iteration > 0 &&
      t.iterations.rising_share >= 0.7 &&
      t.peak && t.iterations.growth_bytes_per_iteration * double(t.iterations.count) > 0.05 * double(t.peak->allocated_bytes)) {
    f.push_back({"growth_unattributed", Severity::Warning,
                 "Allocated memory at the start of each iteration grows by " +
                     per_iter(t.iterations.growth_bytes_per_iteration) +
                     ", but no single site retains allocations from iteration after iteration.",
                 "Compare two snapshots a few steps apart with `memsnap diff` to see which sites grow."});
  }
  return f;
}

}  // namespace

std::vector<SiteBytes> sites_by_bytes(const snapshot::Device& d, Sites& sites, size_t top) {
  struct Acc {
    uint64_t bytes = 0, count = 0, biggest = 0;
    StackId stack;
  };
  std::unordered_map<uint32_t, Acc> by;
  for (const auto& b : d.blocks) {
    if (b.state != BlockState::ActiveAllocated) continue;
    Acc& a = by[sites.site_of(b.stack).v];
    a.bytes += b.size;
    a.count += 1;
    if (b.size > a.biggest) a.biggest = b.size, a.stack = b.stack;
  }
  std::vector<std::pair<uint32_t, Acc>> v(by.begin(), by.end());
  std::sort(v.begin(), v.end(), [&](auto& x, auto& y) {
    return x.second.bytes != y.second.bytes ? x.second.bytes > y.second.bytes
                                            : sites.name(SiteId{x.first}) < sites.name(SiteId{y.first});
  });
  std::vector<SiteBytes> out;
  for (auto& [id, a] : v) {
    if (out.size() >= top) break;
    out.push_back({sites.name(SiteId{id}), sites.stack(a.stack), a.bytes, a.count});
  }
  return out;
}

TraceAnalysis analyze_trace(const snapshot::Snapshot& snap, const snapshot::Device& d, const Replay& replay,
                            Sites& sites, const TraceOptions& opt) {
  TraceAnalysis out;
  out.has_trace = !d.trace.empty();
  out.consistent = replay.consistent();
  out.first_mismatch = replay.first_mismatch();
  out.window_starts_mid_run = replay.window_starts_mid_run();
  out.estimated_blocks = replay.estimated_blocks();
  if (!out.has_trace) return out;

  // ---- one forward pass: the peak and the allocation sequence -----------------------
  std::vector<AllocRec> allocs;
  ReplayState st = replay.start();
  Peak peak;
  bool have_peak = false;
  std::unordered_map<uint64_t, size_t> live_alloc;  // address -> index in allocs
  for (uint32_t i = 0; i < d.trace.size(); ++i) {
    const auto& e = d.trace[i];
    uint64_t before = st.totals().allocated;
    st.step();
    if (e.action == Action::Alloc) {
      uint64_t sym = e.stack.v != 0 ? e.stack.v : (uint64_t{1} << 63) | e.size;
      live_alloc[e.addr] = allocs.size();
      allocs.push_back({i, sym, before, e.size});
    } else if (e.action == Action::FreeRequested || e.action == Action::Free ||
               (e.action == Action::FreeCompleted && live_alloc.count(e.addr))) {
      if (auto f = live_alloc.find(e.addr); f != live_alloc.end()) {
        allocs[f->second].freed_at = i;
        live_alloc.erase(f);
      }
    }
    const auto& t = st.totals();
    if (!have_peak || t.allocated > peak.allocated_bytes) {
      have_peak = true;
      peak.event_index = i;
      peak.allocated_bytes = t.allocated;
      peak.active_bytes = t.active;
      peak.reserved_bytes = t.reserved;
      peak.time_us = e.has_time() ? std::optional<int64_t>(e.time_us) : std::nullopt;
    }
  }
  {
    auto at_peak = replay.state_after(peak.event_index).to_device(d.index);
    peak.top_sites = sites_by_bytes(at_peak, sites, opt.top_sites);
  }
  out.peak = peak;

  // ---- iterations -------------------------------------------------------------------
  Iterations& it = out.iterations;
  if (!opt.iteration_marker.empty()) marker_boundaries(snap, d, sites, opt.iteration_marker, it);
  else if (!annotation_boundaries(snap, d, it)) {
    detect_period(allocs, it);
    if (it.found) reject_layer_loops(allocs, it);
  }
  if (it.found && it.boundaries.size() >= 2) {
    std::vector<uint64_t> ev_gaps;
    std::vector<int64_t> us_gaps;
    for (size_t k = 1; k < it.boundaries.size(); ++k) {
      ev_gaps.push_back(it.boundaries[k] - it.boundaries[k - 1]);
      const auto& a = d.trace[it.boundaries[k - 1]];
      const auto& b = d.trace[it.boundaries[k]];
      if (a.has_time() && b.has_time()) us_gaps.push_back(b.time_us - a.time_us);
    }
    it.count = it.boundaries.size();
    it.period_events = median(ev_gaps);
    if (us_gaps.size() == ev_gaps.size()) it.period_us = double(median(us_gaps));
    // Allocated bytes just before each boundary event. Boundaries are allocations
    // (the first pass recorded the level before each); only annotation boundaries
    // may fall on other events, and then the trace is replayed once more.
    std::vector<double> level;
    for (uint32_t b : it.boundaries) {
      auto a = std::lower_bound(allocs.begin(), allocs.end(), b, [](const AllocRec& r, uint32_t e) { return r.event < e; });
      if (a == allocs.end() || a->event != b) break;
      level.push_back(double(a->allocated_before));
    }
    if (level.size() != it.boundaries.size()) {
      level.clear();
      ReplayState s2 = replay.start();
      size_t k = 0;
      for (uint32_t i = 0; i < d.trace.size() && k < it.boundaries.size(); ++i) {
        if (i == it.boundaries[k]) {
          level.push_back(double(s2.totals().allocated));
          ++k;
        }
        s2.step();
      }
    }
    // Theil-Sen: the median of the slopes between every pair of iterations, so
    // one-off allocations (optimizer state in the first step) do not bend it.
    std::vector<double> sample;
    size_t step = std::max<size_t>(1, level.size() / 400);
    for (size_t j = 0; j < level.size(); j += step) sample.push_back(level[j]);
    std::vector<double> slopes;
    for (size_t a = 0; a < sample.size(); ++a)
      for (size_t b = a + 1; b < sample.size(); ++b) slopes.push_back((sample[b] - sample[a]) / double((b - a) * step));
    it.growth_bytes_per_iteration = median(slopes);
    size_t rising = 0;
    for (size_t j = 1; j < level.size(); ++j) rising += level[j] > level[j - 1];
    it.rising_share = level.size() > 1 ? double(rising) / double(level.size() - 1) : 0;
  } else if (it.found) {
    it.found = false;
    it.evidence = "only one iteration boundary in the trace";
  }

  // ---- leaks: allocations retained from iteration after iteration ----------------------
  if (it.found && it.boundaries.size() >= 5) {
    const auto& bounds = it.boundaries;
    size_t judged = bounds.size() - 1;  // iterations 0 .. K-2; the last may be incomplete
    struct SiteRet {
      std::vector<uint64_t> bytes, count;
      std::map<uint32_t, uint64_t> stacks;  // stack -> retained allocations
      uint64_t tiny = 0, total = 0;
    };
    std::unordered_map<uint32_t, SiteRet> ret;
    for (const auto& a : allocs) {
      if (a.event < bounds.front()) continue;
      size_t iter = size_t(std::upper_bound(bounds.begin(), bounds.end(), a.event) - bounds.begin()) - 1;
      uint64_t size = replay.surviving_size(a.event);
      if (iter >= judged || size == 0) continue;
      const auto& e = d.trace[a.event];
      SiteRet& r = ret[sites.site_of(e.stack).v];
      if (r.bytes.empty()) r.bytes.assign(judged, 0), r.count.assign(judged, 0);
      r.bytes[iter] += size;
      r.count[iter] += 1;
      r.stacks[e.stack.v] += 1;
      r.total += 1;
      if (size <= 512) r.tiny += 1;
    }
    // live at the dump, by site
    std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> live;
    for (const auto& b : d.blocks)
      if (b.state == BlockState::ActiveAllocated) {
        auto& l = live[sites.site_of(b.stack).v];
        l.first += b.size;
        l.second += 1;
      }
    std::vector<std::pair<uint32_t, const SiteRet*>> leaking;
    for (const auto& [site, r] : ret) {
      size_t first = judged, last = 0, n = 0;
      for (size_t k = 0; k < judged; ++k)
        if (r.count[k]) first = std::min(first, k), last = k, ++n;
      if (n < 3 || last + 3 < judged || double(n) < 0.6 * double(last - first + 1)) continue;
      Leak lk;
      lk.site = sites.name(SiteId{site});
      auto common = std::max_element(r.stacks.begin(), r.stacks.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
      lk.stack = sites.stack(StackId{common->first});
      uint64_t bytes = 0, count = 0;
      for (size_t k = first; k <= last; ++k) bytes += r.bytes[k], count += r.count[k];
      double span = double(last - first + 1);
      lk.growth_bytes_per_iteration = double(bytes) / span;
      lk.growth_allocations_per_iteration = double(count) / span;
      lk.first_iteration = first;
      lk.last_iteration = last;
      lk.iterations_retained = n;
      auto lv = live.find(site);
      if (lv != live.end()) lk.live_bytes = lv->second.first, lk.live_allocations = lv->second.second;
      out.leaks.push_back(lk);
      leaking.emplace_back(site, &r);
    }
    // Patterns (seed documents): a tiny tensor retained with forward activations is an
    // accumulated autograd graph; tensors retained without them, a growing list.
    bool tiny_site = false, forward_site = false;
    for (size_t i = 0; i < out.leaks.size(); ++i) {
      const SiteRet& r = *leaking[i].second;
      bool tiny = r.tiny * 2 >= r.total;
      bool fwd = false;
      for (auto& [stk, c] : r.stacks) fwd = fwd || is_forward_stack(snap, StackId{stk});
      tiny_site = tiny_site || tiny;
      forward_site = forward_site || (fwd && !tiny);
    }
    for (size_t i = 0; i < out.leaks.size(); ++i) {
      const SiteRet& r = *leaking[i].second;
      bool tiny = r.tiny * 2 >= r.total;
      if (tiny_site && forward_site) out.leaks[i].pattern = "autograd_history";
      else if (!tiny_site && !forward_site) out.leaks[i].pattern = "tensor_list";
      else if (tiny && !forward_site) out.leaks[i].pattern = "tensor_list";
      else out.leaks[i].pattern = "unclassified";
    }
    std::sort(out.leaks.begin(), out.leaks.end(), [](const Leak& a, const Leak& b) {
      return a.growth_bytes_per_iteration != b.growth_bytes_per_iteration
                 ? a.growth_bytes_per_iteration > b.growth_bytes_per_iteration
                 : a.site < b.site;
    });
  } else if (it.found) {
    it.evidence += "; fewer than 5 iterations in the window, too few to judge leaks";
  }
  if (it.found && it.boundaries.size() >= 4) out.growing = growing_sites(d, allocs, it.boundaries, sites);
  out.findings = trace_findings(out);
  return out;
}

}  // namespace memsnap::analysis
