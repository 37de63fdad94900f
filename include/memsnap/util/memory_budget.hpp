// One memory bound for a whole run (--max-memory): each stage states what it holds, the sum is checked.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

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

  /// The default bound of one input (docs/bounds.md): 8 times its decoded bytes plus 128 MiB.
  static constexpr uint64_t kInputMultiple = 8;
  static constexpr uint64_t kInputFloor = uint64_t{128} << 20;

  explicit MemoryBudget(uint64_t limit = kDefault, std::shared_ptr<MemoryBudget> shared = nullptr)
      : limit_(limit), shared_(std::move(shared)) {}
  ~MemoryBudget();
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;
  /// The bound in force: limit(), or less while proportional() holds it to the input seen.
  uint64_t limit() const;
  /// The bound as given, before proportional() (what a reservation of address space may span).
  uint64_t cap() const { return limit_; }
  uint64_t used() const;
  /// What may still be added before the limit is reached.
  uint64_t left() const {
    uint64_t l = limit(), u = used();
    return u >= l ? 0 : l - u;
  }
  /// Bounds this budget to `multiple` x the input's decoded bytes (note_input) plus `floor`,
  /// never past the limit given: a small hostile input cannot grow a model of gigabytes.
  void proportional(uint64_t multiple, uint64_t floor) {
    multiple_ = multiple;
    floor_ = floor;
  }
  /// The input's decoded size as far as it is known (grows only).
  void note_input(uint64_t decoded_bytes);
  /// Sets one account; throws InputError naming --max-memory when the sum passes the limit.
  void set(Account a, uint64_t bytes);
  /// Throws as set() would if `extra` more bytes were added to account `a`.
  void check_more(Account a, uint64_t extra) const;

 private:
  [[noreturn]] void exceeded(uint64_t wanted) const;
  void add_shared(int64_t delta);
  uint64_t limit_;
  uint64_t multiple_ = 0, floor_ = 0;
  std::atomic<uint64_t> input_{0};
  // One bound for every file of a -j run: each file's budget adds what it holds to `shared_`,
  // whose limit is the run's (--max-memory); `total_` is that sum on the shared budget.
  std::shared_ptr<MemoryBudget> shared_;
  std::atomic<uint64_t> total_{0};
  std::array<std::atomic<uint64_t>, static_cast<std::size_t>(Account::kCount)> held_{};
};

}  // namespace memsnap::util
