// Live memory by filtered call stack, its prefix tree (flame graphs), and the difference of two.
#include "memsnap/analysis/stacks.hpp"

#include <algorithm>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "memsnap/util/canonical_text.hpp"

namespace memsnap::analysis {

namespace {

constexpr uint32_t kUnset = 0xFFFFFFFFu;

ProfileFrameKind kind_of(FrameKind k) {
  switch (k) {
    case FrameKind::User: return ProfileFrameKind::User;
    case FrameKind::Torch: return ProfileFrameKind::Torch;
    case FrameKind::PythonRuntime: return ProfileFrameKind::PythonRuntime;
    case FrameKind::Native: return ProfileFrameKind::Native;
    case FrameKind::Library: return ProfileFrameKind::Library;
  }
  return ProfileFrameKind::Native;
}

bool counted(const snapshot::Block& b, StackState which) {
  switch (which) {
    case StackState::Allocated: return b.state == snapshot::BlockState::ActiveAllocated;
    case StackState::Active: return b.is_active();
    case StackState::All: return true;
  }
  return false;
}

// The order of frames people read: function, then file, then line, then kind.
bool frame_less(const ProfileFrame& a, const ProfileFrame& b) {
  if (int c = compare_text(a.function, b.function)) return c < 0;
  if (int c = compare_text(a.file, b.file)) return c < 0;
  return std::tie(a.line, a.kind) < std::tie(b.line, b.kind);
}

// A pseudo-frame's name, kept for the process: a handful of distinct names ever.
std::string_view pooled(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> pool;
  std::lock_guard<std::mutex> lock(mutex);
  return *pool.insert(name).first;
}

}  // namespace

const char* to_string(StackState s) {
  switch (s) {
    case StackState::Allocated: return "allocated";
    case StackState::Active: return "active";
    case StackState::All: return "all";
  }
  return "?";
}

const char* to_string(ProfileFrameKind k) {
  switch (k) {
    case ProfileFrameKind::User: return "user";
    case ProfileFrameKind::Torch: return "torch";
    case ProfileFrameKind::PythonRuntime: return "python";
    case ProfileFrameKind::Native: return "native";
    case ProfileFrameKind::Synthetic: return "synthetic";
    case ProfileFrameKind::Library: return "library";
  }
  return "?";
}

// ---- profiles --------------------------------------------------------------------------

StackProfileBuilder::StackProfileBuilder(const snapshot::Snapshot& snap, const StackOptions& options,
                                         const FrameClassifier* classifier)
    : snap_(snap),
      profile_{},
      own_(classifier ? std::nullopt : std::optional<FrameClassifier>(std::in_place, snap, options.code)),
      classify_(classifier ? *classifier : *own_),
      frame_of_id_(snap.frames.size(), kUnset),
      filtered_(snap.stacks.size()),
      filtered_done_(snap.stacks.size(), 0) {
  profile_.options = options;
}

uint32_t StackProfileBuilder::frame_index(snapshot::FrameId id) {
  const snapshot::Frame& f = snap_.frames[id];
  uint32_t* slot = &frame_of_id_[id.v];
  if (profile_.options.by_function) {
    uint64_t key = uint64_t(f.filename.v) << 32 | f.name.v;
    slot = &by_function_.try_emplace(key, kUnset).first->second;
  }
  if (*slot == kUnset) {
    *slot = static_cast<uint32_t>(profile_.frames.size());
    profile_.frames.push_back(describe(id));
  }
  return *slot;
}

ProfileFrame StackProfileBuilder::describe(snapshot::FrameId id) const {
  const snapshot::Frame& f = snap_.frames[id];
  ProfileFrame pf;
  pf.function = snap_.strings[f.name];
  pf.file = snap_.strings[f.filename];
  if (!profile_.options.by_function) pf.line = f.line;
  pf.kind = kind_of(classify_.kind(id));
  return pf;
}

uint32_t StackProfileBuilder::synthetic(const std::string& name) {
  for (const auto& [n, i] : synthetic_)
    if (n == name) return i;
  ProfileFrame pf;
  pf.function = pooled(name);
  pf.kind = ProfileFrameKind::Synthetic;
  uint32_t i = static_cast<uint32_t>(profile_.frames.size());
  profile_.frames.push_back(std::move(pf));
  synthetic_.emplace_back(name, i);
  return i;
}

const std::vector<uint32_t>& StackProfileBuilder::filtered(snapshot::StackId id) {
  if (filtered_done_[id.v]) return filtered_[id.v];
  filtered_done_[id.v] = 1;
  std::vector<snapshot::FrameId> kept;
  bool python = false;
  for (snapshot::FrameId f : snap_.stacks[id]) {
    if (classify_.noise(f)) continue;
    python = python || classify_.default_kind(f) != FrameKind::Native;
    kept.push_back(f);
  }
  if (profile_.options.collapse_dispatch) {
    std::vector<snapshot::FrameId> causes;
    for (snapshot::FrameId f : kept)
      if (!classify_.dispatch(f)) causes.push_back(f);
    if (!causes.empty()) kept = std::move(causes);
  }
  auto& out = filtered_[id.v];
  out.reserve(kept.size());
  // Collapsed graphs give library frames one vertex per calling user frame: a torch
  // function two user lines call is two vertices, so each user line retains its memory.
  uint32_t owner = kUnset;
  if (profile_.options.collapse_dispatch)
    for (auto it = kept.rbegin(); it != kept.rend(); ++it)
      if (classify_.kind(*it) == FrameKind::User) owner = it->v;
  if (owner == kUnset) {
    for (snapshot::FrameId f : kept) {
      if (python && !profile_.options.cpp && classify_.default_kind(f) == FrameKind::Native) continue;
      out.push_back(frame_index(f));
    }
  } else {
    // Innermost first: the frames inside the innermost user frame belong to it; outer ones
    // to the user frame that calls them.
    uint32_t current = kUnset;
    std::vector<uint32_t> owners(kept.size(), kUnset);
    for (size_t i = kept.size(); i-- > 0;) {
      if (classify_.kind(kept[i]) == FrameKind::User) current = kept[i].v;
      owners[i] = current;
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      snapshot::FrameId f = kept[i];
      FrameKind k = classify_.kind(f);
      if (python && !profile_.options.cpp && k == FrameKind::Native) continue;
      if (k == FrameKind::User || owners[i] == kUnset) {
        out.push_back(frame_index(f));
        continue;
      }
      const snapshot::Frame& fr = snap_.frames[f];
      uint64_t frame_key = profile_.options.by_function ? (uint64_t(fr.filename.v) << 32 | fr.name.v) : f.v;
      auto [it, inserted] = owned_.try_emplace({frame_key, owners[i]}, uint32_t(profile_.frames.size()));
      if (inserted) profile_.frames.push_back(describe(f));
      out.push_back(it->second);
    }
  }
  return out;
}

uint32_t StackProfileBuilder::stack_index(std::vector<uint32_t> frames) {
  auto [it, inserted] = stack_of_frames_.try_emplace(std::move(frames), uint32_t(profile_.stacks.size()));
  if (inserted) profile_.stacks.push_back(ProfileStack{it->first, 0, 0});
  return it->second;
}

void StackProfileBuilder::add(const snapshot::Device& state, bool device_root) {
  std::vector<uint32_t> prefix;  // the <device N> frame, made when a block of the device first counts
  // Stack ids repeat across blocks: each is resolved to a profile stack once per device.
  std::vector<uint32_t> stack_of_id(snap_.stacks.size(), kUnset);
  uint32_t cached_free = kUnset;
  for (const snapshot::Segment& seg : state.segments) {
    for (const snapshot::Block& b : state.blocks_of(seg)) {
      if (!counted(b, profile_.options.state)) continue;
      uint32_t* slot = b.is_active() ? &stack_of_id[b.stack.v] : &cached_free;
      if (*slot == kUnset) {
        if (device_root && prefix.empty()) prefix.push_back(synthetic("<device " + std::to_string(state.index) + ">"));
        std::vector<uint32_t> frames = prefix;
        if (!b.is_active()) {
          frames.push_back(synthetic(kCachedFreeFrame));
        } else {
          const auto& inner_first = filtered(b.stack);
          if (inner_first.empty()) frames.push_back(synthetic(Sites::kNoStack));
          frames.insert(frames.end(), inner_first.rbegin(), inner_first.rend());
        }
        *slot = stack_index(std::move(frames));
      }
      ProfileStack& s = profile_.stacks[*slot];
      s.bytes += b.size;
      s.blocks += 1;
      profile_.bytes += b.size;
      profile_.blocks += 1;
    }
  }
}

void StackProfileBuilder::add_stack(snapshot::StackId stack, uint64_t bytes) {
  if (stack_of_id_.empty()) stack_of_id_.assign(snap_.stacks.size(), kUnset);
  uint32_t& slot = stack_of_id_[stack.v];
  if (slot == kUnset) {
    std::vector<uint32_t> frames;
    const auto& inner_first = filtered(stack);
    if (inner_first.empty()) frames.push_back(synthetic(Sites::kNoStack));
    frames.insert(frames.end(), inner_first.rbegin(), inner_first.rend());
    slot = stack_index(std::move(frames));
  }
  ProfileStack& s = profile_.stacks[slot];
  s.bytes += bytes;
  s.blocks += 1;
  profile_.bytes += bytes;
  profile_.blocks += 1;
}

StackProfile stack_profile(const snapshot::Snapshot& snap, const snapshot::Device& state, const StackOptions& options,
                           const FrameClassifier* classifier) {
  StackProfileBuilder b(snap, options, classifier);
  b.add(state);
  return b.take();
}

uint64_t expected_profile_bytes(const snapshot::Device& state, StackState which) {
  uint64_t allocated = 0, active = 0, all = 0;
  for (const auto& b : state.blocks) {
    all += b.size;
    if (b.is_active()) active += b.size;
    if (b.state == snapshot::BlockState::ActiveAllocated) allocated += b.size;
  }
  switch (which) {
    case StackState::Allocated: return allocated;
    case StackState::Active: return active;
    case StackState::All: return all;
  }
  return 0;
}

// ---- flame trees -----------------------------------------------------------------------

namespace {

// Inserts stacks into a prefix tree, then lays it out in pre-order, heaviest child first.
class TreeBuilder {
 public:
  explicit TreeBuilder(const std::vector<ProfileFrame>& frames) : frames_(frames) { nodes_.push_back({}); }

