// The caching allocator's rules as one model: following a trace and simulating one.
#include "memsnap/analysis/allocator_model.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>

#include "memsnap/util/units.hpp"

namespace memsnap::analysis {

static_assert(sizeof(ModelBlock) == 40, "the tag lives in what was padding: the table's slots do not grow");

using rules::kLargeBuffer;
using rules::kMinBlockSize;
using rules::kSmallBuffer;
using rules::kSmallSize;

namespace {
constexpr uint64_t kNone = ModelBlock::kNone;

uint64_t page_of(const PoolKey& k) {
  return k.small ? kSmallBuffer : kLargeBuffer;
}
uint64_t round_up(uint64_t v, uint64_t to) {
  return v > UINT64_MAX - to ? UINT64_MAX / to * to : (v + to - 1) / to * to;
}
}  // namespace

ModelSettings ModelSettings::from(const snapshot::AllocatorSettings& s) {
  ModelSettings m;
  m.expandable_segments = s.expandable_segments;
  m.max_split_size = s.max_split_size;
  m.roundup_power2_divisions = s.roundup_power2_divisions;
  m.garbage_collection_threshold = s.garbage_collection_threshold;
  return m;
}

snapshot::AllocatorSettings ModelSettings::as_allocator_settings() const {
  snapshot::AllocatorSettings s;
  s.expandable_segments = expandable_segments;
  s.max_split_size = max_split_size;
  s.roundup_power2_divisions = roundup_power2_divisions;
  s.garbage_collection_threshold = garbage_collection_threshold;
  return s;
}

namespace {

bool power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

// CUDAAllocatorConfig::parseRoundUpPower2Divisions, the list form: [SIZE_MB:N,...,>:N] (N a
// power of two or 0). Each SIZE (a power of two, in MiB) sets the divisions of its interval
// (log2 of it, 0 to 15); the first also fills every interval below it; `>` fills every
// interval after the last one given.
std::optional<std::string> parse_divisions(ModelSettings& s, const std::string& value) {
  const std::string refusal =
      "roundup_power2_divisions takes N or a list [SIZE_MB:N,...,>:N] (SIZE_MB a power of two, N one or 0), not '" +
      value + "'";
  if (value.size() < 3 || value.back() != ']') return refusal;
  std::array<uint64_t, 16> div{};
  size_t last = 0;
  bool any = false;
  const std::string inner = value.substr(1, value.size() - 2);
  for (size_t from = 0; from <= inner.size();) {
    size_t comma = inner.find(',', from);
    const std::string item = inner.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) return refusal;
    const std::string k = item.substr(0, colon), v = item.substr(colon + 1);
    uint64_t n = 0, size = 0;
    auto [vend, vec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (vec != std::errc() || vend != v.data() + v.size() || (n != 0 && !power_of_two(n)) || n > (1u << 16))
      return refusal;
    if (k == ">") {
      std::fill(div.begin() + static_cast<ptrdiff_t>(std::min(last + 1, div.size())), div.end(), n);
    } else {
      auto [kend, kec] = std::from_chars(k.data(), k.data() + k.size(), size);
      if (kec != std::errc() || kend != k.data() + k.size() || !power_of_two(size)) return refusal;
      const size_t index = std::min<size_t>(static_cast<size_t>(std::bit_width(size) - 1), div.size() - 1);
      if (!any) std::fill(div.begin(), div.begin() + static_cast<ptrdiff_t>(index), n);
      div[index] = n;
      last = index;
    }
    any = true;
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (!any) return refusal;
  s.roundup_power2_divisions.clear();
  for (size_t i = 0; i < div.size(); ++i) s.roundup_power2_divisions.push_back({uint64_t{1} << i, div[i]});
  return std::nullopt;
}

}  // namespace

std::optional<std::string> apply_setting(ModelSettings& s, const std::string& kv) {
  auto colon = kv.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == kv.size())
    return "expected KEY:VALUE as in PYTORCH_CUDA_ALLOC_CONF, e.g. expandable_segments:True";
  std::string key = kv.substr(0, colon), value = kv.substr(colon + 1);
  auto number = [&](uint64_t max) -> std::optional<uint64_t> {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v > max) return std::nullopt;
    return v;
  };
  if (key == "expandable_segments") {
    if (value == "True" || value == "true" || value == "1") return s.expandable_segments = true, std::nullopt;
    if (value == "False" || value == "false" || value == "0") return s.expandable_segments = false, std::nullopt;
    return "expandable_segments takes True or False, not '" + value + "'";
  }
  if (key == "max_split_size_mb") {
    auto v = number(uint64_t{1} << 40);
    if (!v) return "max_split_size_mb takes a number of MiB, not '" + value + "'";
    // CUDAAllocatorConfig::parseMaxSplitSize refuses 20 or less ("max_split_size_mb too small,
    // must be > 20"): a large segment is at least kLargeBuffer. SIZE_MAX (no limit) when absent.
    if (*v <= (kLargeBuffer >> 20))
      return "max_split_size_mb must be more than 20, as PyTorch requires, not '" + value + "'";
    s.max_split_size = *v << 20;
    return std::nullopt;
  }
  if (key == "roundup_power2_divisions" && value.front() == '[') return parse_divisions(s, value);
  if (key == "roundup_power2_divisions") {
    auto v = number(1u << 16);
    if (!v || (*v != 0 && (*v & (*v - 1)) != 0))
      return "roundup_power2_divisions takes a power of two (or 0), not '" + value + "'";
    s.roundup_power2_divisions.clear();
    for (uint64_t mib = 1; mib <= 32768; mib *= 2) s.roundup_power2_divisions.push_back({mib, *v});
    return std::nullopt;
  }
  if (key == "garbage_collection_threshold") {
    double v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || !(v > 0.0 && v < 1.0))
      return "garbage_collection_threshold takes a number between 0 and 1 (exclusive), not '" + value + "'";
    s.garbage_collection_threshold = v;
    return std::nullopt;
  }
  return "unknown setting '" + key +
         "' (known: expandable_segments, max_split_size_mb, roundup_power2_divisions, "
         "garbage_collection_threshold)";
}

