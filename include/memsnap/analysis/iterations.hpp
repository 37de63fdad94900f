// Training and serving iterations, claimed only with evidence from the file, and the
// repeated structure found instead when a repeat is not a whole step.
//
// An iteration is a whole training or serving step. memsnap claims iterations when:
//   - the file annotates steps (PyTorch's `Optimizer.step#...` / `ProfilerStep#...`
//     record_function annotations), or the user names a marker (--iteration-marker);
//   - or the allocation sequence repeats (see below) and the repeating unit contains
//     backward work (autograd-engine frames, *Backward nodes) in nearly every
//     repetition, with the optimizer at work in the repeating part: a training loop;
//   - or the unit repeats without backward work, is not run inside one call of an
//     nn.Module (then its repetitions are that module's layers), frees what it
//     allocates (activations kept for a backward mean layers), and the repetitions
//     span the trace to its end: an inference loop of whole passes.
// Any other repeat is *structure*: the layers of one forward pass, or a loop inside
// one step. It is reported as such, never called iterations, and never feeds the
// growth or leak analyses.
//
// Two of those judgements need more than the repeat itself:
//   - "keeps its activations" (layers of one pass) needs memory to pile up: a
//     repetition keeps most of what it allocates past the next one's start *and*
//     allocated memory at the boundaries rises by at least half that much per
//     repetition. Blocks cut mid-step keep bytes past the next boundary that the
//     block after frees; memory then stays level and they are not layers.
//   - backward work, the optimizer and module calls are read from stacks. A trace
//     recorded without stacks (fewer than 1 allocation in 20 carries one) cannot
//     tell training steps from inference passes or from layers, and a step's
//     allocation sizes alone vary too much to delimit it (snapgen's train scenario
//     stripped of frames repeats every 61 allocations, not its 17): no repeat is
//     looked for, only annotations or --iteration-marker delimit iterations.
//
// Finding the repeat. A step allocates from the same call sites in the same order
// every time, so the sequence of allocation stacks is periodic. Candidate periods
// are the gaps between consecutive allocations from the same stack; each candidate P
// is scored by the share of allocations whose stack is allocated again about P
// allocations later, over the best suffix of the trace spanning three periods (a
// trace often opens with one-off work), and the smallest period scoring within half
// a point of the best wins (multiples of the period score as well; a sub-period,
// such as one layer of a step, scores less at the phase changes). Repetitions are
// anchored on a stack allocated once per period, the one met when memory is lowest.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/sites.hpp"

namespace memsnap::analysis {

enum class IterationMethod : uint8_t {
  None,
  Annotation,     // Optimizer.step / ProfilerStep annotations in the file
  Marker,         // --iteration-marker
  TrainingLoop,   // a repeating unit with backward work and the optimizer
  InferenceLoop,  // a repeating unit of whole passes that spans the trace
};

/// Why no iterations were claimed (with Iterations' numbers, one line in words).
enum class NoIterations : uint8_t {
  Claimed,            // iterations were found
  NoTrace,            // the device has no trace
  TooFewAllocations,  // fewer than 8 allocations
  NoRepeat,           // no allocation stack repeats
  WeakRepeat,         // the best period repeats only `match_ratio` of the stacks
  PartialRepeat,      // repeats only from allocation `steady_from` of `allocations`: a loop within a step
  KeepsActivations,   // each repetition keeps `kept_share` of its bytes: layers of one pass
  InsideOneCall,      // the repetitions run inside one call of `loop_site`: layers of one module
  NoBackwardWork,     // no backward work and the repeats do not span the trace
  NoOptimizer,        // backward work, but no optimizer step in the repeating part
  OneBoundary,        // only one boundary in the trace
  FewAnnotations,     // the file annotates `annotations` steps: too few
  MarkerNotFound,     // --iteration-marker opens fewer than two iterations
  NoStacks,           // the trace carries no stacks: steps, passes and layers look alike
};

struct Iterations {
  uint64_t count = 0;  // whole iterations that start inside the window; 0 when none
  IterationMethod method = IterationMethod::None;
  NoIterations reason = NoIterations::NoTrace;
  std::string name;                  // the annotation or marker name (Annotation, Marker)
  std::vector<uint32_t> boundaries;  // event index at which each iteration starts
  uint64_t period_events = 0;        // trace events per iteration (median)
  std::optional<double> period_us;   // median time per iteration
  /// Allocated bytes at the boundaries: trend per iteration (Theil-Sen) and the share
  /// of iterations that start higher than the one before.
  double growth_bytes_per_iteration = 0;
  double rising_share = 0;
  // Evidence of the repeat (TrainingLoop, InferenceLoop, and the reasons that concern a repeat).
  uint64_t allocations = 0;             // allocation events in the trace
  uint64_t period_allocations = 0;      // allocations per repetition
  uint64_t steady_from = 0;             // allocation where the periodic part starts
  double match_ratio = 0;               // share of allocation stacks that repeat one period later
  double kept_share = 0;                // median share of a repetition's bytes kept until the next one
  uint64_t annotations = 0;             // step annotations in the file (Annotation, FewAnnotations)
  uint64_t allocations_with_stack = 0;  // allocation events whose stack has frames