  void insert(const std::vector<uint32_t>& stack, uint64_t width, uint64_t bytes, uint64_t before, uint64_t blocks) {
    uint32_t at = 0;
    add(at, width, bytes, before, blocks);
    for (uint32_t f : stack) {
      auto [it, inserted] = child_.try_emplace({at, f}, uint32_t(nodes_.size()));
      if (inserted) {
        Node n;
        n.frame = f;
        n.parent = at;
        nodes_.push_back(n);
        nodes_[at].children.push_back(it->second);
      }
      at = it->second;
      add(at, width, bytes, before, blocks);
    }
    nodes_[at].self += bytes;
  }

  FlameTree finish(bool differential) {
    FlameTree t;
    t.differential = differential;
    t.nodes.reserve(nodes_.size());
    t.subtree_size.assign(nodes_.size(), 1);
    for (auto& n : nodes_)
      std::sort(n.children.begin(), n.children.end(), [&](uint32_t a, uint32_t b) {
        const Node &x = nodes_[a], &y = nodes_[b];
        if (x.width != y.width) return x.width > y.width;
        if (frame_less(frames_[x.frame], frames_[y.frame])) return true;
        if (frame_less(frames_[y.frame], frames_[x.frame])) return false;
        return x.frame < y.frame;
      });
    // Iterative pre-order (stacks can be deep); `pos` maps a temporary node to its output index.
    std::vector<uint32_t> pos(nodes_.size());
    std::vector<std::pair<uint32_t, uint32_t>> todo{{0, 0}};  // node, depth
    while (!todo.empty()) {
      auto [i, depth] = todo.back();
      todo.pop_back();
      const Node& n = nodes_[i];
      pos[i] = static_cast<uint32_t>(t.nodes.size());
      FlameNode out;
      out.frame = n.frame;
      out.parent = i == 0 ? 0 : pos[n.parent];
      out.depth = depth;
      out.width = n.width;
      out.bytes = n.bytes;
      out.before = n.before;
      out.blocks = n.blocks;
      out.self_bytes = n.self;
      t.nodes.push_back(out);
      t.max_depth = std::max(t.max_depth, depth);
      for (auto c = n.children.rbegin(); c != n.children.rend(); ++c) todo.emplace_back(*c, depth + 1);
    }
    // Subtree sizes: children come after their parent in pre-order, so one backward pass.
    for (size_t i = t.nodes.size(); i-- > 1;) t.subtree_size[t.nodes[i].parent] += t.subtree_size[i];
    t.frames = frames_;
    return t;
  }