AllocatorModel::AllocatorModel(ModelSettings settings, bool simulate)
    : settings_(std::move(settings)), rounding_(settings_.as_allocator_settings()), simulate_(simulate) {}

// ---------------------------------------------------------------- bookkeeping

void AllocatorModel::index_free_simulated(uint64_t addr, const ModelBlock& b, bool add) {
  auto seg = segments_.find(b.segment);
  if (seg == segments_.end()) return;
  auto key = std::tuple{seg->second.pool, b.size, addr};
  if (add)
    free_.insert(key);
  else
    free_.erase(key);
}

void AllocatorModel::adjust_segment_active(uint64_t seg_addr, int64_t delta) {
  auto it = segments_.find(seg_addr);
  if (it == segments_.end()) return;
  t_.stranded -= segment_stranded(it->second);
  it->second.active += static_cast<uint64_t>(delta);
  t_.stranded += segment_stranded(it->second);
}

// Cuts the block at addr after first_size bytes; the rest is a block of the same state.
// Two probes (the caller has found the block): its next neighbour, the new block (which may
// move the others).
void AllocatorModel::split(uint64_t addr, ModelBlock* b, uint64_t first_size, std::optional<ModelState> first_state) {
  if (first_size == 0 || first_size >= b->size) {  // nothing to cut off (a hostile trace's sizes)
    if (first_state) set_state(addr, *b, *first_state);
    return;
  }
  if (b->state == ModelState::Free) index_free(addr, *b, false);
  ModelBlock rest = *b;
  rest.tag = ModelBlock::kNoTag;
  rest.size = b->size - first_size;
  rest.prev = addr;
  const uint64_t rest_addr = addr + first_size;
  b->size = first_size;
  b->next = rest_addr;
  if (b->state == ModelState::Free) index_free(addr, *b, true);
  if (first_state) set_state(addr, *b, *first_state);  // before the insert, which may move b
  if (rest.next != kNone)
    if (ModelBlock* n = blocks_.find(rest.next)) n->prev = rest_addr;
  blocks_.try_emplace(rest_addr, rest);
  if (rest.state == ModelState::Free) index_free(rest_addr, rest, true);
}

