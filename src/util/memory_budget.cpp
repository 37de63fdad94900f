// The run's memory bound and its one-line error.
#include "memsnap/util/memory_budget.hpp"

#include "memsnap/util/error.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::util {

uint64_t MemoryBudget::used() const {
  uint64_t sum = 0;
  for (const auto& h : held_) sum += h.load(std::memory_order_relaxed);
  return sum;
}

void MemoryBudget::exceeded(uint64_t wanted) const {
  throw InputError("", "reading this input needs more than " + human_bytes(limit_) + " of memory (" +
                           human_bytes(wanted) + " so far); raise the bound with --max-memory SIZE");
}

void MemoryBudget::set(Account a, uint64_t bytes) {
  held_[static_cast<std::size_t>(a)].store(bytes, std::memory_order_relaxed);
  uint64_t u = used();
  if (u > limit_) exceeded(u);
}

void MemoryBudget::check_more(Account a, uint64_t extra) const {
  (void)a;
  uint64_t u = used();
  if (u + extra > limit_ || u + extra < u) exceeded(u + extra);
}

}  // namespace memsnap::util
