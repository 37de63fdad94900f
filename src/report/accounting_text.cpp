// Text of the accounting ("free memory by cause"), --fits and allocator-settings sections.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <ostream>
#include <vector>

#include "memsnap/analysis/allocator_rules.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/util/units.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report::detail {

namespace {

// The same columns as the totals rows of `analyze`, so the numbers line up.
constexpr size_t kTopSites = 5;  // pinning sites shown in text (JSON lists all)

void row(std::ostream& out, const std::string& label, uint64_t bytes) {
  out << "  " << pad_right(label, kLabel) << pad_left(with_commas(bytes), kBytes)
      << pad_left(human_bytes(bytes), kHuman) << '\n';
}

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// "512", "1K", "16M", "2G": a power of two, short.
std::string short_pow2(uint64_t v) {
  static const char* units[] = {"", "K", "M", "G", "T", "P", "E"};
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + units[u];
}

std::string bucket_label(const analysis::SizeBucket& b) {
  return short_pow2(b.min_bytes) + "-" + short_pow2(b.max_bytes) + ":" + with_commas(b.blocks);
}

std::string heading(const std::string& text, const TextStyle& style) {
  return style.color ? "\033[1m" + text + "\033[0m" : text;
}

std::string regime_line(const analysis::Accounting& f) {
  switch (f.regime) {
    case analysis::Regime::Classic: return "classic segments: cudaFree returns a segment only when all of it is free";
    case analysis::Regime::Expandable:
      return "expandable segments: whole free pages (2 MiB small, 20 MiB large) are unmapped, partial pages stay";
    case analysis::Regime::Mixed: return "mixed: classic segments are returned whole, expandable ones page by page";
  }
  return "";
}

// Free memory split by why it is free (internal, pending, external and its parts),
// with what empty_cache() would return and what private pools keep.
void write_cause_rows(std::ostream& out, const analysis::Accounting& f, size_t width) {
  row(out, "free (reserved - requested)", f.internal_free_bytes + f.pending_free_bytes + f.external_free_bytes);
  row(out, "  internal (rounding slack)", f.internal_free_bytes);
  row(out, "  pending (awaiting other streams)", f.pending_free_bytes);
  row(out, "  external (cached free blocks)", f.external_free_bytes);
  row(out, "    releasable (empty_cache frees)", f.releasable_bytes);
  row(out, "    stranded (pinned by allocations)", f.stranded_bytes);
  if (f.private_held_bytes) row(out, "    held by private pools", f.private_held_bytes);
  if (f.empty_cache_pending_bytes)
    out << wrap_block("torch.cuda.empty_cache() would return " + human_bytes(f.empty_cache_bytes()) +
                          " in all: the releasable bytes and " + human_bytes(f.empty_cache_pending_bytes) +
                          " of pending frees in segments with no allocated block (it waits for their streams first)",
                      width, 4);
  if (f.private_held_bytes)
    out << wrap_block(
        "private pools (CUDA graphs, MemPool) keep their free blocks until the graph or pool is "
        "destroyed; empty_cache() does not return them before",
        width, 4);
}

// One row per pool and stream, then what "frag" means.
void write_pool_table(std::ostream& out, const analysis::Accounting& f, size_t width) {
  size_t pool_w = 7, stream_w = 8;
  for (const auto& p : f.pools) {
    pool_w = std::max(pool_w, pool_label(p.pool, p.pool_id).size() + 2);
    stream_w = std::max(stream_w, stream_name(p.stream).size() + 2);
  }
  out << '\n'
      << "  " << pad_right("pool", pool_w) << pad_right("stream", stream_w) << pad_left("segs", 6)
      << pad_left("reserved", 12) << pad_left("free", 12) << pad_left("stranded", 12) << pad_left("frag", 7) << '\n';
  for (const auto& p : f.pools)
    out << "  " << pad_right(pool_label(p.pool, p.pool_id), pool_w) << pad_right(stream_name(p.stream), stream_w)
        << pad_left(with_commas(p.segments), 6) << pad_left(human_bytes(p.reserved_bytes), 12)
        << pad_left(human_bytes(p.free_bytes), 12) << pad_left(human_bytes(p.stranded_bytes), 12)
        << pad_left(fixed2(p.fragmentation), 7) << '\n';
  out << wrap_block(
      "frag = 1 - largest stranded free block / stranded bytes: how split up the free memory is that "
      "stays cached (the allocator returns whole free segments to CUDA before it reports an OOM); 0 "
      "when nothing is stranded",
      width, 2);
}

// The free blocks of each pool that has any, by power-of-two size bucket.
void write_free_histogram(std::ostream& out, const analysis::Accounting& f, size_t width) {
  bool any_free = std::any_of(f.pools.begin(), f.pools.end(), [](const auto& p) { return !p.histogram.empty(); });
  if (!any_free) return;
  out << "  free blocks by size (power-of-two buckets, from-to:count):\n";
  for (const auto& p : f.pools) {
    if (p.histogram.empty()) continue;
    std::string label = pool_label(p.pool, p.pool_id) + " " + stream_name(p.stream);
    std::string items;
    for (const auto& b : p.histogram) items += (items.empty() ? "" : " ") + bucket_label(b);
    size_t indent = std::min<size_t>(std::max<size_t>(label.size() + 6, 14), 30);
    std::string body = wrap_block(items, width, indent);
    out << "    " << pad_right(label, indent - 4) << body.substr(std::min(indent, body.size()));
  }
}

// How the regime shares stranded bytes among the blocks that pin them.
const char* pinning_rule(analysis::Regime regime) {
  return regime == analysis::Regime::Classic
             ? "(a segment's stranded bytes are shared equally by its allocated blocks; pending frees, "
               "awaiting other streams (record_stream), pin nothing)"
         : regime == analysis::Regime::Expandable
             ? "(a page's stranded bytes are shared equally by the allocated blocks on that page; "
               "pending frees pin nothing)"
             : "(stranded bytes are shared equally by the allocated blocks of their classic segment, or "
               "of their expandable page; pending frees pin nothing)";
}

// One pinning site: its row (a long name on lines of its own), an example block
// and the callers.
void write_pinning_site(std::ostream& out, const analysis::PinningSite& s, size_t site_w, size_t width) {
  std::string numbers = pad_left(with_commas(s.blocks), 8) + pad_left(human_bytes(s.live_bytes), 12) +
                        pad_left(human_bytes(s.stranded_bytes), 12);
  std::string site = shorten_left(term(s.site), site_w - 1);
  if (display_width(site) < site_w) {
    out << "    " << pad_right(site, site_w) << numbers << '\n';
  } else {  // a long (often C++) name: on its own line, wrapped (JSON has it whole)
    out << wrap_block(term(s.site, 512), width, 4) << "    " << std::string(site_w, ' ') << numbers << '\n';
  }
  out << "      e.g. " << human_bytes(s.example_size) << " at " << hex(s.example_address) << " strands "
      << human_bytes(s.example_stranded_bytes) << '\n';
  if (!s.callers.empty()) {
    std::string chain = "called from";
    for (size_t k = 0; k < s.callers.size(); ++k) chain += (k ? " < " : " ") + term(s.callers[k], 256);
    if (display_width(chain) > width - 6) chain = chain.substr(0, width - 9) + "...";
    out << "      " << chain << '\n';
  }
}

// Why blocks at the dump have no stack: the allocator records one only while memory history
// recording is on, so blocks allocated before it began (or after it stopped) have none.
std::string no_stack_note(const analysis::Accounting& f) {
  if (f.stacks_recorded)
    return "allocated while memory history recording was off (before it began, or after it stopped): the "
           "file keeps no stack for them (record from before the model is built to see their sites)";
  return "this file has no stacks: memory history recording was off, or ran with context=None (record with "
         "torch.cuda.memory._record_memory_history() before the model is built to see the sites)";
}

// The sites that pin stranded memory, the top few in full and the rest in one line.
void write_pinning_sites(std::ostream& out, const analysis::Accounting& f, const TextStyle& style, size_t width) {
  out << '\n' << "  " << heading("pinning sites", style) << ": allocated blocks in segments holding stranded memory\n";
  out << wrap_block(pinning_rule(f.regime), width, 2);
  const size_t site_w = width >= 80 ? width - 4 - 8 - 12 - 12 : 38;
  out << "    " << pad_right("site", site_w) << pad_left("blocks", 8) << pad_left("live", 12)
      << pad_left("stranded", 12) << '\n';
  size_t shown = std::min(kTopSites, f.pinning_sites.size());
  for (size_t i = 0; i < shown; ++i) {
    write_pinning_site(out, f.pinning_sites[i], site_w, width);
    if (f.pinning_sites[i].site == analysis::Sites::kNoStack) out << wrap_block(no_stack_note(f), width, 6);
  }
  if (f.pinning_sites.size() > shown) {
    uint64_t rest = 0, blocks = 0;
    for (size_t i = shown; i < f.pinning_sites.size(); ++i) {
      rest += f.pinning_sites[i].stranded_bytes;
      blocks += f.pinning_sites[i].blocks;
    }
    size_t more = f.pinning_sites.size() - shown;
    out << "    ... " << with_commas(more) << (more == 1 ? " more site (" : " more sites (") << with_commas(blocks)
        << (blocks == 1 ? " block) " : " blocks) ") << (more == 1 ? "strands " : "strand ") << human_bytes(rest)
        << " (--format json lists all)\n";
  }
}

}  // namespace

