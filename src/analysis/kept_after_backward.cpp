// Activations kept after the backward (kept_after_backward.hpp says why that matters).
#include "memsnap/analysis/kept_after_backward.hpp"

#include <algorithm>
#include <map>

#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/roles.hpp"

namespace memsnap::analysis {

namespace {

// The innermost Python frame that is not PyTorch's own or the interpreter's, or nullopt.
std::optional<snapshot::FrameId> made_in(const Context& ctx, snapshot::StackId stack) {
  const FrameClassifier& c = ctx.sites.classifier();
  for (snapshot::FrameId f : ctx.snap.stacks[stack]) {
    FrameKind k = c.kind(f);
    if (k == FrameKind::User || k == FrameKind::Library) return f;
  }
  return std::nullopt;
}

}  // namespace

std::optional<KeptAfterBackward> kept_after_backward(const Context& ctx, const snapshot::Device& device,
                                                     const Replay& replay, const Phases& phases,
                                                     const BlockRoles& roles) {
  const size_t n = device.trace.size();
  if (n == 0 || phases.size() != n) return std::nullopt;
  std::optional<uint32_t> last_backward;
  // the last alloc of a backward: one that frees alone may be a graph torn down (after an OOM)
  for (size_t i = n; i-- > 0;)
    if (device.trace.action_at(i) == snapshot::Action::Alloc &&
        phases.at(static_cast<uint32_t>(i)) == Phase::Backward) {
      last_backward = static_cast<uint32_t>(i);
      break;
    }
  if (!last_backward) return std::nullopt;
  KeptAfterBackward k;
  k.backward_event = *last_backward;
  std::map<uint32_t, uint64_t> by_frame;  // frame id -> bytes (ids, not input strings)
  std::map<uint32_t, uint64_t> by_site;   // site id -> bytes
  for (uint32_t id = replay.first_window_range(); id < replay.ranges().size(); ++id) {
    uint32_t b = replay.begin_of(id);
    if (replay.freed_of(id) != kNever || b >= *last_backward || phases.at(b) != Phase::Forward ||
        roles.of(id) != RoleId(Role::Activation))
      continue;
    uint64_t size = replay.size_of(id);
    k.bytes += size;
    ++k.blocks;
    snapshot::StackId stack = replay.stack_of(id);
    if (auto f = made_in(ctx, stack)) by_frame[f->v] += size;
    by_site[ctx.sites.site_of(stack).v] += size;
  }
  if (k.blocks == 0) return std::nullopt;
  std::vector<std::pair<uint32_t, uint64_t>> frames(by_frame.begin(), by_frame.end());
  std::stable_sort(frames.begin(), frames.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  for (size_t i = 0; i < frames.size() && i < 3; ++i)
    k.frames.push_back({ctx.sites.frame_string(snapshot::FrameId{frames[i].first}).substr(0, 200), frames[i].second});
  auto site = std::max_element(by_site.begin(), by_site.end(),
                               [](const auto& x, const auto& y) { return x.second < y.second; });
  if (site != by_site.end() && 2 * site->second > k.bytes) k.site = ctx.sites.name(SiteId{site->first}).substr(0, 200);
  for (size_t f = 0; f < ctx.snap.frames.size(); ++f)
    if (ctx.snap.strings[ctx.snap.frames[snapshot::FrameId{static_cast<uint32_t>(f)}].filename].find(
            "bitsandbytes/autograd") != std::string_view::npos) {
      k.bitsandbytes = true;
      break;
    }
  return k;
}

}  // namespace memsnap::analysis
