// What the iterations keep: sites that retain allocations from iteration after
// iteration (leaks), and sites whose allocations grow with every iteration.
//
// Leaks. An allocation made in iteration k and still allocated at the dump was
// retained. A site is leaking when it retains allocations from most iterations of
// the window, up to its end. The last iteration is not judged (it may be
// incomplete), and allocations made once (parameters, optimizer state) never
// qualify: they come from a single iteration. Leaks are only judged over five
// iterations or more, and only over iterations claimed with evidence
// (iterations.hpp): a repeat inside one pass never feeds this analysis.
//
// Patterns (the seed documents'): a tiny tensor retained together with forward
// activations is an accumulated autograd graph (`total_loss += loss`); tensors
// retained without them, a container that grows (a list of outputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/iterations.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/sites.hpp"

namespace memsnap::analysis {

/// Leaks are judged over this many iterations or more (fewer say nothing either way).
inline constexpr uint64_t kLeakMinIterations = 5;
inline bool leaks_judged(const Iterations& it) {
  return it.count >= kLeakMinIterations;
}

enum class LeakPattern : uint8_t { AutogradHistory, TensorList, Unclassified };
/// The stable JSON string: "autograd_history", "tensor_list", "unclassified".
const char* to_string(LeakPattern p);

struct Leak {
  std::string site;
  std::vector<std::string> stack;
  double growth_bytes_per_iteration = 0;
  double growth_allocations_per_iteration = 0;
  uint64_t live_bytes = 0;  // allocated at the dump, from this site
  uint64_t live_allocations = 0;
  uint64_t first_iteration = 0;  // first and last iteration whose allocations it retains
  uint64_t last_iteration = 0;
  uint64_t iterations_retained = 0;
  uint64_t iterations_judged = 0;  // iterations 0 .. count-2 (the last may be incomplete)
  LeakPattern pattern = LeakPattern::Unclassified;
  bool tiny = false;  // most retained allocations are 512 B or less
};

/// A site whose allocations grow in size iteration after iteration (memory that
/// grows with the input, such as the sequence length), whether or not it leaks.
struct GrowingSite {
  std::string site;
  uint64_t first_bytes = 0, last_bytes = 0;  // its largest request in its first and last iteration
  uint64_t first_iteration = 0, last_iteration = 0;
  uint64_t iterations = 0;  // iterations in which it allocates
};

struct LeakResult {
  std::vector<Leak> leaks;           // largest growth first
  std::vector<GrowingSite> growing;  // largest final request first
};

/// Needs `iterations.count >= 5` for leaks and >= 4 for growing sites; empty otherwise.
LeakResult find_leaks(const Context& ctx, const snapshot::Device& device, const Replay& replay,
                      const Iterations& iterations);

}  // namespace memsnap::analysis
