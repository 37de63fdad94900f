// A column of values with few distinct ones: each is stored as a 2-byte index into a
// table of the distinct values (no space at all while the column is constant: see
// LazyColumn), the table searched linearly while short and through a seeded hash
// after. A column that meets more than 65,535 distinct values keeps the values
// themselves from then on (filled in for the earlier rows), so no input is refused.
// The trace uses it for streams and for the upper halves of addresses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "memsnap/util/hash.hpp"
#include "memsnap/util/lazy_column.hpp"
#include "memsnap/util/pod_buffer.hpp"

namespace memsnap::util {

template <class W>
class DictColumn {
 public:
  DictColumn() = default;
  DictColumn(DictColumn&&) noexcept = default;
  DictColumn& operator=(DictColumn&&) noexcept = default;

  DictColumn clone() const {
    DictColumn c;
    c.index_ = index_.clone();
    c.values_ = values_.clone();
    c.table_ = table_;
    c.ids_ = ids_;
    c.wide_ = wide_;
    return c;
  }

  size_t size() const { return wide_ ? values_.size() : index_.size(); }
  W operator[](size_t i) const { return wide_ ? values_[i] : table_[index_[i]]; }
  /// True once the column stores values rather than indices.
  bool wide() const { return wide_; }

  void push_back(W v) {
    if (wide_) {
      values_.push_back(v);
      return;
    }
    uint16_t k = intern(v);
    if (k != kFull) {
      index_.push_back(k);
      return;
    }
    size_t n = index_.size();
    values_.resize_uninitialized(n);
    for (size_t i = 0; i < n; ++i) values_[i] = table_[index_[i]];
    values_.push_back(v);
    index_ = LazyColumn<uint16_t>();
    table_ = {};
    ids_ = {};
    wide_ = true;
  }
  /// Appends src's rows, as push_back would row by row: src's distinct values are looked up
  /// here once each (new ones join the table in the order of their first row, as row by row),
  /// and its rows' indices are translated, or copied when the codes agree.
  void append(const DictColumn& src) {
    size_t m = src.size();
    if (!wide_ && !src.wide_) {
      std::vector<uint16_t> code(src.table_.size());
      bool same = true;
      size_t k = 0;
      for (; k < src.table_.size(); ++k) {
        uint16_t c = intern(src.table_[k]);
        if (c == kFull) break;  // the table is full: the rows below widen the column
        code[k] = c;
        same = same && c == k;
      }
      if (k == src.table_.size()) {
        if (same)
          index_.append(src.index_);
        else
          index_.append(src.index_, [&](uint16_t x) { return code[x]; });
        return;
      }
    }
    for (size_t j = 0; j < m; ++j) push_back(src[j]);
  }
  void reserve(size_t n) { wide_ ? values_.reserve(n) : index_.reserve(n); }
  void trim() { wide_ ? values_.trim() : index_.trim(); }
  size_t memory_bytes() const {
    return index_.memory_bytes() + values_.capacity() * sizeof(W) + table_.capacity() * sizeof(W) + ids_.size() * 32;
  }

 private:
  static constexpr uint16_t kFull = 0xFFFF;  // not an index: the table holds 65,535 values
  uint16_t intern(W v) {
    if (!table_.empty() && table_.back() == v) return static_cast<uint16_t>(table_.size() - 1);
    if (table_.size() < 8) {
      for (size_t k = 0; k < table_.size(); ++k)
        if (table_[k] == v) return static_cast<uint16_t>(k);
    } else if (auto it = ids_.find(v); it != ids_.end()) {
      return it->second;
    }
    if (table_.size() >= kFull) return kFull;
    auto k = static_cast<uint16_t>(table_.size());
    table_.push_back(v);
    if (table_.size() == 8)
      for (size_t j = 0; j < table_.size(); ++j) ids_.emplace(table_[j], static_cast<uint16_t>(j));
    else if (table_.size() > 8)
      ids_.emplace(v, k);
    return k;
  }

  LazyColumn<uint16_t> index_;
  PodBuffer<W> values_;
  std::vector<W> table_;
  std::unordered_map<W, uint16_t, Hasher> ids_;
  bool wide_ = false;
};

}  // namespace memsnap::util
