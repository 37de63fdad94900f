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

SiteId Sites::site_of(snapshot::StackId stack) {
  uint32_t& slot = site_of_stack_[stack.v];
  if (slot != kUnset) return SiteId{slot};
  auto frames = snap_.stacks[stack];
  const snapshot::FrameId* chosen = nullptr;
  const snapshot::FrameId* fallback = nullptr;
  for (const auto& f : frames) {
    std::string_view file = snap_.strings[snap_.frames[f].filename];
    std::string_view name = snap_.strings[snap_.frames[f].name];
    if (is_noise_frame(file, name)) continue;
    if (!fallback) fallback = &f;
    if (classify_frame(file) == FrameKind::User) {
      chosen = &f;
      break;
    }
  }
  if (!chosen) chosen = fallback;
  std::string text = chosen ? frame_string(*chosen) : std::string(kNoStack);
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
