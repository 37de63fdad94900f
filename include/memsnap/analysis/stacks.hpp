// Live memory by full call stack: the data behind `memsnap flame` and `memsnap callgraph`.
//
// A stack profile groups the blocks of one device state (the dump, or a state
// rebuilt by the trace replay) by their filtered stack, root (outermost frame)
// first. Frames are filtered as everywhere else in memsnap (sites.hpp): the
// viewer's noise filter always applies; C++ frames are dropped from stacks that
// also hold Python frames unless `cpp` is set (a stack captured in C++ alone keeps
// them: it has nothing else). Which blocks count is `state`:
//   allocated  active_allocated blocks           Σ = the state's allocated bytes
//   active     allocated + pending-free blocks   Σ = active bytes
//   all        every block of every segment; cached free (inactive) blocks, whose
//              frames torch clears, go under one `<cached free>` frame
//                                                Σ = Σ block sizes (= reserved when
//                                                    blocks tile their segments)
// Nothing is dropped: a block with no stack, or whose every frame the noise filter
// removes, goes under `<no stack recorded>`, so the profile's bytes are exactly the
// sum above. Several devices in one profile each get a `<device N>` root frame.
//
// Frames are interned by snapshot id (FrameId, or file and function ids with
// `by_function`), never by string; distinct stacks by their frame indices. The
// profile copies the strings it shows, so it outlives nothing it depends on.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

enum class StackState : uint8_t { Allocated, Active, All };
const char* to_string(StackState s);

struct StackOptions {
  StackState state = StackState::Allocated;
  bool cpp = false;          // keep C++ frames in stacks that also have Python frames
  bool by_function = false;  // one frame per function and file (lines merged)
  /// Drop dispatch machinery (is_dispatch_frame: _call_impl, the C++ dispatcher, at::/c10::
  /// internals, the caching allocator) so callers and callees meet on the frames that name
  /// a cause; a stack of nothing else keeps its frames. `cpp` still decides the rest.
  /// Library frames then also become one frame per user frame that calls them.
  bool collapse_dispatch = false;
  CodeRules code;  // which Python frames are the user's
};

/// What a frame is, for colours and labels: FrameKind of its file, or a pseudo-frame.
enum class ProfileFrameKind : uint8_t { User, Torch, PythonRuntime, Native, Synthetic, Library };
const char* to_string(ProfileFrameKind k);

/// A frame's strings are views: into the snapshot's string table (the profile lives no longer
/// than its snapshot), or for pseudo-frames into a process-wide pool. A 1 MiB file name shared
/// by thousands of frames stays one string (issue 38).
struct ProfileFrame {
  std::string_view function;    // as recorded (C++ frames: the demangled signature); synthetic: "<...>"
  std::string_view file;        // as recorded ("" for synthetic frames)
  std::optional<int64_t> line;  // nullopt with by_function and for synthetic frames
  ProfileFrameKind kind = ProfileFrameKind::Synthetic;
};

inline constexpr const char* kCachedFreeFrame = "<cached free>";

struct ProfileStack {
  std::vector<uint32_t> frames;  // indices into StackProfile::frames, root (outermost) first; never empty
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

struct StackProfile {
  StackOptions options;
  std::vector<ProfileFrame> frames;  // distinct frames, in first-seen order
  std::vector<ProfileStack> stacks;  // distinct stacks, in first-seen order
  uint64_t bytes = 0;                // Σ stacks' bytes
  uint64_t blocks = 0;
};

/// Builds one profile from one or more device states of a snapshot.
class StackProfileBuilder {
 public:
  /// `classifier`, when given, is one already built for `snap` with `options.code` (Sites'):
  /// a page's flames then share it rather than each reading every distinct file name again.
  StackProfileBuilder(const snapshot::Snapshot& snap, const StackOptions& options,
                      const FrameClassifier* classifier = nullptr);
  /// Adds the counted blocks of `state` (the dumped device or a replayed one);
  /// with `device_root`, every stack of it starts with a `<device N>` frame.
  void add(const snapshot::Device& state, bool device_root = false);
  /// Adds `bytes` (one block, or one allocation) under `stack`, filtered as add() filters a
  /// block's: how the allocations of a trace make a profile (analysis/file_lines).
  void add_stack(snapshot::StackId stack, uint64_t bytes);
  StackProfile take() { return std::move(profile_); }