// Merges the free block at addr with free neighbours; returns the merged block's address.
// Every pointer is taken before the first erase (an erase moves entries of the table).
uint64_t AllocatorModel::merge_free(uint64_t addr, ModelBlock* bp) {
  ModelBlock b = *bp;
  ModelBlock* n = b.next != kNone ? blocks_.find(b.next) : nullptr;
  ModelBlock* p = b.prev != kNone ? blocks_.find(b.prev) : nullptr;
  const bool with_next = n && n->state == ModelState::Free, with_prev = p && p->state == ModelState::Free;
  if (!with_next && !with_prev) return addr;
  index_free(addr, b, false);
  const uint64_t next_addr = b.next, prev_addr = b.prev;
  if (with_next) {
    index_free(next_addr, *n, false);
    b.size += n->size;
    b.next = n->next;
  }
  uint64_t keep = addr;
  ModelBlock merged = b;
  if (with_prev) {
    index_free(prev_addr, *p, false);
    p->size += b.size;
    p->next = b.next;
    keep = prev_addr;
    merged = *p;
  } else {
    *bp = b;
  }
  if (merged.next != kNone)
    if (ModelBlock* after = blocks_.find(merged.next)) after->prev = keep;
  if (with_next) blocks_.erase(next_addr);
  if (with_prev) blocks_.erase(addr);
  index_free(keep, merged, true);
  return keep;
}

uint64_t AllocatorModel::covering_start(uint64_t addr) const {
  auto seg = segments_.upper_bound(addr);
  if (seg == segments_.begin()) return kNone;
  --seg;
  if (addr >= seg->first + seg->second.size) return kNone;
  // Walk the segment's blocks: only for an address the trace and the model disagree on.
  for (uint64_t a = seg->first; a != kNone;) {
    const ModelBlock* b = blocks_.find(a);
    if (!b || walk_budget_ == 0) return kNone;
    --walk_budget_;
    if (addr < a + b->size) return a;
    a = b->next;
  }
  return kNone;
}

ModelBlock* AllocatorModel::find_covering(uint64_t addr) {
  if (ModelBlock* b = blocks_.find(addr)) return b;
  uint64_t start = covering_start(addr);
  return start == kNone ? nullptr : blocks_.find(start);
}

uint64_t AllocatorModel::free_after(uint64_t addr) const {
  const ModelBlock* b = blocks_.find(addr);
  if (!b || b->next == kNone) return 0;
  const ModelBlock* n = blocks_.find(b->next);
  return n && n->state == ModelState::Free ? n->size : 0;
}

// ---------------------------------------------------------------- following a trace

void AllocatorModel::add_segment(uint64_t addr, uint64_t size, PoolKey pool, bool expandable) {
  if (size == 0 || segments_.count(addr)) return;
  segments_[addr] = ModelSegment{size, pool, expandable, 0};
  t_.reserved += size;
  ModelBlock b;
  b.size = size;
  b.segment = addr;
  b.small = pool.small;
  b.expandable = expandable;
  blocks_.try_emplace(addr, b);
  index_free(addr, b, true);
  note_peak();
}

bool AllocatorModel::remove_segment(uint64_t addr, uint64_t size) {
  auto it = segments_.find(addr);
  if (it == segments_.end()) return false;
  bool clean = it->second.size == size && it->second.active == 0;
  for (uint64_t a = addr; a != kNone;) {
    const ModelBlock* b = blocks_.find(a);
    if (!b) break;
    ModelBlock copy = *b;
    if (copy.state == ModelState::Free) index_free(a, copy, false);
    if (copy.state == ModelState::Allocated) t_.allocated -= copy.size;
    if (copy.state != ModelState::Free) t_.active -= copy.size;
    if (copy.tag != ModelBlock::kNoTag) dropped_tags_.emplace_back(a, copy.tag);
    blocks_.erase(a);
    a = copy.next;
  }
  t_.stranded -= segment_stranded(it->second);
  t_.reserved -= it->second.size;
  segments_.erase(it);
  return clean;
}