 private:
  struct Node {
    uint32_t frame = 0, parent = 0;
    uint64_t width = 0, bytes = 0, before = 0, blocks = 0, self = 0;
    std::vector<uint32_t> children;
  };
  void add(uint32_t at, uint64_t width, uint64_t bytes, uint64_t before, uint64_t blocks) {
    Node& n = nodes_[at];
    n.width += width;
    n.bytes += bytes;
    n.before += before;
    n.blocks += blocks;
  }

  const std::vector<ProfileFrame>& frames_;
  std::vector<Node> nodes_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> child_;  // (node, frame) -> child node
};

}  // namespace

FlameTree flame_tree(const StackProfile& profile) {
  TreeBuilder b(profile.frames);
  for (const auto& s : profile.stacks) b.insert(s.frames, s.bytes, s.bytes, 0, s.blocks);
  return b.finish(false);
}

FlameTree flame_tree(const DiffProfile& diff) {
  TreeBuilder b(diff.frames);
  for (const auto& s : diff.stacks) b.insert(s.frames, std::max(s.before, s.after), s.after, s.before, s.after_blocks);
  return b.finish(true);
}

// ---- differential profiles -------------------------------------------------------------

DiffProfile diff_profiles(const StackProfile& before, const StackProfile& after) {
  DiffProfile d;
  d.before = before.bytes;
  d.after = after.bytes;
  // Frame ids differ between two files: frames match on their text. An ordered map
  // keyed by the strings costs O(log n) comparisons and cannot be flooded. Each distinct
  // string is first replaced by one view of its text (`canonical`, once per view), so that
  // equal strings of the two files compare without being read again: thousands of frames
  // sharing one 1 MiB file name compare in O(1) (issue 38).
  CanonicalText canonical;
  auto less = [](const ProfileFrame& a, const ProfileFrame& b) { return frame_less(a, b); };
  std::map<ProfileFrame, uint32_t, decltype(less)> frame_ids(less);
  auto unify = [&](const StackProfile& p) {
    std::vector<uint32_t> map(p.frames.size());
    for (size_t i = 0; i < p.frames.size(); ++i) {
      ProfileFrame f = p.frames[i];
      f.function = canonical(f.function);
      f.file = canonical(f.file);
      auto [it, inserted] = frame_ids.try_emplace(f, uint32_t(d.frames.size()));
      if (inserted) d.frames.push_back(f);
      map[i] = it->second;
    }
    return map;
  };
  std::vector<uint32_t> from_before = unify(before), from_after = unify(after);
  std::map<std::vector<uint32_t>, uint32_t> stack_ids;
  auto stack = [&](const ProfileStack& s, const std::vector<uint32_t>& map) -> DiffStack& {
    std::vector<uint32_t> frames;
    frames.reserve(s.frames.size());
    for (uint32_t f : s.frames) frames.push_back(map[f]);
    auto [it, inserted] = stack_ids.try_emplace(std::move(frames), uint32_t(d.stacks.size()));
    if (inserted) d.stacks.push_back(DiffStack{it->first, 0, 0, 0, 0});
    return d.stacks[it->second];
  };
  for (const auto& s : before.stacks) {
    DiffStack& ds = stack(s, from_before);
    ds.before += s.bytes;
    ds.before_blocks += s.blocks;
  }
  for (const auto& s : after.stacks) {
    DiffStack& ds = stack(s, from_after);
    ds.after += s.bytes;
    ds.after_blocks += s.blocks;
  }
  return d;
}

}  // namespace memsnap::analysis