 private:
  uint32_t frame_index(snapshot::FrameId f);
  ProfileFrame describe(snapshot::FrameId f) const;
  uint32_t synthetic(const std::string& name);
  uint32_t stack_index(std::vector<uint32_t> frames);
  const std::vector<uint32_t>& filtered(snapshot::StackId id);

  const snapshot::Snapshot& snap_;
  StackProfile profile_;
  std::optional<FrameClassifier> own_;                       // when none is shared
  const FrameClassifier& classify_;                          // by profile_.options.code
  std::vector<uint32_t> frame_of_id_;                        // FrameId -> frame index (kUnset until seen)
  std::unordered_map<uint64_t, uint32_t> by_function_;       // file id << 32 | function id -> frame
  std::vector<std::pair<std::string, uint32_t>> synthetic_;  // a handful of pseudo-frames
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> owned_;  // collapse_dispatch: (frame, calling user frame) -> frame
  std::vector<std::vector<uint32_t>> filtered_;              // StackId -> filtered frames, innermost first
  std::vector<uint8_t> filtered_done_;
  std::vector<uint32_t> stack_of_id_;  // add_stack: StackId -> profile stack (kUnset until seen)
  std::map<std::vector<uint32_t>, uint32_t> stack_of_frames_;  // root-first frames -> stack
};

/// One device state's profile (no device frame).
StackProfile stack_profile(const snapshot::Snapshot& snap, const snapshot::Device& state,
                           const StackOptions& options = {}, const FrameClassifier* classifier = nullptr);

/// The bytes a profile of `state` must add up to (the table above), from the state's own blocks.
uint64_t expected_profile_bytes(const snapshot::Device& state, StackState which);

// ---- flame trees ---------------------------------------------------------------------

/// A node of the prefix tree of a profile's stacks: one frame on one path from the root.
struct FlameNode {
  uint32_t frame = 0;   // index into the frames of the profile it came from
  uint32_t parent = 0;  // index of the parent node (the root's is itself)
  uint32_t depth = 0;   // 0 for the root, which stands for all stacks and has no frame
  uint64_t width = 0;   // what the picture's width follows (bytes; see DiffProfile)
  uint64_t bytes = 0;   // bytes of the stacks through this node (after, for a diff)
  uint64_t before = 0;  // a diff's before bytes (0 otherwise)
  uint64_t blocks = 0;
  uint64_t self_bytes = 0;  // of the stacks ending here
};

/// Nodes in depth-first pre-order, children heaviest first (ties: by frame text),
/// so each node's subtree is the contiguous range [i, i + subtree_size).
struct FlameTree {
  std::vector<ProfileFrame> frames;
  std::vector<FlameNode> nodes;        // nodes[0] is the root
  std::vector<uint32_t> subtree_size;  // parallel to nodes
  uint32_t max_depth = 0;
  bool differential = false;
};

FlameTree flame_tree(const StackProfile& profile);

// ---- differential profiles -----------------------------------------------------------

/// Two profiles matched stack by stack on the frames' text (function, file, line).
struct DiffStack {
  std::vector<uint32_t> frames;  // into DiffProfile::frames, root first
  uint64_t before = 0, after = 0;
  uint64_t before_blocks = 0, after_blocks = 0;
};
struct DiffProfile {
  std::vector<ProfileFrame> frames;
  std::vector<DiffStack> stacks;
  uint64_t before = 0, after = 0;
};

DiffProfile diff_profiles(const StackProfile& before, const StackProfile& after);
/// A differential flame tree: a node's width is Σ max(before, after) over its
/// stacks, so memory that went away stays visible; `bytes` is after, `before` before.
FlameTree flame_tree(const DiffProfile& diff);

}  // namespace memsnap::analysis