void AllocatorModel::map(uint64_t addr, uint64_t size, PoolKey pool) {
  if (size == 0) return;
  // The new bytes: a free block of a range of their own, then joined to the ranges either side.
  add_segment(addr, size, pool, true);
  auto it = segments_.find(addr);
  auto join = [&](std::map<uint64_t, ModelSegment>::iterator left, std::map<uint64_t, ModelSegment>::iterator right) {
    // Right's blocks move into left's range; the last block of left links to right's first.
    uint64_t last = left->first;
    for (const ModelBlock* b = blocks_.find(last); b && b->next != kNone; b = blocks_.find(last)) last = b->next;
    for (uint64_t a = right->first; a != kNone;) {
      ModelBlock* b = blocks_.find(a);
      if (!b) break;
      if (b->state == ModelState::Free) index_free(a, *b, false);
      b->segment = left->first;
      a = b->next;
    }
    if (ModelBlock* l = blocks_.find(last)) l->next = right->first;
    if (ModelBlock* r = blocks_.find(right->first)) r->prev = last;
    t_.stranded -= segment_stranded(left->second) + segment_stranded(right->second);
    left->second.size += right->second.size;
    left->second.active += right->second.active;
    t_.stranded += segment_stranded(left->second);
    for (uint64_t a = right->first; a != kNone;) {
      ModelBlock* b = blocks_.find(a);
      if (!b) break;
      if (b->state == ModelState::Free) index_free(a, *b, true);
      a = b->next;
    }
    segments_.erase(right);
    return left;
  };
  auto next = std::next(it);
  if (next != segments_.end() && next->first == addr + size && next->second.expandable &&
      next->second.pool.stream == pool.stream)
    it = join(it, next);
  if (it != segments_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size == addr && prev->second.expandable && prev->second.pool.stream == pool.stream)
      it = join(prev, it);
  }
  merge_free(addr, blocks_.find(addr));
}

bool AllocatorModel::unmap(uint64_t addr, uint64_t size) {
  if (size == 0) return false;  // a segment_unmap without its size (found by memsnap_fuzz)
  uint64_t start = covering_start(addr);
  if (start == kNone) return false;
  ModelBlock b = *blocks_.find(start);
  if (b.state != ModelState::Free || addr + size > start + b.size) return false;
  // Cut [addr, addr + size) out of the free block, then out of its range.
  if (start < addr) split(start, blocks_.find(start), addr - start);
  if (ModelBlock* cut = blocks_.find(addr); size < cut->size) split(addr, cut, size);
  ModelBlock gone = *blocks_.find(addr);
  auto seg = segments_.find(gone.segment);
  if (seg == segments_.end()) return false;
  index_free(addr, gone, false);
  ModelSegment range = seg->second;
  uint64_t range_start = seg->first;
  t_.stranded -= segment_stranded(range);
  segments_.erase(seg);
  t_.reserved -= size;
  blocks_.erase(addr);
  // The left part keeps range_start; the right part becomes a range at addr + size.
  uint64_t left_size = addr - range_start, right_size = range_start + range.size - (addr + size);
  uint64_t left_active = 0;
  if (gone.prev != kNone) {
    if (ModelBlock* p = blocks_.find(gone.prev)) p->next = kNone;
    // Segments' live bytes are kept only when simulating (set_state).
    for (uint64_t a = simulate_ ? range_start : kNone; a != kNone;) {
      const ModelBlock* x = blocks_.find(a);
      if (!x) break;
      if (x->state != ModelState::Free) left_active += x->size;
      a = x->next;
    }
    segments_[range_start] = ModelSegment{left_size, range.pool, true, left_active};
    t_.stranded += segment_stranded(segments_[range_start]);
  }
  if (gone.next != kNone) {
    uint64_t right = addr + size;
    if (ModelBlock* r = blocks_.find(right)) r->prev = kNone;
    for (uint64_t a = right; a != kNone;) {
      ModelBlock* x = blocks_.find(a);
      if (!x) break;
      if (x->state == ModelState::Free) index_free(a, *x, false);
      x->segment = right;
      a = x->next;
    }
    segments_[right] = ModelSegment{right_size, range.pool, true, range.active - left_active};
    t_.stranded += segment_stranded(segments_[right]);
    for (uint64_t a = right; a != kNone;) {
      ModelBlock* x = blocks_.find(a);
      if (!x) break;
      if (x->state == ModelState::Free) index_free(a, *x, true);
      a = x->next;
    }
  }
  return true;
}

