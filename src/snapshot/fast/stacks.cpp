// The fast path's frames lists: stacks interned from frames, and runs of memo GETs
// recognised by their bytes (spans).
#include "fast_builder.hpp"

namespace memsnap::snapshot::detail::fast {

// ---- stacks ---------------------------------------------------------------------------------

uint32_t FastBuilder::extend_stack(uint32_t base, std::span<const FrameId> more) {
  if (more.empty()) return base;
  if (base == 0) return pstacks_.intern(more).v;
  std::vector<FrameId> all(pstacks_[StackId{base}].begin(), pstacks_[StackId{base}].end());
  all.insert(all.end(), more.begin(), more.end());
  return pstacks_.intern(all).v;
}

uint32_t FastBuilder::decode_span(const uint8_t* a, const uint8_t* b) {
  tmp_frames_.clear();
  for (const uint8_t* q = a; q < b;) {
    uint32_t idx;
    if (*q == op::BINGET) {
      idx = q[1];
      q += 2;
    } else {
      std::memcpy(&idx, q + 1, 4);
      q += 5;
    }
    uint32_t h = memo_.get(idx);
    if (tail_ && h == 0) [[unlikely]] {
      tmp_frames_.push_back(deferred_frame(idx, memo_count_));
      continue;
    }
    if ((h & ~Memo::kPayload) != Memo::kFrame) bail();
    tmp_frames_.push_back(FrameId{h & Memo::kPayload});
  }
  return pstacks_.intern(tmp_frames_).v;
}

// At "(" right after an open frames list: a run of memo GETs up to APPENDS is looked up by
// its bytes. Returns false (nothing consumed) when the batch holds anything else.
bool FastBuilder::try_frames_span(uint32_t rec) {
  const uint8_t* a = p_;
  const uint8_t* q = pickle::Scanner::skip_memo_gets(a, end_);
  if (q >= end_ || *q != op::APPENDS) return false;
  const uint8_t* b = q;
  uint64_t len = uint64_t(b - a);
  uint32_t stack = 0;
  if (len > 0) {
    uint64_t h = util::hash_bytes(a, len, seed_);
    size_t i = find_span(a, len, h);
    if (span_index_[i] != kNone32) {
      Span& s = spans_[span_index_[i]];
      if (s.epoch != epoch_) {  // same bytes, but a memo entry changed since: decode again
        s.stack = decode_span(a, b);
        s.epoch = epoch_;
      }
      stack = s.stack;
    } else {
      stack = decode_span(a, b);
      if (spans_.size() >= 0xFFFFFFF0u) bail();
      spans_.push_back(Span{h, keep_ ? keep(a, len) : off(a), static_cast<uint32_t>(len), stack, epoch_});
      span_index_[i] = static_cast<uint32_t>(spans_.size() - 1);
      if (spans_.size() * 2 > span_index_.size()) {
        std::vector<uint32_t> grown(span_index_.size() * 2, kNone32);
        size_t gm = grown.size() - 1;
        for (uint32_t k = 0; k < spans_.size(); ++k) {
          size_t j = spans_[k].hash & gm;
          while (grown[j] != kNone32) j = (j + 1) & gm;
          grown[j] = k;
        }
        span_index_.swap(grown);
      }
    }
  }
  Open& o = opens_[rec];
  if (o.read) bail();
  size_t frames = pstacks_[StackId{stack}].size();
  if (o.value == 0) {
    o.value = stack;
  } else {
    auto more = pstacks_[StackId{stack}];
    std::vector<FrameId> copy(more.begin(), more.end());
    o.value = extend_stack(o.value, copy);
  }
  o.count += static_cast<uint32_t>(frames);
  p_ = b + 1;
  return true;
}

const uint8_t* FastBuilder::skip_frame_ops_slow(const uint8_t* q) {
  while (q < end_ && *q == op::FRAME) {
    if (end_ - q < 9 && !more(q, 9)) bail();
    uint64_t n;
    std::memcpy(&n, q + 1, 8);
    q += 9;
    if (!frame_fits(q, n)) bail();
  }
  return q;
}

}  // namespace memsnap::snapshot::detail::fast
