// The fast path's opcode loop, its checkpoints, and the entry points behind fast_build().
#include <cstdio>
#include <thread>

#include "fast_builder.hpp"

namespace memsnap::snapshot::detail::fast {

// Between opcodes, every MiB of input, and every half chunk of a read-ahead window.
void FastBuilder::checkpoint() {
  uint64_t at = off(p_);
  if (cancel_ && cancel_->load(std::memory_order_relaxed)) bail();
  if (split_) {
    if (at >= split_stop_) {
      take_tail();
    } else if (split_stop_ == UINT64_MAX && at >= split_try_) {  // start the second half, or hear where
      split_try_ = at + split_step_;
      maybe_split();
    }
    at = off(p_);
  }
  if (window_) {
    window_->release_before(size_t(at));  // only p_ points into the input between opcodes
    next_release_ = at + window_->chunk() / 2;
  }
  if (at >= next_account_) account();
  next_check_ = window_ ? std::min(next_account_, next_release_) : next_account_;
  if (split_) next_check_ = std::min(next_check_, split_stop_ != UINT64_MAX ? split_stop_ : split_try_);
}

// Everything the fast path holds, against the run's memory bound (every MiB of input).
void FastBuilder::account() {
  next_account_ = off(p_) + (uint64_t{1} << 20);
  ticker_.at(off(p_));
  if (!budget_) return;
  uint64_t parse = (stack_.capacity() + fields_.capacity() + atoms_.capacity()) * sizeof(Slot) +
                   opens_.capacity() * sizeof(Open) + memo_.bytes() + spans_.capacity() * sizeof(Span) +
                   span_index_.capacity() * 4 + pending_blocks_.capacity() * sizeof(PendingBlock) +
                   staged_.capacity() * sizeof(Staged) + pstrings_.memory_bytes() + long_strs_.size() * 32 +
                   pframes_.memory_bytes() + pstacks_.memory_bytes() + kept_.capacity();
  uint64_t model = 0;
  for (const auto& [i, d] : devices_) model += d.memory_bytes();
  budget_->set(util::Account::Parse, parse);
  budget_->set(util::Account::Model, model);
}

// ---- the opcode loop ------------------------------------------------------------------------

// The opcodes of a snapshot's pickle, each handled in a few lines or by a helper that reads
// as the opcode's name; anything else gives way to the general path.
FastResult FastBuilder::run() {
  for (;;) {
    if (p_ >= end_ && !more(p_, 1)) bail();
    if (off(p_) >= next_check_) [[unlikely]]
      checkpoint();
    uint8_t c = *p_++;
    switch (c) {
      case op::PROTO: {
        uint8_t v = rd<uint8_t>();
        if (v > 5) bail();
        protocol_ = v;
        break;
      }
      case op::FRAME: {  // a buffering hint
        uint64_t n = rd<uint64_t>();
        if (!frame_fits(p_, n)) bail();  // streaming: the frame is there
        break;
      }
      case op::STOP: return stop();
      case op::MARK: mark(); break;
      case op::EMPTY_DICT: empty_dict(); break;
      case op::EMPTY_LIST: open_container(C_list); break;
      case op::EMPTY_TUPLE: make_tuple(nullptr, 0); break;
      case op::TUPLE1:
      case op::TUPLE2:
      case op::TUPLE3: {
        size_t n = size_t(c - op::TUPLE1 + 1);
        if (stack_.size() < fence() + n) bail();
        make_tuple(stack_.data() + stack_.size() - n, n);
        break;
      }
      case op::TUPLE: {
        size_t m = pop_mark();
        make_tuple(stack_.data() + m, stack_.size() - m);
        break;
      }
      case op::APPEND: append(); break;
      case op::APPENDS: appends(); break;
      case op::SETITEM: setitem(); break;
      case op::SETITEMS: setitems(); break;
      case op::MEMOIZE:
        note_memoize();
        if (stack_.size() <= fence()) bail();
        memo_put(memo_count_, stack_.back());
        ++memo_count_;
        break;
      case op::BINPUT: put(rd<uint8_t>()); break;
      case op::LONG_BINPUT: put(rd<uint32_t>()); break;
      case op::BINGET: push(memo_get(rd<uint8_t>())); break;
      case op::LONG_BINGET: push(memo_get(rd<uint32_t>())); break;
      default: atom(c);
    }
  }
}

// A value with no container: pushed as a slot (strings by where their bytes are).
void FastBuilder::atom(uint8_t c) {
  Slot s;
  switch (c) {
    case op::NONE: break;
    case op::NEWTRUE:
    case op::NEWFALSE:
      s.tag = kBool;
      s.b = c == op::NEWTRUE;
      break;
    case op::BININT1: s = int_slot(rd<uint8_t>()); break;
    case op::BININT2: s = int_slot(rd<uint16_t>()); break;
    case op::BININT: s = int_slot(rd<int32_t>()); break;
    case op::LONG1: s = long_arg(rd<uint8_t>()); break;
    case op::LONG4: {
      int32_t n = rd<int32_t>();
      if (n < 0) bail();
      s = long_arg(uint64_t(n));
      break;
    }
    case op::BINFLOAT:
      s.tag = kFloat;
      s.b = __builtin_bswap64(rd<uint64_t>());
      break;
    case op::SHORT_BINUNICODE: s = str_arg(rd<uint8_t>()); break;
    case op::BINUNICODE: s = str_arg(rd<uint32_t>()); break;
    case op::BINUNICODE8: s = str_arg(rd<uint64_t>()); break;
    case op::SHORT_BINBYTES: s = bytes_arg(rd<uint8_t>()); break;
    case op::BINBYTES: s = bytes_arg(rd<uint32_t>()); break;
    case op::BINBYTES8:
    case op::BYTEARRAY8: s = bytes_arg(rd<uint64_t>()); break;
    default: bail();  // text opcodes, POP, DUP, sets, and everything that imports or calls
  }
  push(s);
}

Slot FastBuilder::long_arg(uint64_t n) {
  need(n);
  Slot s = long_slot(p_, size_t(n));
  p_ += n;
  return s;
}

Slot FastBuilder::str_arg(uint64_t n) {
  need(n);
  Slot s = str_slot(p_, n);
  p_ += n;
  return s;
}

Slot FastBuilder::bytes_arg(uint64_t n) {
  need(n);
  p_ += n;
  Slot s;
  s.tag = kOther;
  return s;
}

FastResult FastBuilder::stop() {
  Slot root = pop();
  if (root.tag != kOpen || root.a != 0 || opens_.size() != 1) bail();
  snap_.form = opens_[0].role == R_top ? Form::Dict : Form::List;
  finish(0);
  opens_.clear();
  FastResult out;
  if (keep_) {  // the decoder goes to the end of its input, past the pickle's: errors there count
    std::optional<uint64_t> decoded = window_->finish();
    // A frame longer than what follows it is cut input: the whole input's decoder and
    // the general path report what is wrong.
    if (!decoded || *decoded < frame_end_) bail();
    out.decoded_bytes = *decoded;
  }
  if (window_) window_->close();  // its pages are not part of the peak that follows
  out.protocol = protocol_;
  out.split = split_taken_;
  out.memo_count = memo_count_;
  out.snapshot = renumber();
  return out;
}

void FastBuilder::mark() {
  if (!stack_.empty() && stack_.back().tag == kOpen && opens_[stack_.back().a].role == R_frames &&
      opens_[stack_.back().a].kind == C_list && try_frames_span(stack_.back().a))
    return;
  if (marks_.size() >= 64) bail();
  marks_.push_back(static_cast<uint32_t>(stack_.size()));
}

void FastBuilder::empty_dict() {
  open_container(C_dict);
  const Open& o = opens_.back();
  if (o.role == R_event) {
    uint32_t parent = o.parent;  // try_event drops the record
    if (try_event(parent)) more_events(parent);
  }
}

size_t FastBuilder::pop_mark() {
  if (marks_.empty()) bail();
  size_t m = marks_.back();
  marks_.pop_back();
  return m;
}

// The open container of kind k right below a MARK at m (APPENDS, SETITEMS).
uint32_t FastBuilder::container_below(size_t m, CKind k) const {
  if (m == 0 || m - 1 < fence() || stack_[m - 1].tag != kOpen || opens_[stack_[m - 1].a].kind != k) bail();
  return stack_[m - 1].a;
}

void FastBuilder::append() {
  Slot x = pop();
  if (stack_.size() <= fence() || stack_.back().tag != kOpen || opens_[stack_.back().a].kind != C_list) bail();
  consume(stack_.back().a, &x, 1);
}

void FastBuilder::appends() {
  size_t m = pop_mark();
  consume(container_below(m, C_list), stack_.data() + m, stack_.size() - m);
  stack_.resize(m);
  if (tail_ && marks_.empty()) [[unlikely]]
    end_of_batch();
}

void FastBuilder::setitem() {
  if (stack_.size() < fence() + 3) bail();
  Slot pair[2] = {stack_[stack_.size() - 2], stack_[stack_.size() - 1]};
  stack_.resize(stack_.size() - 2);
  if (stack_.back().tag != kOpen || opens_[stack_.back().a].kind != C_dict) bail();
  consume(stack_.back().a, pair, 2);
}

void FastBuilder::setitems() {
  size_t m = pop_mark();
  consume(container_below(m, C_dict), stack_.data() + m, stack_.size() - m);
  stack_.resize(m);
}

void FastBuilder::put(uint64_t idx) {
  note_put();
  if (stack_.size() <= fence()) bail();
  memo_put(idx, stack_.back());
}

}  // namespace memsnap::snapshot::detail::fast