bool AllocatorModel::place(uint64_t addr, uint64_t size, ModelState state) {
  if (size == 0) return false;
  // Blocks come in address order: the next one is most often inside the free block after the
  // last (no walk from the segment's start each time).
  uint64_t start = kNone;
  if (const ModelBlock* h = place_hint_ != kNone ? blocks_.find(place_hint_) : nullptr;
      h && h->state == ModelState::Free && place_hint_ <= addr && addr < place_hint_ + h->size)
    start = place_hint_;
  if (start == kNone) start = covering_start(addr);
  if (start == kNone) return false;
  ModelBlock b = *blocks_.find(start);
  if (b.state != ModelState::Free || addr + size > start + b.size) return false;
  if (start < addr) split(start, blocks_.find(start), addr - start);
  if (ModelBlock* cut = blocks_.find(addr); size < cut->size) split(addr, cut, size);
  set_state(addr, *blocks_.find(addr), state);
  peak_reserved_ = 0;  // the seeded start state is the first moment measured
  note_peak();
  place_hint_ = blocks_.contains(addr + size) ? addr + size : kNone;
  return true;
}

AllocatorModel::Followed AllocatorModel::alloc_at(uint64_t addr, uint64_t rounded, uint32_t tag) {
  Followed out{rounded, true, true};
  ModelBlock* b = blocks_.find(addr);
  if (!b || b->state != ModelState::Free) {
    // The trace puts a block where the model has none free at that address: trust the trace.
    uint64_t start = covering_start(addr);
    if (start == kNone || blocks_.find(start)->state != ModelState::Free) return {rounded, false, false};
    split(start, blocks_.find(start), addr - start);
    out.exact = false;
    b = blocks_.find(addr);
  }
  b->tag = tag;  // before split, whose insert may move b (the rest it splits off has none)
  const snapshot::Pool pool = b->small ? snapshot::Pool::Small : snapshot::Pool::Large;
  if (b->size < rounded) {
    out.exact = false;  // the free block is too small for the request: the layout is off
  } else if (rules::should_split(b->size, rounded, pool, b->expandable, settings_.max_split_size)) {
    split(addr, b, rounded, ModelState::Allocated);
    return out;
  }
  out.size = b->size;
  set_state(addr, *b, ModelState::Allocated);
  return out;
}

bool AllocatorModel::free_requested(uint64_t addr, ModelBlock* b) {
  if (!b || b->state != ModelState::Allocated) return false;
  set_state(addr, *b, ModelState::Pending);
  return true;
}

bool AllocatorModel::free_completed(uint64_t addr, ModelBlock* b) {
  if (!b || b->state == ModelState::Free) return false;
  set_state(addr, *b, ModelState::Free);
  merge_free(addr, b);
  return true;
}

std::vector<std::pair<uint64_t, std::vector<LayoutBlock>>> AllocatorModel::layout() const {
  std::vector<std::pair<uint64_t, std::vector<LayoutBlock>>> out;
  for (const auto& [addr, seg] : segments_) {
    std::vector<LayoutBlock> blocks;
    for (uint64_t a = addr; a != kNone;) {
      const ModelBlock* b = blocks_.find(a);
      if (!b) break;
      blocks.push_back({a, b->size, b->state});
      a = b->next;
    }
    out.emplace_back(addr, std::move(blocks));
  }
  return out;
}

// ---------------------------------------------------------------- simulating

std::optional<uint64_t> AllocatorModel::find_free(const PoolKey& pool, uint64_t rounded) {
  auto it = free_.lower_bound(std::tuple{pool, rounded, uint64_t{0}});
  if (it == free_.end() || std::get<0>(*it) != pool) return std::nullopt;
  if (settings_.expandable_segments) {
    // get_free_block: a block followed by unmapped space counts as what it could grow to.
    auto reach = [&](const auto& key) {
      uint64_t a = std::get<2>(key);
      const ModelBlock* b = blocks_.find(a);
      uint64_t grow = 0;
      auto r = reservations_.find(pool);
      if (b && b->next == kNone && r != reservations_.end()) {
        uint64_t end = a + b->size;
        auto nxt = segments_.lower_bound(end);
        uint64_t limit = nxt != segments_.end() && nxt->first < r->second.second ? nxt->first : r->second.second;
        grow = limit > end ? limit - end : 0;
      }
      return std::get<1>(key) + grow;
    };
    for (auto next = std::next(it); next != free_.end() && std::get<0>(*next) == pool && reach(*next) < reach(*it);
         ++next)
      it = next;
  }
  if (!rules::oversize_allows(std::get<1>(*it), rounded, settings_.max_split_size)) return std::nullopt;
  return std::get<2>(*it);
}

