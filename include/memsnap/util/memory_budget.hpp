// One memory bound for a whole run (--max-memory): each stage states what it holds, the sum is checked.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memsnap::util {

/// What holds memory. A stage sets its own account to what it holds now (after a
/// growth step, not per element); the sum of all accounts is checked against the limit.
enum class Account : uint8_t {
  Input,     // decoded input held in memory (stdin, decompressed data, a read-ahead window); a mapped
             // file is page cache
  Parse,     // the value graph or the fast path's tables
  Model,     // the snapshot model
  Analysis,  // what the analyses build
  kCount
};

/// Thread-safe: a decoder thread sets Input while the parser sets Parse and Model.
class MemoryBudget {
 public:
  static constexpr uint64_t kDefault = uint64_t{4} << 30;  // fits a laptop

  explicit MemoryBudget(uint64_t limit = kDefault) : limit_(limit) {}
  uint64_t limit() const { return limit_; }
  uint64_t used() const;
  /// What may still be added before the limit is reached.
  uint64_t left() const { return used() >= limit_ ? 0 : limit_ - used(); }
  /// Sets one account; throws InputError naming --max-memory when the sum passes the limit.
  void set(Account a, uint64_t bytes);
  /// Throws as set() would if `extra` more bytes were added to account `a`.
  void check_more(Account a, uint64_t extra) const;

 private:
  [[noreturn]] void exceeded(uint64_t wanted) const;
  uint64_t limit_;
  std::array<std::atomic<uint64_t>, static_cast<std::size_t>(Account::kCount)> held_{};
};

}  // namespace memsnap::util
