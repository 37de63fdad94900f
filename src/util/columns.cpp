// The switch each column makes once in its life, out of the per-row code (columns.hpp),
// compiled here for the value types memsnap stores: LazyColumn<uint16_t> (a DictColumn's
// indices), LazyColumn<uint32_t> (the trace's stacks), DictColumn<uint32_t> (the upper
// halves of addresses) and DictColumn<uint64_t> (streams). LLVM's SmallVector keeps its
// growth out of line the same way. Without its widening inline, DictColumn::push_back is
// small enough to be inlined into Trace::push_back: the 10 MB benchmark file's load ran
// 2.6% fewer instructions (cachegrind, bench_load).
#include "memsnap/util/columns.hpp"

namespace memsnap::util {

template <class T>
void LazyColumn<T>::densify() {
  v_.resize_uninitialized(n_);
  for (size_t i = 0; i < n_; ++i) v_[i] = fill_;
  dense_ = true;
}

template <class W>
void DictColumn<W>::widen() {
  size_t n = index_.size();
  values_.resize_uninitialized(n);
  for (size_t i = 0; i < n; ++i) values_[i] = table_[index_[i]];
  index_ = LazyColumn<uint16_t>();
  table_ = {};
  ids_ = {};
  wide_ = true;
}

template void LazyColumn<uint16_t>::densify();
template void LazyColumn<uint32_t>::densify();
template void DictColumn<uint32_t>::widen();
template void DictColumn<uint64_t>::widen();

}  // namespace memsnap::util
