// Frame classification, the noise filter and the site of a stack.
#include "memsnap/analysis/sites.hpp"


namespace memsnap::analysis {

namespace {

constexpr uint32_t kUnset = 0xFFFFFFFFu;

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view basename(std::string_view path) {
  size_t slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

FrameKind classify_frame(std::string_view file) {
  bool python = ends_with(file, ".py") || (file.size() > 1 && file.front() == '<' && file.back() == '>');
  if (!python) return FrameKind::Native;
  if (file.substr(0, 7) == "<frozen") return FrameKind::PythonRuntime;
  if (contains(file, "/torch/") || file.substr(0, 6) == "torch/") return FrameKind::Torch;
  bool packages = contains(file, "/site-packages/") || contains(file, "/dist-packages/");
  if (!packages && (contains(file, "/lib/python2") || contains(file, "/lib/python3") || contains(file, "/lib/pypy")))
    return FrameKind::PythonRuntime;
  return FrameKind::User;
}

bool is_noise_frame(std::string_view file, std::string_view name) {
  static constexpr std::string_view kNames[] = {"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp",
                                                "_start",         "__libc_start_main",          "PyEval_",
                                                "PyObject_",      "PyFunction_"};
  static constexpr std::string_view kFiles[] = {"core/boxing",         "/Register",     "/Redispatch",
                                                "pythonrun.c",         "Modules/main.c", "Objects/call.c",
                                                "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
                                                "cpython/abstract.h"};
  for (auto n : kNames)
    if (contains(name, n)) return true;
  for (auto f : kFiles)
    if (contains(file, f)) return true;
  // "/Register" and "/Redispatch" also match a bare file name (native frames often carry no directory).
  std::string_view base = basename(file);
  return base.substr(0, 8) == "Register" || base.substr(0, 10) == "Redispatch";
}

Sites::Sites(const snapshot::Snapshot& snap)
    : snap_(snap),
      site_of_stack_(snap.stacks.size(), kUnset),
      stacks_(snap.stacks.size()),
      stack_done_(snap.stacks.size(), 0) {}

std::string Sites::frame_string(snapshot::FrameId id) const {
  const snapshot::Frame& f = snap_.frames[id];
  std::string_view file = snap_.strings[f.filename];
  std::string_view name = snap_.strings[f.name];
  if ((file.empty() || file == "??") && f.line == 0) return std::string(name);
  std::string out(basename(file));
  out += ':';
  out += std::to_string(f.line);
  out += ':';
  out += name;
  return out;
}

namespace {

// Native frames that every allocation passes through: the caching allocator and
// tensor construction. They name no cause, so a fallback site skips them.
bool allocation_machinery(std::string_view name) {
  static constexpr std::string_view kParts[] = {"CUDACachingAllocator", "c10::cuda::", "_empty_generic",
                                                "empty_generic",        "empty_cuda",  "empty_strided",
                                                "at::empty",            "empty_like",  "create_out",
                                                "set_output_raw_strided", "wrap_kernel_functor", "at::_ops::"};
  for (auto p : kParts)
    if (name.find(p) != std::string_view::npos) return true;
  return false;
}

// "torch::autograd::generated::MmBackward0::apply(...)" -> "MmBackward0"
std::string autograd_node(std::string_view name) {
  constexpr std::string_view kPrefix = "torch::autograd::generated::";
  if (name.rfind(kPrefix, 0) != 0) return "";
  name.remove_prefix(kPrefix.size());
  size_t end = name.find("::");
  return end == std::string_view::npos ? "" : std::string(name.substr(0, end));
}

// "at::_ops::bmm::call(...)" -> "aten::bmm"
std::string aten_op(std::string_view name) {
  constexpr std::string_view kPrefix = "at::_ops::";
  if (name.rfind(kPrefix, 0) != 0) return "";
  name.remove_prefix(kPrefix.size());
  size_t end = name.find("::");
  return end == std::string_view::npos ? "" : "aten::" + std::string(name.substr(0, end));
}

}  // namespace

SiteId Sites::site_of(snapshot::StackId stack) {
  uint32_t& slot = site_of_stack_[stack.v];
  if (slot != kUnset) return SiteId{slot};
  // The innermost user frame; else the innermost Python frame; else, for stacks
  // captured in C++ only (the autograd engine's thread), the autograd node or
  // ATen operator being run; else the innermost frame outside the allocator.
  std::string text;
  const snapshot::FrameId* python = nullptr;
  const snapshot::FrameId* native = nullptr;
  const snapshot::FrameId* innermost = nullptr;
  std::string node, op;
  for (const auto& f : snap_.stacks[stack]) {
    std::string_view file = snap_.strings[snap_.frames[f].filename];
    std::string_view name = snap_.strings[snap_.frames[f].name];
    if (is_noise_frame(file, name)) continue;
    if (!innermost) innermost = &f;
    FrameKind kind = classify_frame(file);
    if (kind == FrameKind::User) {
      text = frame_string(f);
      break;
    }
    if (kind != FrameKind::Native) {
      if (!python) python = &f;
      continue;
    }
    if (node.empty()) node = autograd_node(name);
    if (op.empty()) op = aten_op(name);
    if (!native && !allocation_machinery(name)) native = &f;
  }
  if (text.empty()) {
    if (python) text = frame_string(*python);
    else if (!node.empty()) text = node + (op.empty() ? std::string() : " (" + op + ")");
    else if (!op.empty()) text = op;
    else if (native) text = frame_string(*native);
    else if (innermost) text = frame_string(*innermost);
    else text = kNoStack;
  }
  // Different stacks often end at the same site: one id per distinct string.
  auto [it, inserted] = index_.try_emplace(text, static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(std::move(text));
  slot = it->second;
  return SiteId{slot};
}

const std::vector<std::string>& Sites::stack(snapshot::StackId stack) {
  if (!stack_done_[stack.v]) {
    auto& out = stacks_[stack.v];
    for (const auto& f : snap_.stacks[stack]) {
      const auto& fr = snap_.frames[f];
      if (is_noise_frame(snap_.strings[fr.filename], snap_.strings[fr.name])) continue;
      out.push_back(frame_string(f));
    }
    stack_done_[stack.v] = 1;
  }
  return stacks_[stack.v];
}

}  // namespace memsnap::analysis
