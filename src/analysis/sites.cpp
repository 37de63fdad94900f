// Frame classification, the noise filter, stack traits and the site of every stack.
#include "memsnap/analysis/sites.hpp"

#include <algorithm>
#include <unordered_map>

#include "memsnap/util/hash.hpp"

namespace memsnap::analysis {

namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view basename(std::string_view path) {
  size_t slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Native frames that every allocation passes through: the caching allocator and
// tensor construction. They name no cause, so a fallback site skips them.
bool allocation_machinery(std::string_view name) {
  static constexpr std::string_view kParts[] = {
      "CUDACachingAllocator", "c10::cuda::", "_empty_generic", "empty_generic", "empty_cuda",
      "empty_strided",        "at::empty",   "empty_like",     "create_out",    "set_output_raw_strided",
      "wrap_kernel_functor",  "at::_ops::"};
  for (auto p : kParts)
    if (contains(name, p)) return true;
  return false;
}

// "at::_ops::bmm::call(...)" -> "aten::bmm"
std::string aten_op(std::string_view name) {
  constexpr std::string_view kPrefix = "at::_ops::";
  if (name.rfind(kPrefix, 0) != 0) return "";
  name.remove_prefix(kPrefix.size());
  size_t end = name.find("::");
  return end == std::string_view::npos ? "" : "aten::" + std::string(name.substr(0, end));
}

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Backward work: the autograd engine (its C++ threads, or Python's entry points to
// it) or an autograd node. Forward-time torch/autograd frames (Function.apply of a
// custom function, checkpointing) are not backward work.
bool is_backward_frame(std::string_view file, std::string_view name) {
  if (ends_with(file, ".py"))
    return name == "_engine_run_backward" ||
           ((ends_with(file, "torch/autograd/__init__.py") || ends_with(file, "torch/_tensor.py")) &&
            (name == "backward" || name == "grad"));
  return contains(name, "autograd::Engine") || !autograd_node(name).empty();
}

}  // namespace

FrameKind classify_frame(std::string_view file) {
  if (file.find('\\') != std::string_view::npos) {  // a Windows path: judge it with forward slashes
    std::string unix_path(file);
    std::replace(unix_path.begin(), unix_path.end(), '\\', '/');
    return classify_frame(std::string_view(unix_path));
  }
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
  static constexpr std::string_view kNames[] = {"unwind::unwind",    "CapturedTraceback::gather",
                                                "gather_with_cpp",   "_start",
                                                "__libc_start_main", "PyEval_",
                                                "PyObject_",         "PyFunction_"};
  static constexpr std::string_view kFiles[] = {"core/boxing",
                                                "/Register",
                                                "/Redispatch",
                                                "pythonrun.c",
                                                "Modules/main.c",
                                                "Objects/call.c",
                                                "Objects/methodobject.c",
                                                "pycore_ceval.h",
                                                "ceval.c",
                                                "cpython/abstract.h"};
  for (auto n : kNames)
    if (contains(name, n)) return true;
  for (auto f : kFiles)
    if (contains(file, f)) return true;
  // "/Register" and "/Redispatch" also match a bare file name (native frames often carry no directory).
  std::string_view base = basename(file);
  return base.substr(0, 8) == "Register" || base.substr(0, 10) == "Redispatch";
}

// The node is the class whose `apply` runs: "...::MmBackward0::apply(" or, in
// older builds, any "...Backward<N>::" component. Helper namespaces such as
// torch::autograd::generated::details:: are not nodes.
std::string autograd_node(std::string_view name) {
  size_t paren = name.find('(');
  std::string_view head = name.substr(0, paren);
  for (size_t pos = head.find("Backward"); pos != std::string_view::npos; pos = head.find("Backward", pos + 1)) {
    size_t end = pos + 8;
    while (end < head.size() && head[end] >= '0' && head[end] <= '9') ++end;
    if (end + 2 > head.size() || head.compare(end, 2, "::") != 0) continue;  // a class followed by a member
    size_t start = pos;
    while (start > 0 && is_identifier_char(head[start - 1])) --start;
    if (start == pos) continue;  // "Backward" alone is not a node name
    return std::string(head.substr(start, end - start));
  }
  return "";
}

Sites::Sites(const snapshot::Snapshot& snap) : snap_(snap) {
  frames_.reserve(snap.frames.size());
  for (uint32_t f = 0; f < snap.frames.size(); ++f) frames_.push_back(describe_frame(snapshot::FrameId{f}));
  const size_t n = snap.stacks.size();
  site_of_stack_.resize(n);
  traits_.resize(n);
  site_frame_.assign(n, UINT32_MAX);
  std::unordered_map<std::string, uint32_t, util::Hasher> index;
  for (uint32_t i = 0; i < n; ++i) {
    std::string text = compute_site(snapshot::StackId{i}, traits_[i], site_frame_[i]);
    auto [it, inserted] = index.try_emplace(std::move(text), static_cast<uint32_t>(names_.size()));
    if (inserted) names_.push_back(it->first);
    site_of_stack_[i] = SiteId{it->second};
  }
}

// A name from the input, at most kMaxName bytes (the rest elided): labels built from
// hostile frames stay small however long the strings in the file are.
static std::string capped(std::string_view s) {
  constexpr size_t kMaxName = 1024;
  if (s.size() <= kMaxName) return std::string(s);
  size_t cut = kMaxName;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 sequences
  return std::string(s.substr(0, cut)) + "...";
}

std::string Sites::frame_string(snapshot::FrameId id) const {
  const snapshot::Frame& f = snap_.frames[id];
  std::string_view file = snap_.strings[f.filename];
  std::string_view name = snap_.strings[f.name];
  if ((file.empty() || file == "??") && f.line == 0) return capped(name);
  std::string out = capped(basename(file));
  out += ':';
  out += std::to_string(f.line);
  out += ':';
  out += capped(name);
  return out;
}

Sites::FrameInfo Sites::describe_frame(snapshot::FrameId f) const {
  std::string_view file = snap_.strings[snap_.frames[f].filename];
  std::string_view name = snap_.strings[snap_.frames[f].name];
  FrameInfo i;
  i.kind = classify_frame(file);
  i.noise = is_noise_frame(file, name);
  i.backward = is_backward_frame(file, name);
  i.optimizer = contains(file, "/optim/") || contains(file, "/optimizers/") || contains(name, "Optimizer.step");
  i.module_call = contains(file, "torch/nn/modules/module.py");
  i.forward = name == "forward" || contains(file, "torch/nn/modules/");
  if (i.kind == FrameKind::Native) {
    i.node = autograd_node(name);
    i.op = aten_op(name);
    i.machinery = allocation_machinery(name);
  }
  return i;
}

std::string Sites::compute_site(snapshot::StackId stack, StackTraits& traits, uint32_t& frame) const {
  // The innermost user frame; else the innermost Python frame; else, for stacks
  // captured in C++ only, the autograd node or ATen operator being run; else the
  // innermost frame outside the allocator. The walk also notes the stack's traits.
  std::string text;
  const snapshot::FrameId* python = nullptr;
  const snapshot::FrameId* native = nullptr;
  const snapshot::FrameId* innermost = nullptr;
  std::string_view node, op;
  for (const auto& f : snap_.stacks[stack]) {
    const FrameInfo& fi = frames_[f.v];
    traits.backward = traits.backward || fi.backward;
    traits.optimizer = traits.optimizer || fi.optimizer;
    traits.module_call = traits.module_call || fi.module_call;
    traits.forward = traits.forward || fi.forward;
    if (!text.empty() || fi.noise) continue;
    if (!innermost) innermost = &f;
    if (fi.kind == FrameKind::User) {
      text = frame_string(f);
      frame = f.v;
      continue;
    }
    if (fi.kind != FrameKind::Native) {
      if (!python) python = &f;
      continue;
    }
    if (node.empty()) node = fi.node;
    if (op.empty()) op = fi.op;
    if (!native && !fi.machinery) native = &f;
  }
  if (!text.empty()) return text;
  const snapshot::FrameId* named = python                         ? python
                                   : !node.empty() || !op.empty() ? nullptr
                                   : native                       ? native
                                                                  : innermost;
  if (named) frame = named->v;
  if (python) return frame_string(*python);
  if (!node.empty()) return "backward: " + std::string(node);
  if (!op.empty()) return std::string(op);
  if (native) return frame_string(*native);
  if (innermost) return frame_string(*innermost);
  return kNoStack;
}

std::vector<std::string> Sites::stack(snapshot::StackId stack) const {
  std::vector<std::string> out;
  for (const auto& f : snap_.stacks[stack]) {
    if (frames_[f.v].noise) continue;
    out.push_back(frame_string(f));
  }
  return out;
}

std::vector<std::string> Sites::callers(snapshot::StackId stack, size_t max) const {
  std::vector<std::string> out;
  const std::string& own = site(stack);
  bool past_site = false;
  for (snapshot::FrameId id : snap_.stacks[stack]) {
    if (frames_[id.v].noise || frames_[id.v].kind != FrameKind::User) continue;
    std::string text = frame_string(id);
    if (!past_site) {
      past_site = text == own;
      continue;
    }
    if (out.size() == max) break;
    out.push_back(std::move(text));
  }
  return out;
}

std::vector<snapshot::FrameId> Sites::user_chain(snapshot::StackId stack) const {
  std::vector<snapshot::FrameId> out;
  for (snapshot::FrameId id : snap_.stacks[stack])
    if (!frames_[id.v].noise && frames_[id.v].kind == FrameKind::User) out.push_back(id);
  return {out.rbegin(), out.rend()};
}

}  // namespace memsnap::analysis