std::string pool_label(snapshot::Pool pool, const int64_t pool_id[2]) {
  std::string s = snapshot::to_string(pool);
  if (pool_id[0] != 0 || pool_id[1] != 0)
    s += " (" + std::to_string(pool_id[0]) + "," + std::to_string(pool_id[1]) + ")";
  return s;
}

void write_settings_text(std::ostream& out, const snapshot::AllocatorSettings& s, const TextStyle& style) {
  if (!s.present) return;
  std::string conf = s.alloc_conf.empty() ? "(empty: defaults)" : "\"" + term(s.alloc_conf, 512) + "\"";
  std::string divisions;
  for (const auto& [bucket, div] : s.roundup_power2_divisions)
    if (div != 0) divisions += (divisions.empty() ? "" : " ") + std::to_string(bucket) + "M:" + std::to_string(div);
  std::string text =
      "expandable_segments " + std::string(s.expandable_segments ? "on" : "off") + ", max_split_size " +
      (s.max_split_size ? human_bytes(*s.max_split_size) : std::string("unlimited")) +
      ", garbage_collection_threshold " +
      (s.garbage_collection_threshold > 0 ? fixed2(s.garbage_collection_threshold) : std::string("off")) +
      ", roundup_power2_divisions " + (divisions.empty() ? std::string("off") : divisions);
  out << "allocator settings: PYTORCH_CUDA_ALLOC_CONF=" << conf << '\n'
      << wrap_block(text, size_t(std::max(style.width, 40)), 2) << '\n';
}

