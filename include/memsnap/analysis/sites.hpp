// How every memsnap report names where memory came from: the allocation *site*.
//
// A site is "file.py:LINE:function" of the innermost frame that is the user's
// code (a Python frame outside torch/ and outside the Python runtime), falling
// back to the innermost Python frame, and for stacks captured in C++ alone (the
// autograd engine's threads run backward without Python frames) to the autograd
// node being run ("backward: MmBackward0"), else the ATen operator
// ("aten::mm"), else the innermost frame outside the caching allocator, all after
// the viewer's noise filter (SNAPSHOT_FORMAT.md §5). A stack is the list of frame
// strings, innermost first, after the noise filter. Every analysis and report
// names sites through this table; it is built once per snapshot and read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

enum class FrameKind : uint8_t { User, Torch, PythonRuntime, Native };

/// Classifies one frame by its file name.
FrameKind classify_frame(std::string_view filename);
/// The viewer's noise filter: unwinder, interpreter and dispatcher frames.
bool is_noise_frame(std::string_view filename, std::string_view name);
/// "torch::autograd::generated::MmBackward0::apply(...)" -> "MmBackward0"; "" when the
/// frame runs no autograd node.
std::string autograd_node(std::string_view function_name);

using SiteId = snapshot::Id<struct SiteTag>;

/// What the frames of a stack show about the work that allocated: the evidence
/// iteration detection asks for ("a repeating unit that contains backward work and
/// the optimizer"), computed once per stack.
struct StackTraits {
  bool backward = false;     // autograd engine, a *Backward node, torch/autograd Python frames
  bool optimizer = false;    // torch/optim frames, Optimizer.step / zero_grad
  bool module_call = false;  // runs inside an nn.Module call (torch/nn/modules/module.py)
  bool forward = false;      // a `forward` function or torch/nn/modules frame
};

class Sites {
 public:
  explicit Sites(const snapshot::Snapshot& snap);

  SiteId site_of(snapshot::StackId stack) const { return site_of_stack_[stack.v]; }
  const std::string& name(SiteId site) const { return names_[site.v]; }
  const std::string& site(snapshot::StackId stack) const { return name(site_of(stack)); }
  size_t size() const { return names_.size(); }
  const StackTraits& traits(snapshot::StackId stack) const { return traits_[stack.v]; }
  /// The frame the site names, when the site is a frame (not an autograd node or op).
  std::optional<snapshot::FrameId> site_frame(snapshot::StackId stack) const {
    uint32_t f = site_frame_[stack.v];
    return f == UINT32_MAX ? std::nullopt : std::optional<snapshot::FrameId>(snapshot::FrameId{f});
  }

  /// The filtered stack as strings, innermost first (empty for an empty stack).
  std::vector<std::string> stack(snapshot::StackId stack) const;
  /// The user-code frames outside the site frame, innermost first, at most `max`:
  /// where the site was called from.
  std::vector<std::string> callers(snapshot::StackId stack, size_t max) const;
  /// User-code frames of the stack, outermost first (the program's call path).
  std::vector<snapshot::FrameId> user_chain(snapshot::StackId stack) const;
  /// The printable form of one frame: "file.py:12:fn" (native frames without a file: the name).
  std::string frame_string(snapshot::FrameId f) const;

  /// What one frame is, computed once per distinct frame (however long its strings,
  /// however many stacks share it).
  struct FrameInfo {
    FrameKind kind = FrameKind::Native;
    bool noise = false, backward = false, optimizer = false, module_call = false, forward = false;
    bool machinery = false;  // the caching allocator or tensor construction
    std::string node, op;    // native frames: the autograd node and ATen op they run, if any
  };
  const FrameInfo& frame_info(snapshot::FrameId f) const { return frames_[f.v]; }

  static constexpr const char* kNoStack = "<no stack recorded>";

 private:
  FrameInfo describe_frame(snapshot::FrameId f) const;
  std::string compute_site(snapshot::StackId stack, StackTraits& traits, uint32_t& frame) const;

  const snapshot::Snapshot& snap_;
  std::vector<FrameInfo> frames_;
  std::vector<SiteId> site_of_stack_;
  std::vector<StackTraits> traits_;
  std::vector<uint32_t> site_frame_;  // FrameId, or UINT32_MAX
  std::vector<std::string> names_;
};

/// The read-only context every analysis of one snapshot shares.
struct Context {
  explicit Context(const snapshot::Snapshot& s) : snap(s), sites(s) {}
  const snapshot::Snapshot& snap;
  const Sites sites;
};

}  // namespace memsnap::analysis