std::optional<uint64_t> AllocatorModel::new_segment(const PoolKey& pool, uint64_t rounded) {
  uint64_t size = rules::segment_size_for(rounded);
  if (t_.reserved > settings_.capacity || size > settings_.capacity - t_.reserved) return std::nullopt;
  uint64_t addr = 0;
  bool hinted = false;
  if (next_hint_ < hints_.size() && hints_[next_hint_].first == size) {
    addr = hints_[next_hint_++].second;
    auto after = segments_.lower_bound(addr);
    bool clash = (after != segments_.end() && after->first < addr + size) ||
                 (after != segments_.begin() && std::prev(after)->first + std::prev(after)->second.size > addr);
    hinted = !clash && addr + size > addr;
  }
  if (!hinted) {
    addr = next_address_;
    next_address_ += round_up(size, kSmallBuffer);
  }
  add_segment(addr, size, pool, false);
  ++c_.segment_allocs;
  seg_sizes_.push_back(size);
  return addr;
}

// try_allocate_expandable: map pages at the lowest unmapped range that, with the free block
// ending right before it, holds the request.
std::optional<uint64_t> AllocatorModel::grow_expandable(const PoolKey& pool, uint64_t rounded) {
  auto r = reservations_.find(pool);
  if (r == reservations_.end()) {
    uint64_t va = uint64_t{1} << 44;  // the reservation: far larger than any device
    r = reservations_.emplace(pool, std::pair{next_address_, next_address_ + va}).first;
    next_address_ += va + kLargeBuffer * 64;
  }
  auto [lo, hi] = r->second;
  const uint64_t page = page_of(pool);
  uint64_t cursor = lo;
  uint64_t have = 0, gap_start = 0;
  bool found = false;
  for (auto it = segments_.lower_bound(lo);; ++it) {
    uint64_t range_start = it == segments_.end() || it->first >= hi ? hi : it->first;
    if (range_start > cursor) {  // unmapped [cursor, range_start)
      uint64_t before = 0;
      if (cursor > lo) {
        uint64_t last = covering_start(cursor - 1);
        const ModelBlock* b = last == kNone ? nullptr : blocks_.find(last);
        if (b && b->state == ModelState::Free) before = b->size;
      }
      if (before + (range_start - cursor) >= rounded) {
        have = before;
        gap_start = cursor;
        found = true;
        break;
      }
    }
    if (range_start >= hi) break;
    cursor = it->first + it->second.size;
  }
  if (!found) return std::nullopt;
  // find_expandable_block: a free block before the gap already as large as the request is
  // returned as it is, nothing mapped (it was refused by get_free_block's oversize rule).
  if (have >= rounded) return covering_start(gap_start - 1);
  uint64_t bytes = round_up(rounded - have, page);
  if (t_.reserved > settings_.capacity || bytes > settings_.capacity - t_.reserved) return std::nullopt;
  map(gap_start, bytes, pool);
  ++c_.segment_allocs;
  seg_sizes_.push_back(bytes);
  return have ? covering_start(gap_start - 1) : gap_start;
}

uint64_t AllocatorModel::unmap_free_pages() {
  uint64_t released = 0;
  std::vector<std::tuple<uint64_t, uint64_t>> cuts;
  for (const auto& [seg_addr, seg] : segments_) {
    if (!seg.expandable) continue;
    auto r = reservations_.find(seg.pool);
    uint64_t base = r != reservations_.end() ? r->second.first : seg_addr;
    uint64_t page = page_of(seg.pool);
    for (uint64_t a = seg_addr; a != kNone;) {
      const ModelBlock* b = blocks_.find(a);
      if (!b) break;
      if (b->state == ModelState::Free) {
        uint64_t lo = base + round_up(a - base, page), hi = base + (a + b->size - base) / page * page;
        if (hi > lo) cuts.emplace_back(lo, hi - lo);
      }
      a = b->next;
    }
  }
  for (auto [a, n] : cuts)
    if (unmap(a, n)) {
      released += n;
      ++c_.segment_frees;
    }
  return released;
}