void write_accounting_text(std::ostream& out, const analysis::Accounting& f, const TextStyle& style) {
  const size_t width = size_t(std::max(style.width, 40));
  if (f.segment_count == 0) return;
  out << '\n' << "  " << heading("free memory by cause", style) << '\n';
  out << wrap_block(regime_line(f), width, 4);
  write_cause_rows(out, f, width);
  write_pool_table(out, f, width);
  write_free_histogram(out, f, width);
  if (!f.pinning_sites.empty()) write_pinning_sites(out, f, style, width);
}

void write_free_summary_text(std::ostream& out, const analysis::Accounting& f, const TextStyle& style) {
  const size_t width = size_t(std::max(style.width, 40));
  if (f.segment_count == 0) return;
  const uint64_t cached = f.reserved_bytes > f.allocated_bytes ? f.reserved_bytes - f.allocated_bytes : 0;
  std::string line = "cached free " + human_bytes(cached);
  if (cached)
    line += ": " + human_bytes(f.releasable_bytes) + " empty_cache() would return, " + human_bytes(f.stranded_bytes) +
            " stranded by allocations; -v shows free memory by cause, pool and pinning site";
  out << '\n' << wrap_block(line, width, 2);
}

void write_fits_text(std::ostream& out, const analysis::FitsAnswer& a, const TextStyle& style) {
  const size_t width = size_t(std::max(style.width, 40));
  const std::string pool = std::string(snapshot::to_string(a.pool)) + " pool";
  const std::string stream = "stream " + stream_name(a.stream);
  out << '\n'
      << "  " << heading("would a request of " + human_bytes(a.request_bytes) + " fit?", style) << " (" << stream
      << ")\n";
  std::string rounding = a.rounded_bytes == a.request_bytes ? "a multiple of 512 B already"
                                                            : "rounded up to " + with_commas(a.rounded_bytes) + " B";
  out << wrap_block("request " + with_commas(a.request_bytes) + " B, " + rounding + "; " +
                        (a.pool == snapshot::Pool::Small ? "up to 1 MiB: small pool" : "over 1 MiB: large pool") +
                        (a.expandable ? " (expandable segments)" : ""),
                    width, 4);
  std::string candidates =
      "the " + pool + " on " + stream + " has " + with_commas(a.free_blocks) +
      (a.free_blocks == 1 ? " free block" : " free blocks") +
      (a.free_blocks ? " (" + human_bytes(a.free_bytes) + ", largest " + human_bytes(a.largest_free_block_bytes) + ")"
                     : std::string());
  out << wrap_block(candidates, width, 4);
  if (a.served_from_cache) {
    std::string text = "yes, served from the cache: best fit is the free block of " + human_bytes(*a.block_bytes) +
                       " at " + hex(*a.block_address) + "; ";
    if (a.remainder_bytes == 0)
      text += "it fits exactly.";
    else if (a.split)
      text += "it is split and " + human_bytes(a.remainder_bytes) + " stays free at " +
              hex(*a.block_address + a.rounded_bytes) + ".";
    else
      text += "it is handed out whole (" +
              std::string(a.max_split_size && a.rounded_bytes >= *a.max_split_size
                              ? "requests of max_split_size or more are never split"
                              : "the large pool splits only when more than 1 MiB remains") +
              "), so " + human_bytes(a.remainder_bytes) + " of slack stays inside it.";
    out << wrap_block(text, width, 4);
    return;
  }
  std::string why = "no: no free block of " + with_commas(a.rounded_bytes) + " B (" + human_bytes(a.rounded_bytes) +
                    ") or more in the " + pool + " on " + stream;
  if (a.oversize_rejected_bytes)
    why = "no: best fit is a free block of " + human_bytes(*a.oversize_rejected_bytes) + ", but max_split_size (" +
          human_bytes(*a.max_split_size) + ") forbids it: " +
          (a.rounded_bytes < *a.max_split_size
               ? "a request below max_split_size may not take a block of that size or more"
               : "an oversize request may only take a block less than 20 MiB larger");
  out << wrap_block(why + ".", width, 4);
  std::string next;
  if (a.expandable) {
    next = "the allocator would map " + human_bytes(a.new_segment_bytes) + " of new pages (" +
           (a.pool == snapshot::Pool::Small ? "2 MiB" : "20 MiB") + " each)";
    if (a.grows_block_address)
      next += ", growing the free block of " + human_bytes(*a.grows_block_bytes) + " at " + hex(*a.grows_block_address);
    next += ".";
  } else {
    next = "the allocator would cudaMalloc a new segment of " + human_bytes(a.new_segment_bytes) + " (" +
           (a.rounded_bytes <= analysis::rules::kSmallSize      ? "requests up to 1 MiB get a 2 MiB segment"
            : a.rounded_bytes < analysis::rules::kMinLargeAlloc ? "requests under 10 MiB get a 20 MiB segment"
                                                                : "requests of 10 MiB or more: rounded up to 2 MiB") +
           ").";
  }
  out << wrap_block(next, width, 4);
  std::string notes;
  if (a.pending_free_bytes)
    notes += human_bytes(a.pending_free_bytes) +
             " on this stream and pool awaits other streams; if their work has completed, it is freed first and may "
             "serve the request. ";
  if (a.other_streams_free_bytes)
    notes += human_bytes(a.other_streams_free_bytes) + " free in the " + pool +
             " on other streams is never used for this stream. ";
  if (a.private_pools_free_bytes)
    notes += human_bytes(a.private_pools_free_bytes) + " free in private pools (CUDA graphs, MemPool) is not used. ";
  if (!notes.empty()) out << wrap_block(notes, width, 4);
}

}  // namespace memsnap::report::detail