namespace memsnap::snapshot::detail {

using fast::Bail;
using fast::FastBuilder;

namespace {

std::optional<FastResult> build(std::span<const uint8_t> input, const io::ByteSource* arriving, io::ReadAhead* window,
                                const uint8_t* back, util::MemoryBudget* budget, const ProgressFn* progress,
                                uint64_t progress_total, const SplitOptions& split = {},
                                const fast::Diagnostics* diag = nullptr) {
  try {
    FastBuilder b(input, arriving, window, back, budget, progress, progress_total, split);
    b.set_diagnostics(diag);
    return b.run();
  } catch (const Bail& b) {
    // Where the fast path gave up (for profiling real files).
    if (diag && *diag) (*diag)("fast path: generic path used (" + fast::where(b) + ")");
    return std::nullopt;
  }
}

}  // namespace

std::optional<FastResult> fast_build(std::span<const uint8_t> input, util::MemoryBudget* budget,
                                     const ProgressFn* progress, const SplitOptions& split) {
  return build(input, nullptr, nullptr, nullptr, budget, progress, input.size(), split);
}

std::optional<FastResult> fast_build(const io::ByteSource& source, util::MemoryBudget* budget,
                                     const ProgressFn* progress, const FastOptions& options) {
  const fast::Diagnostics* diag = options.diagnostics;
  if (!source.streaming()) {
    std::span<const uint8_t> all = source.data();
    // A large input with protocol 4's FRAMEs is parsed in two halves, one on each core, from
    // the mapping; when the second half cannot start or gives up, the first reads on alone
    // (see SplitParse). One without FRAMEs is read ahead on the second core.
    // One thread (LoadOptions::threads, the CLI's MEMSNAP_SPLIT=0) turns it off.
    SplitOptions split;
    split.wait = options.split_wait;
    bool framed = all.size() > 11 && all[0] == pickle::op::PROTO && all[1] >= 4 && all[2] == pickle::op::FRAME;
    if (all.size() >= split.from && framed && options.threads > 1)
      return build(all, nullptr, nullptr, nullptr, budget, progress, all.size(), split, diag);
    auto ahead = source.read_ahead();
    // The window counts against --max-memory while the parse reads it. Under a bound of less
    // than half the file (tight: the model alone may need that much) the mapping serves
    // alone, as it did before there was a window, and the bound passes or fails as it did.
    if (ahead && budget && budget->left() < std::max<uint64_t>(all.size() / 2, ahead->window_bytes())) ahead.reset();
    if (!ahead) return build(all, nullptr, nullptr, nullptr, budget, progress, all.size(), SplitOptions::none(), diag);
    if (budget) budget->set(util::Account::Input, ahead->window_bytes());
    std::span<const uint8_t> now(ahead->base(), ahead->wait_for(1));
    auto out = build(now, nullptr, ahead.get(), all.data(), budget, progress, all.size(), {}, diag);
    if (budget) budget->set(util::Account::Input, 0);
    return out;
  }
  // Compressed input through a window: progress in decoded bytes against the size the input
  // declares (a hint, so only while the parse has not passed it), else in stored bytes; the
  // decoded size at the end. (A line for stored bytes alone would not show for a 1 GB
  // snapshot that compresses to 40 MB: the CLI shows inputs from 100 MB.)
  auto ahead = source.read_ahead();
  if (ahead && budget && budget->left() < ahead->window_bytes()) ahead.reset();
  if (ahead) {
    ProgressFn stored;
    if (progress && *progress)
      stored = [&](uint64_t parsed, uint64_t) {
        if (parsed <= ahead->size_hint())
          (*progress)(parsed, ahead->size_hint());
        else
          (*progress)(ahead->consumed(), source.stored_bytes());
      };
    if (budget) budget->set(util::Account::Input, ahead->window_bytes());
    std::span<const uint8_t> now(ahead->base(), ahead->wait_for(1));
    auto out = build(now, nullptr, ahead.get(), nullptr, budget, &stored, UINT64_MAX, {}, diag);
    ahead.reset();
    if (budget) budget->set(util::Account::Input, 0);
    if (out && stored) (*progress)(*out->decoded_bytes, *out->decoded_bytes);
    return out;
  }
  // Otherwise the decoder reports its progress in stored bytes while it runs; the parse takes
  // over, in decoded bytes, once their number is known.
  ProgressFn parsed;
  if (progress && *progress)
    parsed = [&](uint64_t done, uint64_t) {
      if (auto total = source.decoded_size()) (*progress)(std::min(done, *total), *total);
    };
  std::span<const uint8_t> now(source.begin(), source.wait_for(1));
  auto out = build(now, &source, nullptr, nullptr, budget, &parsed, UINT64_MAX, {}, diag);
  if (out && parsed) {
    source.wait_for(SIZE_MAX);
    parsed(UINT64_MAX, 0);  // done: a parse that ended before the decoder still shows its end
  }
  return out;
}

}  // namespace memsnap::snapshot::detail
