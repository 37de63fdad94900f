// Frame classification, the noise filter, stack traits and the site of every stack.
#include "memsnap/analysis/sites.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <string>
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
// Whether `s`, lowercased (ASCII, the C locale's tolower), holds `part` (lowercase).
bool contains_lower(std::string_view s, std::string_view part) {
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return contains(lower, part);
}

// After the last '/' or '\\' (find_last_of("/\\") calls memchr on its set per byte it passes:
// a file name of 16 MiB with no slash after its start took 40 ms a call).
std::string_view basename(std::string_view path) {
  for (size_t i = path.size(); i-- > 0;)
    if (path[i] == '/' || path[i] == '\\') return path.substr(i + 1);
  return path;
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
// A Python frame is backward work by its name, or by its name in one of these files; a C++
// frame by its name alone (FrameClassifier::backward puts the two halves together).
bool autograd_entry_file(std::string_view file) {
  return ends_with(file, "torch/autograd/__init__.py") || ends_with(file, "torch/_tensor.py");
}
bool backward_native_name(std::string_view name) {
  return contains(name, "autograd::Engine") || !autograd_node(name).empty();
}

constexpr std::string_view kModulePy = "torch/nn/modules/module.py";
bool call_impl_name(std::string_view name) {
  return name == "_call_impl" || name == "_wrapped_call_impl";
}

}  // namespace

const char* to_string(FrameKind k) {
  switch (k) {
    case FrameKind::User: return "user";
    case FrameKind::Torch: return "torch";
    case FrameKind::PythonRuntime: return "python";
    case FrameKind::Native: return "native";
    case FrameKind::Library: return "library";
  }
  return "?";
}

namespace {

// Frameworks that are library code wherever they are installed (an editable install
// or a vendored copy is not under site-packages): a path component of these names.
constexpr std::string_view kLibraryDirs[] = {"/lightning/", "/pytorch_lightning/",  "/lightning_fabric/", "/hydra/",
                                             "/timm/",      "/transformers/",       "/accelerate/",       "/deepspeed/",
                                             "/omegaconf/", "/lightning_utilities/"};

std::string unix_path(std::string_view file) {
  std::string p(file);
  std::replace(p.begin(), p.end(), '\\', '/');
  return p;
}

// Inductor's output module: "c" and its hash's base32 letters, in the directory named by the
// hash's first two ("p6/cp6jhjzn…py"), under the cache directory (torchinductor_<user> unless
// TORCHINDUCTOR_CACHE_DIR names another).
bool inductor_module(std::string_view file) {
  if (!ends_with(file, ".py")) return false;
  if (contains(file, "/torchinductor_") || file.substr(0, 14) == "torchinductor_") return true;
  std::string_view stem = basename(file);
  stem.remove_suffix(3);
  const size_t at = file.size() - 3 - stem.size();  // where the stem starts
  if (stem.size() < 40 || stem[0] != 'c' || at < 3 || file[at - 1] != '/') return false;
  for (char c : stem)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return file.substr(at - 3, 2) == stem.substr(1, 2) && (at == 3 || file[at - 4] == '/');
}

}  // namespace

GeneratedCode generated_code(std::string_view file) {
  if (file.substr(0, 15) == "<eval_with_key>") return GeneratedCode::Fx;
  if (file.find('\\') != std::string_view::npos ? inductor_module(unix_path(file)) : inductor_module(file))
    return GeneratedCode::Inductor;
  return GeneratedCode::None;
}

namespace {

FrameKind default_kind(std::string_view file) {
  if (generated_code(file) != GeneratedCode::None) return FrameKind::Torch;
  bool python = ends_with(file, ".py") || (file.size() > 1 && file.front() == '<' && file.back() == '>');
  if (!python) return FrameKind::Native;
  if (file.substr(0, 7) == "<frozen") return FrameKind::PythonRuntime;
  if (contains(file, "/torch/") || file.substr(0, 6) == "torch/") return FrameKind::Torch;
  if (contains(file, "/site-packages/") || contains(file, "/dist-packages/")) return FrameKind::Library;
  if (contains(file, "/lib/python2") || contains(file, "/lib/python3") || contains(file, "/lib/pypy"))
    return FrameKind::PythonRuntime;
  for (auto dir : kLibraryDirs)
    if (contains(file, dir) || file.substr(0, dir.size() - 1) == dir.substr(1)) return FrameKind::Library;
  return FrameKind::User;
}

bool any_match(const std::vector<std::string>& globs, std::string_view path) {
  for (const auto& g : globs)
    if (path_glob_match(g, path)) return true;
  return false;
}

}  // namespace

