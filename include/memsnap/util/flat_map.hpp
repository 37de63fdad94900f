// An open-addressing hash map from 64-bit keys (addresses, ids) to small values:
// one flat array, linear probing on a seeded hash of the key, deletion by backward
// shift (no tombstones), so lookups stay short however the map churns. Used where
// node-based std::unordered_map would allocate per entry on hot paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "memsnap/util/hash.hpp"

namespace memsnap {

namespace detail {
/// The key of a free slot.
inline constexpr uint64_t kFlatMapFree = UINT64_MAX;
/// A key's home slot: the top bits of its seeded hash past `shift` (FlatMap64::home and the
/// growth below both place keys by it).
inline size_t flat_map_home(uint64_t key, uint64_t seed, unsigned shift) {
  return static_cast<size_t>(util::hash_u64(key, seed) >> shift);
}
/// FlatMap64's growth, one function for every value type (flat_map.cpp): copies each used
/// slot of `from` (`count` slots of `slot_bytes` bytes, the key in a slot's first 8, a free
/// one's kFlatMapFree) into the free table `to` (mask + 1 slots) at the key's home, the top
/// bits of hash_u64(key, seed) past `shift`, or the first free slot after it: where
/// try_emplace would put it, in the same order, so the new table is the one that inserting
/// the entries anew would build.
void flat_map_place(const void* from, size_t count, void* to, size_t mask, unsigned shift, uint64_t seed,
                    size_t slot_bytes);
}  // namespace detail

template <class V>
class FlatMap64 {
 public:
  FlatMap64() { rehash(16); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  V* find(uint64_t key) {
    if (key == kEmpty) [[unlikely]]
      return has_empty_ ? &empty_value_ : nullptr;
    size_t i = find_slot(key);
    return i == kNone ? nullptr : &slots_[i].value;
  }
  const V* find(uint64_t key) const { return const_cast<FlatMap64*>(this)->find(key); }
  bool contains(uint64_t key) const { return find(key) != nullptr; }

  /// Inserts (key, value) unless the key is present; returns the value slot and whether it was inserted.
  std::pair<V*, bool> try_emplace(uint64_t key, const V& value) {
    if (key == kEmpty) [[unlikely]] {
      if (has_empty_) return {&empty_value_, false};
      has_empty_ = true;
      empty_value_ = value;
      ++size_;
      return {&empty_value_, true};
    }
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    size_t i = home(key);
    for (;;) {
      Slot& s = slots_[i];
      if (s.key == kEmpty) {
        s.key = key;
        s.value = value;
        ++size_;
        return {&s.value, true};
      }
      if (s.key == key) return {&s.value, false};
      i = (i + 1) & mask_;
    }
  }
  V& operator[](uint64_t key) { return *try_emplace(key, V{}).first; }

  /// Removes the key; false when absent.
  bool erase(uint64_t key) {
    if (key == kEmpty) [[unlikely]] {
      if (!has_empty_) return false;
      erase_empty();
      return true;
    }
    size_t i = find_slot(key);
    if (i == kNone) return false;
    erase_slot(i);
    return true;
  }
  /// Removes the entry whose value `find` returned (no second probe for its key).
  void erase_found(V* value) {
    if (value == &empty_value_) [[unlikely]]
      return erase_empty();
    erase_slot(slot_of(value));
  }

  template <class F>
  void for_each(F f) const {
    for (const Slot& s : slots_)
      if (s.key != kEmpty) f(s.key, s.value);
    if (has_empty_) f(kEmpty, empty_value_);
  }

  void clear() {
    slots_.clear();
    size_ = 0;
    has_empty_ = false;
    rehash(16);
  }

 private:
  // A slot whose key is kEmpty is free: no flag beside the key, so a slot is the key and the
  // value alone (16 bytes for an 8-byte value, not 24: the replay's undo probes such a map
  // once per trace event, and its misses in the cache were most of that pass's time). The key
  // kEmpty itself, which only a hostile file gives, lives beside the array.
  static constexpr uint64_t kEmpty = detail::kFlatMapFree;
  static constexpr size_t kNone = SIZE_MAX;
  // The slot holding key (not kEmpty), or kNone.
  size_t find_slot(uint64_t key) const {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == kEmpty) return kNone;
      if (slots_[i].key == key) return i;
    }
  }
  // The slot a value returned by find lies in.
  size_t slot_of(const V* value) const {
    auto byte = reinterpret_cast<const char*>(value) - reinterpret_cast<const char*>(slots_.data());
    return static_cast<size_t>(byte) / sizeof(Slot);
  }
  void erase_slot(size_t i) {
    // Backward shift: pull later entries of the probe run into the hole.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
      size_t h = home(slots_[j].key);
      if (((j - h) & mask_) >= ((j - hole) & mask_)) {  // the hole lies on j's probe path
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole].key = kEmpty;
    --size_;
  }
  void erase_empty() {
    has_empty_ = false;
    --size_;
  }
  struct Slot {
    uint64_t key = kEmpty;
    V value{};
  };
  // Growth copies slots as bytes (detail::flat_map_place), the key first.
  static_assert(std::is_trivially_copyable_v<Slot> && std::is_standard_layout_v<Slot>,
                "FlatMap64 holds trivially copyable values");
  // The top bits of the project's seeded 64-bit hash (util::hash_u64: the key xor a random
  // per-process seed, then mix64's two multiplies and three xor-shifts), so an input cannot
  // aim at colliding keys without the seed. Multiply-shift (one multiply, the product's top
  // bits) was used here for speed: it spreads addresses in arithmetic progression evenly
  // for most seeds, but its output is linear in the key, and for some seeds the multiplier's
  // products with the addresses' power-of-two strides share their top bits and build long
  // probe runs. Replaying the live-block inserts and erases of the 10 MB benchmark file's
  // device 0 under 200 seeds (probes per run): multiply-shift median 104k, 99th percentile
  // 798k, worst 1.05M (a replay 7x slower: 1,170 million instructions where 155 million is
  // usual); folding the 128-bit product's halves (util::fold_mul) worst 1.03M; mix64 median
  // 122k, worst 178k. A hash map's worst seed is some user's run: the mix is kept.
  size_t home(uint64_t key) const { return detail::flat_map_home(key, seed_, shift_); }
  // The loop over every entry is out of line: a map grows a few dozen times at most.
  void rehash(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));  // n is a power of two
    detail::flat_map_place(old.data(), old.size(), slots_.data(), mask_, shift_, seed_, sizeof(Slot));
  }

  std::vector<Slot> slots_;
  uint64_t seed_ = util::hash_seed();
  size_t mask_ = 0;
  unsigned shift_ = 64;
  size_t size_ = 0;  // entries, the kEmpty key's among them
  bool has_empty_ = false;
  V empty_value_{};
};

}  // namespace memsnap
