// The words of the findings about what memory is (issue 54): gradients kept or added into,
// activations outliving their backward, a serving engine's KV cache.
#include <algorithm>

#include "memsnap/util/units.hpp"
#include "text_util.hpp"
#include "words.hpp"

namespace memsnap::report::detail {

using namespace analysis;

namespace {

Words kept_after_backward_words(const Finding& f, const DeviceAnalysis& d) {
  const KeptAfterBackward& k = *d.roles.kept_after_backward;
  Words w;
  w.message = human_bytes(f.bytes) + " of activations (" + with_commas(k.blocks) + " blocks" +
              (k.site.empty() ? std::string() : ", made by " + k.site) +
              ") are still allocated after the backward (which allocated until event " + with_commas(k.backward_event) +
              "). The backward frees what autograd saved for it, so something else holds these: the autograd "
              "graph while `outputs` or `loss` is referenced";
  if (k.bitsandbytes)
    w.message +=
        " (bitsandbytes' 4-bit matmul, which this trace runs, keeps each input on its autograd ctx: it goes only "
        "with the graph)";
  w.message += ", outputs such as logits, or your own references.";
  if (!k.frames.empty()) {
    w.message += " Made in ";
    for (size_t i = 0; i < k.frames.size(); ++i)
      w.message += (i ? ", " : "") + k.frames[i].first + " " + human_bytes(k.frames[i].second);
    w.message += ".";
  }
  w.advice =
      "Drop the references once the backward has run (`del outputs, loss`; log `loss.item()`, not "
      "`loss`): otherwise they are freed only when the next forward rebinds the names, on top of its own "
      "activations (" +
      percent_of(f.bytes, d.peaks.allocated ? d.peaks.allocated->allocated_bytes : 0) + " of the peak).";
  return w;
}

}  // namespace

Words role_finding_words(const Finding& f, const DeviceAnalysis& d) {
  if (f.kind == FindingKind::ActivationsKeptAfterBackward) return kept_after_backward_words(f, d);
  Words w;
  if (f.kind == FindingKind::StaleGradientsAtPeak) {
    const auto& p = *d.peaks.allocated;
    std::string where =
        p.at_window_start ? std::string("when the window opened") : "at event " + with_commas(p.event_index);
    w.message = "At the peak (" + human_bytes(p.allocated_bytes) + ", " + where + "), " + human_bytes(f.bytes) +
                " are gradients of the previous step: zero_grad frees them only after this forward, so they are "
                "kept through it.";
    w.advice =
        "Call optimizer.zero_grad(set_to_none=True) before the forward (or right after optimizer.step()): "
        "the peak's state drops by " +
        human_bytes(f.bytes) + " (" + percent_of(f.bytes, p.allocated_bytes) + " of the peak).";
    return w;
  }
  if (f.kind == FindingKind::GradientsNeverZeroed) {
    const auto& g = *d.roles.never_zeroed;
    w.message =
        "The backward at event " + with_commas(g.first_event) + " adds into " + with_commas(g.gradients) +
        " gradients that already exist (" + human_bytes(g.bytes) +
        ": AccumulateGrad frees each incoming gradient after adding it to .grad), and no zero_grad "
        "runs in the window" +
        (g.across_a_step ? std::string(", though an optimizer step ran between two backward passes") : std::string()) +
        ". Each parameter's gradient then sums every step so far: each optimizer step after the "
        "first updates with the wrong gradient (a correctness bug, not only memory), and the "
        "gradients stay allocated through every forward." +
        (g.across_a_step ? std::string()
                         : std::string(" (If you accumulate over micro-batches on purpose, this is "
                                       "expected until the step: zero them after each step.)"));
    w.advice =
        "Call optimizer.zero_grad(set_to_none=True) once per step, before the forward or right after "
        "optimizer.step(): each update then uses its own step's gradients, and " +
        human_bytes(g.bytes) + " is free during the forward.";
    return w;
  }
  // KvCacheReserved
  std::string where;
  for (const auto& rw : d.roles.dump_where)
    if (rw.role == analysis::Role::KvCache) {
      if (rw.pool)
        where += " in private pool (" + std::to_string(rw.pool->first) + ", " + std::to_string(rw.pool->second) + ")";
      if (!rw.frame.empty()) where += " from " + rw.frame;
    }
  w.message = "KV cache " + human_bytes(f.bytes) + where + ": " + percent_of(f.bytes, d.accounting.reserved_bytes) +
              " of reserved memory, taken up front by the serving engine and kept whatever the requests need.";
  w.advice =
      "Its size is the engine's memory setting, not the batch: to leave room for other work, lower it "
      "(vLLM: gpu_memory_utilization; SGLang: mem_fraction_static).";
  return w;
}

}  // namespace memsnap::report::detail