bool path_glob_match(std::string_view glob, std::string_view path) {
  std::string g(glob), p = unix_path(path);
  if (fnmatch(g.c_str(), p.c_str(), 0) == 0) return true;
  for (size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1))
    if (fnmatch(g.c_str(), p.c_str() + slash + 1, 0) == 0) return true;
  return false;
}

FrameKind classify_frame(std::string_view file) {
  if (file.find('\\') != std::string_view::npos) return default_kind(unix_path(file));  // judged with forward slashes
  return default_kind(file);
}

FrameKind CodeRules::classify(std::string_view file) const {
  FrameKind k = classify_frame(file);
  if (k == FrameKind::Native || empty()) return k;
  if (any_match(user_code, file)) return FrameKind::User;
  if (any_match(library, file)) return FrameKind::Library;
  return k;
}

// is_dispatch_frame for a frame whose file is not Python: by the function's name alone.
static bool dispatch_native_name(std::string_view name) {
  if (name.empty() || !autograd_node(name).empty() || contains(name, "AccumulateGrad")) return false;
  // The function's qualified name, without return type and arguments.
  std::string_view head = name.substr(0, name.find('('));
  if (size_t space = head.rfind(' '); space != std::string_view::npos && head.find('<') == std::string_view::npos)
    head = head.substr(space + 1);
  if (contains(head, "at::native::") && !allocation_machinery(head)) return false;  // a kernel: names the op
  static constexpr std::string_view kParts[] = {"c10::",
                                                "at::",
                                                "CachingAllocator",
                                                "Dispatcher",
                                                "wrap_kernel_functor",
                                                "torch::autograd::VariableType",
                                                "torch::ADInplaceOrView",
                                                "torch::autograd::impl"};
  for (auto p : kParts)
    if (contains(head, p)) return true;
  return false;
}

