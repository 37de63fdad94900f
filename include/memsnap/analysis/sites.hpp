// How every memsnap report names where memory came from: the allocation *site*.
//
// A site is "file.py:LINE:function" of the innermost frame that is the user's
// code (a Python frame outside torch/ and outside the Python runtime), falling
// back to the innermost Python frame, and for stacks captured in C++ alone (the
// autograd engine's thread runs backward without Python frames) to the autograd
// node or ATen operator being run ("MmBackward0 (aten::mm)"), else the innermost
// frame outside the caching allocator, all after the noise filter. A stack is the
// list of frame strings, innermost first, after the viewer's noise filter
// (SNAPSHOT_FORMAT.md §5). This is the one definition; every analysis uses it.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

enum class FrameKind : uint8_t { User, Torch, PythonRuntime, Native };

/// Classifies one frame by its file name.
FrameKind classify_frame(std::string_view filename);
/// The viewer's noise filter: unwinder, interpreter and dispatcher frames.
bool is_noise_frame(std::string_view filename, std::string_view name);

using SiteId = snapshot::Id<struct SiteTag>;

/// Sites and printable stacks, computed once per interned stack.
class Sites {
 public:
  explicit Sites(const snapshot::Snapshot& snap);

  SiteId site_of(snapshot::StackId stack);
  const std::string& name(SiteId site) const { return names_[site.v]; }
  const std::string& site(snapshot::StackId stack) { return name(site_of(stack)); }
  /// The filtered stack as strings, innermost first (empty for an empty stack).
  const std::vector<std::string>& stack(snapshot::StackId stack);
  /// The printable form of one frame: "file.py:12:fn" (native frames without a file: the name).
  std::string frame_string(snapshot::FrameId f) const;

  static constexpr const char* kNoStack = "<no stack recorded>";

 private:
  const snapshot::Snapshot& snap_;
  std::vector<uint32_t> site_of_stack_;  // kUnset until computed
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<std::vector<std::string>> stacks_;
  std::vector<uint8_t> stack_done_;
};

}  // namespace memsnap::analysis
