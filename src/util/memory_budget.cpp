// The run's memory bound and its one-line error.
#include "memsnap/util/memory_budget.hpp"

#include <algorithm>
#include <string>

#include "memsnap/util/error.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::util {

MemoryBudget::~MemoryBudget() {
  if (!shared_) return;
  uint64_t mine = 0;
  for (const auto& h : held_) mine += h.load(std::memory_order_relaxed);
  shared_->total_.fetch_sub(mine, std::memory_order_relaxed);
}

uint64_t MemoryBudget::limit() const {
  if (multiple_ == 0) return limit_;
  uint64_t in = input_.load(std::memory_order_relaxed);
  uint64_t scaled = in > (UINT64_MAX - floor_) / multiple_ ? UINT64_MAX : in * multiple_ + floor_;
  return std::min(limit_, scaled);
}

void MemoryBudget::note_input(uint64_t decoded_bytes) {
  uint64_t seen = input_.load(std::memory_order_relaxed);
  while (decoded_bytes > seen && !input_.compare_exchange_weak(seen, decoded_bytes, std::memory_order_relaxed)) {
  }
}

void MemoryBudget::add_shared(int64_t delta) {
  uint64_t now = total_.fetch_add(uint64_t(delta), std::memory_order_relaxed) + uint64_t(delta);
  if (delta > 0 && now > limit_)
    throw InputError("", "the files read at once need more than " + human_bytes(limit_) + " of memory together (" +
                             human_bytes(now) + " so far); raise the bound with --max-memory SIZE or use fewer -j");
}

uint64_t MemoryBudget::used() const {
  uint64_t sum = 0;
  for (const auto& h : held_) sum += h.load(std::memory_order_relaxed);
  return sum;
}

void MemoryBudget::exceeded(uint64_t wanted) const {
  uint64_t l = limit();
  std::string why = l < limit_ ? " (" + std::to_string(multiple_) + "x the decoded input plus " + human_bytes(floor_) +
                                     ", the default bound)"
                               : "";
  throw InputError("", "reading this input needs more than " + human_bytes(l) + " of memory" + why + " (" +
                           human_bytes(wanted) + " so far); raise the bound with --max-memory SIZE");
}

void MemoryBudget::set(Account a, uint64_t bytes) {
  uint64_t old = held_[static_cast<std::size_t>(a)].exchange(bytes, std::memory_order_relaxed);
  if (a == Account::Input) note_input(bytes);
  uint64_t u = used();
  if (u > limit()) exceeded(u);
  if (shared_ && old != bytes) {
    try {
      shared_->add_shared(int64_t(bytes) - int64_t(old));
    } catch (...) {
      held_[static_cast<std::size_t>(a)].store(old, std::memory_order_relaxed);  // not held after all
      shared_->total_.fetch_sub(bytes - old, std::memory_order_relaxed);
      throw;
    }
  }
}

void MemoryBudget::check_more(Account a, uint64_t extra) const {
  (void)a;
  uint64_t u = used();
  if (u + extra > limit() || u + extra < u) exceeded(u + extra);
  if (shared_) {
    uint64_t t = shared_->total_.load(std::memory_order_relaxed);
    if (t + extra > shared_->limit_)
      throw InputError("", "the files read at once need more than " + human_bytes(shared_->limit_) +
                               " of memory together; raise the bound with --max-memory SIZE or use fewer -j");
  }
}

}  // namespace memsnap::util