namespace {

// What library_call_name says of generated code: no module of it is one a user could look up.
constexpr std::string_view kInductorCall = "compiled graph (torch.compile)";
constexpr std::string_view kFxCall = "fx graph (torch.fx)";

// library_call_name's module: ".../site-packages/torch/nn/modules/linear.py" -> "torch.nn.modules.linear".
std::string library_module(std::string_view file) {
  std::string p = unix_path(file);
  std::string_view path = p;
  size_t start = std::string_view::npos;
  for (std::string_view marker : {"site-packages/", "dist-packages/"})
    if (size_t at = path.rfind(marker); at != std::string_view::npos) {
      start = at + marker.size();
      break;
    }
  if (start == std::string_view::npos)
    if (size_t at = path.rfind("/torch/"); at != std::string_view::npos) start = at + 1;
  if (start == std::string_view::npos) start = path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1;
  std::string_view module = path.substr(start);
  if (ends_with(module, ".py")) module.remove_suffix(3);
  if (ends_with(module, "/__init__")) module.remove_suffix(9);
  std::string out(module);
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

}  // namespace

std::string library_call_name(std::string_view file, std::string_view name) {
  switch (generated_code(file)) {
    case GeneratedCode::Inductor: return std::string(kInductorCall);
    case GeneratedCode::Fx: return std::string(kFxCall);
    case GeneratedCode::None: break;
  }
  std::string out = library_module(file);
  if (!out.empty()) out += '.';
  out += name;
  return out;
}

bool is_dispatch_frame(std::string_view file, std::string_view name) {
  if (ends_with(file, ".py")) return call_impl_name(name) && contains(file, kModulePy);
  return dispatch_native_name(name);
}

// The noise filter's two halves: by the function's name, by the file's.
static bool noise_name(std::string_view name) {
  static constexpr std::string_view kNames[] = {"unwind::unwind",    "CapturedTraceback::gather",
                                                "gather_with_cpp",   "_start",
                                                "__libc_start_main", "PyEval_",
                                                "PyObject_",         "PyFunction_"};
  for (auto n : kNames)
    if (contains(name, n)) return true;
  return false;
}

static bool noise_file(std::string_view file) {
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
  for (auto f : kFiles)
    if (contains(file, f)) return true;
  // "/Register" and "/Redispatch" also match a bare file name (native frames often carry no directory).
  std::string_view base = basename(file);
  return base.substr(0, 8) == "Register" || base.substr(0, 10) == "Redispatch";
}

bool is_noise_frame(std::string_view file, std::string_view name) {
  return noise_name(name) || noise_file(file);
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

// A name from the input, at most kMaxName bytes (the rest elided): labels built from
// hostile frames stay small however long the strings in the file are.
constexpr size_t kMaxName = 1024;
static std::string capped(std::string_view s) {
  if (s.size() <= kMaxName) return std::string(s);
  size_t cut = kMaxName;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 sequences
  return std::string(s.substr(0, cut)) + "...";
}

// ---- FrameClassifier ------------------------------------------------------------------------

FrameClassifier::FrameClassifier(const snapshot::Snapshot& snap, const CodeRules& rules)
    : snap_(snap), file_slot_(snap.strings.size(), UINT32_MAX), name_slot_(snap.strings.size(), UINT32_MAX) {
  for (uint32_t i = 0; i < snap.frames.size(); ++i) {
    const snapshot::Frame& f = snap.frames[snapshot::FrameId{i}];
    if (uint32_t& slot = file_slot_[f.filename.v]; slot == UINT32_MAX) {
      slot = static_cast<uint32_t>(files_.size());
      std::string_view file = snap.strings[f.filename];
      FileFacts& ff = files_.emplace_back();
      ff.default_kind = classify_frame(file);
      GeneratedCode generated = generated_code(file);
      ff.generated = generated != GeneratedCode::None;
      if (ff.generated) {
        ff.module = library_call_name(file, "");
      } else if (ff.default_kind != FrameKind::Native) {
        std::string module = library_module(file);
        ff.module_cut = module.size() > kMaxName;
        ff.module = capped(module);
      }
      ff.kind = rules.classify(file);
      ff.noise = noise_file(file);
      ff.py = ends_with(file, ".py");
      ff.module_py = contains(file, kModulePy);
      ff.nn_modules = contains(file, "torch/nn/modules/");
      ff.parameter_py = ends_with(file, "nn/parameter.py");
      ff.adam = contains(file, "/optim/adam");
      ff.optim = contains(file, "/optim/") || contains(file, "/optimizers/");
      ff.autograd_entry = autograd_entry_file(file);
      ff.base = file.size() - analysis::basename(file).size();
    }
    if (uint32_t& slot = name_slot_[f.name.v]; slot == UINT32_MAX) {
      slot = static_cast<uint32_t>(names_.size());
      std::string_view name = snap.strings[f.name];
      NameFacts& nf = names_.emplace_back();
      nf.noise = noise_name(name);
      nf.dispatch_native = dispatch_native_name(name);
      nf.call_impl = call_impl_name(name);
      nf.backward_native = backward_native_name(name);
      nf.engine_run = name == "_engine_run_backward";
      nf.backward_or_grad = name == "backward" || name == "grad";
      nf.optimizer_step = contains(name, "Optimizer.step");
      nf.forward = name == "forward";
      nf.accumulate_grad = contains(name, "AccumulateGrad");
      nf.machinery = allocation_machinery(name);
      nf.new_ = name == "__new__";
      nf.init_or_reset = name == "__init__" || name == "reset_parameters";
      nf.train = contains_lower(name, "train");
      nf.node = capped(autograd_node(name));
      nf.op = capped(aten_op(name));
    }
  }
}

bool FrameClassifier::dispatch(snapshot::FrameId f) const {
  const FileFacts& ff = file(f);
  return ff.py ? name(f).call_impl && ff.module_py : name(f).dispatch_native;
}

bool FrameClassifier::backward(snapshot::FrameId f) const {
  const FileFacts& ff = file(f);
  const NameFacts& nf = name(f);
  return ff.py ? nf.engine_run || (ff.autograd_entry && nf.backward_or_grad) : nf.backward_native;
}

bool FrameClassifier::builds_parameter(snapshot::FrameId f) const {
  const FileFacts& ff = file(f);
  const NameFacts& nf = name(f);
  return (ff.parameter_py && nf.new_) || (ff.nn_modules && nf.init_or_reset);
}

std::string FrameClassifier::call_name(snapshot::FrameId f) const {
  const FileFacts& ff = file(f);
  if (ff.generated || ff.module_cut) return ff.module;
  std::string out = ff.module;
  if (!out.empty()) out += '.';
  out += capped(snap_.strings[snap_.frames[f].name]);
  return capped(out);
}

std::string_view FrameClassifier::basename(snapshot::FrameId f) const {
  return snap_.strings[snap_.frames[f].filename].substr(file(f).base);
}

// ---- Sites ----------------------------------------------------------------------------------

Sites::Sites(const snapshot::Snapshot& snap, const CodeRules& rules)
    : snap_(snap), rules_(rules), classifier_(snap, rules_) {
  frames_.reserve(snap.frames.size());
  for (uint32_t f = 0; f < snap.frames.size(); ++f) frames_.push_back(describe_frame(snapshot::FrameId{f}));
  const size_t n = snap.stacks.size();
  site_of_stack_.resize(n);
  traits_.resize(n);
  site_frame_.assign(n, UINT32_MAX);
  for (uint32_t i = 0; i < n; ++i) {
    std::string text = compute_site(snapshot::StackId{i}, traits_[i], site_frame_[i]);
    auto [it, inserted] = index_.try_emplace(std::move(text), static_cast<uint32_t>(names_.size()));
    if (inserted) {
      names_.push_back(it->first);
      uint32_t f = site_frame_[i];
      user_.push_back(f != UINT32_MAX && frames_[f].kind == FrameKind::User && !frames_[f].noise);
      // A context that is the site's own name ("backward: MmBackward0 via backward: MmBackward0",
      // a stack in C++ alone) says nothing: none.
      std::string context = compute_context(snapshot::StackId{i}, f);
      if (context == it->first) context.clear();
      contexts_.push_back(std::move(context));
    }
    site_of_stack_[i] = SiteId{it->second};
  }
}

std::optional<SiteId> Sites::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return std::nullopt;
  return SiteId{it->second};
}

std::string Sites::stack_context(snapshot::StackId stack) const {
  std::string context = compute_context(stack, site_frame_[stack.v]);
  if (context == site(stack)) context.clear();
  return context;
}

// The library call under the site frame: code torch.compile or torch.fx generated, if the
// memory went through some (the call a user made; the runtime's frames inside it are its
// machinery), else the innermost torch or library Python frame inside the site that is not
// dispatch machinery; else, for memory a C++ frame allocated, a parameter's gradient, the
// autograd node or the ATen operator.
std::string Sites::compute_context(snapshot::StackId stack, uint32_t site_frame) const {
  const auto& frames = snap_.stacks[stack];
  std::string_view node, op;
  bool grad = false;
  const snapshot::FrameId* library = nullptr;
  for (const auto& f : frames) {
    if (f.v == site_frame) break;
    const FrameInfo& fi = frames_[f.v];
    if (fi.noise) continue;
    if ((fi.kind == FrameKind::Torch || fi.kind == FrameKind::Library) && !fi.dispatch) {
      if (!library || fi.generated) library = &f;
      if (fi.generated) break;
      continue;
    }
    if (library || fi.kind != FrameKind::Native) continue;
    grad = grad || fi.accumulate_grad;
    if (node.empty()) node = fi.node;
    if (op.empty()) op = fi.op;
  }
  if (library) return classifier_.call_name(*library);
  if (grad) return kGradients;
  if (!node.empty()) return "backward: " + std::string(node);
  if (!op.empty()) return std::string(op);
  return "";
}

std::string Sites::frame_string(snapshot::FrameId id) const {
  const snapshot::Frame& f = snap_.frames[id];
  std::string_view file = snap_.strings[f.filename];
  std::string_view name = snap_.strings[f.name];
  if ((file.empty() || file == "??") && f.line == 0) return capped(name);
  std::string out = capped(classifier_.basename(id));
  out += ':';
  out += std::to_string(f.line);
  out += ':';
  out += capped(name);
  return out;
}

Sites::FrameInfo Sites::describe_frame(snapshot::FrameId f) const {
  const FrameClassifier& c = classifier_;
  FrameInfo i;
  i.kind = c.kind(f);
  i.noise = c.noise(f);
  i.backward = c.backward(f);
  i.optimizer = c.optimizer(f);
  i.module_call = c.module_call(f);
  i.forward = c.forward(f);
  i.dispatch = c.dispatch(f);
  i.generated = c.generated(f);
  i.parameter = c.builds_parameter(f);
  i.adam = c.adam(f);
  i.train = c.train_name(f);
  if (i.kind == FrameKind::Native) {
    i.accumulate_grad = c.accumulate_grad(f);
    i.node = c.node(f);
    i.op = c.op(f);
    i.machinery = c.machinery(f);
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
  bool grad = false;
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
    grad = grad || fi.accumulate_grad;
    if (node.empty()) node = fi.node;
    if (op.empty()) op = fi.op;
    if (!native && !fi.machinery) native = &f;
  }
  // A C++-only stack under the autograd engine that runs no node and allocates through
  // empty_strided (or AccumulateGrad itself) makes a parameter's gradient.
  if (!python && (grad || (traits.backward && node.empty() && op == "aten::empty_strided"))) return kGradients;
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