// release_cached_blocks: frees every wholly free segment and unmaps the free pages of
// expandable ranges; returns whether anything was freed.
bool AllocatorModel::release_cached(std::optional<uint64_t> at_least_block) {
  // Either kind of segment may be there whatever the setting: a start state recorded under
  // other settings keeps its segments.
  const bool unmapped = !at_least_block && unmap_free_pages() > 0;
  std::vector<std::pair<uint64_t, uint64_t>> empty;
  for (const auto& [addr, seg] : segments_)
    if (!seg.expandable && seg.active == 0 && (!at_least_block || seg.size >= *at_least_block))
      empty.emplace_back(addr, seg.size);
  for (auto [addr, size] : empty) {
    remove_segment(addr, size);
    ++c_.segment_frees;
  }
  return unmapped || !empty.empty();
}

void AllocatorModel::empty_cache(bool retry) {
  release_cached(std::nullopt);
  c_.retries += retry;
}

// release_available_cached_blocks: with max_split_size set, in the request's own pool and
// stream, the smallest cached block of at least max(request, max_split_size) is freed; when
// there is none, the largest cached oversize blocks, largest first, until that much is freed
// (those freed stay freed when it is not enough). True when enough was freed. Oversize
// blocks are never split, so each is a whole segment.
bool AllocatorModel::release_available(const PoolKey& pool, uint64_t rounded) {
  if (!settings_.max_split_size) return false;
  const uint64_t mss = *settings_.max_split_size, key = std::max(rounded, mss);
  auto release = [&](uint64_t addr) -> uint64_t {
    const ModelBlock* b = blocks_.find(addr);
    if (!b || b->prev != kNone || b->next != kNone || b->expandable) return 0;  // not a whole segment
    const uint64_t size = b->size;
    remove_segment(addr, size);
    ++c_.segment_frees;
    return size;
  };
  auto it = free_.lower_bound(std::tuple{pool, key, uint64_t{0}});
  if (it != free_.end() && std::get<0>(*it) == pool) return release(std::get<2>(*it)) > 0;
  if (it == free_.begin()) return false;
  --it;  // the largest cached block of the pool, if it is the request's pool
  uint64_t released = 0;
  while (released < key && std::get<0>(*it) == pool && std::get<1>(*it) >= mss) {
    const uint64_t addr = std::get<2>(*it);
    const bool first = it == free_.begin();
    if (!first) --it;  // before the release erases the entry
    released += release(addr);
    if (first) break;
  }
  return released >= key;
}

AllocatorModel::Malloc AllocatorModel::malloc_simulated(uint64_t requested, uint64_t stream) {
  Malloc out;
  out.rounded = rules::round_size(requested, rounding_);
  out.alloc_size = rules::segment_size_for(out.rounded);
  PoolKey pool{stream, out.rounded <= kSmallSize, 0, 0};
  std::optional<uint64_t> addr = find_free(pool, out.rounded);
  if (!addr) {
    // garbage_collection_threshold: PyTorch collects only under set_per_process_memory_fraction,
    // which a snapshot does not record; the model never does.
    auto grow = [&] {
      return settings_.expandable_segments ? grow_expandable(pool, out.rounded) : new_segment(pool, out.rounded);
    };
    addr = grow();
    if (!addr && !settings_.expandable_segments && release_available(pool, out.rounded)) addr = grow();
    if (!addr) {
      // release_cached_blocks, then alloc_block(isRetry): PyTorch counts the retry whether or
      // not the flush freed anything.
      release_cached(std::nullopt);
      ++c_.retries;
      addr = grow();
    }
    if (!addr && capacity_lower_bound_ && settings_.capacity != UINT64_MAX) {
      // Only a lower bound on the device: the run needs more than it shows, not an OOM.
      settings_.capacity = UINT64_MAX;
      lower_bound_exceeded_ = true;
      addr = grow();
    }
    if (!addr) return out;
  }
  if (*addr == kNone || !alloc_at(*addr, out.rounded).tagged) {
    // The model found room but could not take a block there (its walk budget ran out on a
    // hostile trace): the request is not served, and the caller says why.
    out.unplaced = true;
    return out;
  }
  out.addr = addr;
  return out;
}

}  // namespace memsnap::analysis