  bool found() const { return count > 0; }
};

/// A repeat inside one pass: reported instead of iterations.
struct Structure {
  uint64_t repeats = 0;                      // repetitions found
  uint64_t period_allocations = 0;           // allocations per repetition
  uint32_t first_event = 0, last_event = 0;  // where the repetitions start and where the last ends
  std::string loop_site;                     // the innermost frame common to every repetition (the loop's line)
  bool keeps_activations = false;            // each repetition keeps most of what it allocates
  bool backward_seen = false;                // any backward work in the trace
  double kept_share = 0;
  double growth_bytes_per_repeat = 0;  // allocated bytes at a boundary minus at the one before (median)
  uint64_t kept_bytes = 0;             // bytes the repetitions allocated that are still allocated at the dump
  /// Of kept_bytes: autocast's cached casts (role autocast_cache, set with the roles), which
  /// torch.no_grad() does not free: they are not activations.
  uint64_t kept_autocast_cache_bytes = 0;
  /// The torch.compile range (annotation_ranges.hpp) open from the first repetition to the last,
  /// when there is one: torch.compile benchmarking kernels, not a loop of the program.
  std::string compile_range;
};

struct IterationOptions {
  std::string marker;  // --iteration-marker: annotation name, "file.py:LINE" site, or function name
};

struct IterationResult {
  Iterations iterations;
  std::optional<Structure> structure;
};

/// The part of the search that reads the trace alone: each allocation's stack (or
/// size, without one) and, where find_iterations() will look for a repeat, how
/// periodic their sequence is for each candidate period: about half the search. It
/// needs no replay, so analyze() runs it beside the replay when a core is free.
class TracePeriods {
 public:
  TracePeriods(const snapshot::Snapshot& snap, const snapshot::Device& device, const IterationOptions& options);
  TracePeriods(TracePeriods&&) noexcept;
  TracePeriods& operator=(TracePeriods&&) noexcept;
  ~TracePeriods();

  struct Impl;  // iterations.cpp
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// Iterations (or structure) of one device's trace, from its replay.
IterationResult find_iterations(const Context& ctx, const snapshot::Device& device, const Replay& replay,
                                const IterationOptions& options);
/// The same with the trace's periods searched beforehand, for the same device and options.
IterationResult find_iterations(const Context& ctx, const snapshot::Device& device, const Replay& replay,
                                const IterationOptions& options, TracePeriods periods);

/// Allocated bytes just before each of `events` (sorted), from the replay's ranges.
std::vector<uint64_t> allocated_before(const Replay& replay, const std::vector<uint32_t>& events);

}  // namespace memsnap::analysis
