// ProgressTicker's slow side: the callback, once per step. Readers keep only at()'s compare
// inline (progress.hpp).
#include "memsnap/util/progress.hpp"

#include <algorithm>

namespace memsnap {

ProgressTicker::ProgressTicker(const ProgressFn* fn, uint64_t total, uint64_t step)
    : fn_(fn && *fn ? fn : nullptr), total_(total), step_(std::max<uint64_t>(step, 1)), next_(fn_ ? 0 : UINT64_MAX) {}

void ProgressTicker::finish() {
  if (fn_) (*fn_)(total_, total_);
}

void ProgressTicker::report(uint64_t done) {
  (*fn_)(std::min(done, total_), total_);
  next_ = done >= total_ ? UINT64_MAX : done + step_;
}

}  // namespace memsnap
