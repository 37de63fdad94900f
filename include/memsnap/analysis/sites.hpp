// How every memsnap report names where memory came from: the allocation *site*.
//
// A site is "file.py:LINE:function" of the innermost frame that is the user's
// code (a Python frame outside torch/, outside installed packages -- site-packages,
// dist-packages, and Lightning, Hydra, timm, transformers, accelerate, DeepSpeed
// wherever they live --, outside the Python runtime, and outside the code torch.compile and
// torch.fx generate -- inductor's modules in its cache directory, "/tmp/torchinductor_<user>/
// p6/cp6jhjzn….py" (or "<2 chars>/c<hash>.py" under any cache directory), and fx's
// "<eval_with_key>.N", which count as torch's --; CodeRules' globs override all of these),
// falling back to the innermost Python frame, and for stacks captured in C++ alone
// (the autograd engine's threads run backward without Python frames) to
// "parameter gradients (backward)" for AccumulateGrad's allocations, else the
// autograd node being run ("backward: MmBackward0"), else the ATen operator
// ("aten::mm"), else the innermost frame outside the caching allocator, all after
// the viewer's noise filter (SNAPSHOT_FORMAT.md §5). Each site also keeps the
// library call its memory went through ("via torch.nn.modules.linear.forward"; for
// generated code "via compiled graph (torch.compile)" or "via fx graph (torch.fx)"):
// its context. A stack is the list of frame
// strings, innermost first, after the noise filter. Every analysis and report
// names sites through this table; it is built once per snapshot and read-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

/// Library: installed third-party Python code (site-packages, dist-packages, and the
/// frameworks named above); Torch: PyTorch's own Python code.
enum class FrameKind : uint8_t { User, Torch, PythonRuntime, Native, Library };
const char* to_string(FrameKind k);

/// Which Python files are the user's code and which are library code. The CLI fills
/// the globs from --user-code and --library; the defaults are in classify_frame.
/// A glob matches a file when it matches (fnmatch, `*` crossing `/`) the whole
/// recorded path or any part of it that starts after a `/` (so "train.py",
/// "mypkg/*" and "*/vendor/*" all do what they say). --user-code wins over
/// --library, both over the defaults; C++ frames stay native.
struct CodeRules {
  std::vector<std::string> user_code;
  std::vector<std::string> library;
  FrameKind classify(std::string_view filename) const;
  bool empty() const { return user_code.empty() && library.empty(); }
};

/// Code PyTorch wrote at run time: an inductor output module (torch.compile) or an fx
/// GraphModule's forward ("<eval_with_key>.N"). Its frames are torch's, and a context names
/// the graph, not the generated module.
enum class GeneratedCode : uint8_t { None, Inductor, Fx };
GeneratedCode generated_code(std::string_view filename);

/// Classifies one frame by its file name, with the default rules.
FrameKind classify_frame(std::string_view filename);
/// Whether `glob` matches `path` as CodeRules describes.
bool path_glob_match(std::string_view glob, std::string_view path);
/// Dispatch machinery that names no cause and is collapsed out of call graphs:
/// nn.Module's _call_impl/_wrapped_call_impl, the C++ dispatcher, ATen's operator
/// and allocation internals (at::, c10::) and the caching allocator. Autograd nodes
/// (AccumulateGrad::apply, *Backward0::apply) and at::native kernels are not.
bool is_dispatch_frame(std::string_view filename, std::string_view name);
/// The library frame as a dotted name: ".../site-packages/torch/nn/modules/linear.py"
/// and "forward" -> "torch.nn.modules.linear.forward"; generated code: "compiled graph
/// (torch.compile)", "fx graph (torch.fx)".
std::string library_call_name(std::string_view filename, std::string_view name);
/// The viewer's noise filter: unwinder, interpreter and dispatcher frames.
bool is_noise_frame(std::string_view filename, std::string_view name);
/// "torch::autograd::generated::MmBackward0::apply(...)" -> "MmBackward0"; "" when the
/// frame runs no autograd node.
std::string autograd_node(std::string_view function_name);

/// The rules above for every frame of one snapshot, worked out once per distinct file name and
/// once per distinct function name: a frame's answers combine the facts of its two strings. A
/// hostile file can give thousands of frames one 1 MiB file name (pickle's memo stores it
/// once); asking each frame's rules of its strings would read that name thousands of times
/// (issue 38). Here the work is linear in the bytes of the distinct strings.
class FrameClassifier {
 public:
  FrameClassifier(const snapshot::Snapshot& snap, const CodeRules& rules);
  FrameKind kind(snapshot::FrameId f) const { return file(f).kind; }                  // rules.classify
  FrameKind default_kind(snapshot::FrameId f) const { return file(f).default_kind; }  // classify_frame
  bool noise(snapshot::FrameId f) const { return name(f).noise || file(f).noise; }    // is_noise_frame
  bool dispatch(snapshot::FrameId f) const;                                           // is_dispatch_frame
  bool backward(snapshot::FrameId f) const;
  bool optimizer(snapshot::FrameId f) const { return file(f).optim || name(f).optimizer_step; }
  bool module_call(snapshot::FrameId f) const { return file(f).module_py; }
  bool forward(snapshot::FrameId f) const { return name(f).forward || file(f).nn_modules; }
  bool accumulate_grad(snapshot::FrameId f) const { return name(f).accumulate_grad; }
  bool machinery(snapshot::FrameId f) const { return name(f).machinery; }
  bool generated(snapshot::FrameId f) const { return file(f).generated; }  // generated_code
  /// The frame constructs a parameter: torch/nn/parameter.py's __new__, or a torch.nn module's
  /// __init__ or reset_parameters.
  bool builds_parameter(snapshot::FrameId f) const;
  bool adam(snapshot::FrameId f) const { return file(f).adam; }  // a file under /optim/adam
  /// The function's name holds "train" in any (ASCII) case.
  bool train_name(snapshot::FrameId f) const { return name(f).train; }
  /// library_call_name, at most 1 KiB (and "..."): the file's part is worked out once per distinct
  /// file, so a call costs the cap, not the file name's length.
  std::string call_name(snapshot::FrameId f) const;
  /// The autograd node and the ATen op the function name runs ("" if none), at most 1 KiB each.
  const std::string& node(snapshot::FrameId f) const { return name(f).node; }
  const std::string& op(snapshot::FrameId f) const { return name(f).op; }
  /// The file name's last component (after the last '/' or '\\').
  std::string_view basename(snapshot::FrameId f) const;

 private:
  struct FileFacts {
    FrameKind kind = FrameKind::Native, default_kind = FrameKind::Native;
    bool noise = false, py = false, module_py = false, nn_modules = false, optim = false, autograd_entry = false;
    bool parameter_py = false, adam = false;  // ends in nn/parameter.py; holds /optim/adam
    bool generated = false;
    bool module_cut = false;  // `module` is capped: the call name is the module's start alone
    std::string module;       // library_call_name's module, capped; generated code: the whole call name
    size_t base = 0;          // where the basename starts
  };
  struct NameFacts {
    bool noise = false, dispatch_native = false, call_impl = false, backward_native = false;
    bool engine_run = false, backward_or_grad = false, optimizer_step = false, forward = false;
    bool accumulate_grad = false, machinery = false;
    bool new_ = false, init_or_reset = false, train = false;  // __new__; __init__ or reset_parameters
    std::string node, op;
  };
  const FileFacts& file(snapshot::FrameId f) const { return files_[file_slot_[snap_.frames[f].filename.v]]; }
  const NameFacts& name(snapshot::FrameId f) const { return names_[name_slot_[snap_.frames[f].name.v]]; }

  const snapshot::Snapshot& snap_;
  std::vector<uint32_t> file_slot_, name_slot_;  // string id -> its facts (UINT32_MAX: no frame's)
  std::vector<FileFacts> files_;
  std::vector<NameFacts> names_;
};

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
  explicit Sites(const snapshot::Snapshot& snap, const CodeRules& rules = {});

  SiteId site_of(snapshot::StackId stack) const { return site_of_stack_[stack.v]; }
  const std::string& name(SiteId site) const { return names_[site.v]; }
  const std::string& site(snapshot::StackId stack) const { return name(site_of(stack)); }
  size_t size() const { return names_.size(); }
  const StackTraits& traits(snapshot::StackId stack) const { return traits_[stack.v]; }
  /// The site of that name, if some stack has it.
  std::optional<SiteId> find(std::string_view name) const;
  /// Whether the site is a frame of the user's code (else the stack had none).
  bool is_user(SiteId site) const { return user_[site.v] != 0; }
  /// The library call the site's memory went through ("torch.nn.modules.linear.forward",
  /// "parameter gradients (backward)", "aten::mm"; text says "via" it); "" when none. A site reached
  /// through several library calls has the one of its first stack.
  const std::string& context(SiteId site) const { return contexts_[site.v]; }
  /// The same for one stack.
  std::string stack_context(snapshot::StackId stack) const;
  const CodeRules& rules() const { return rules_; }
  /// The frame facts of the snapshot, by rules() (a flame of the same snapshot shares them).
  const FrameClassifier& classifier() const { return classifier_; }
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
    bool machinery = false;        // the caching allocator or tensor construction
    bool dispatch = false;         // is_dispatch_frame
    bool generated = false;        // torch.compile's or torch.fx's generated code
    bool accumulate_grad = false;  // torch::autograd::AccumulateGrad: a parameter's gradient
    bool parameter = false;        // FrameClassifier::builds_parameter
    bool adam = false;             // FrameClassifier::adam
    bool train = false;            // FrameClassifier::train_name
    std::string node, op;          // native frames: the autograd node and ATen op they run, if any
  };
  const FrameInfo& frame_info(snapshot::FrameId f) const { return frames_[f.v]; }

  static constexpr const char* kNoStack = "<no stack recorded>";
  static constexpr const char* kGradients = "parameter gradients (backward)";

 private:
  FrameInfo describe_frame(snapshot::FrameId f) const;
  std::string compute_site(snapshot::StackId stack, StackTraits& traits, uint32_t& frame) const;
  std::string compute_context(snapshot::StackId stack, uint32_t site_frame) const;

  const snapshot::Snapshot& snap_;
  CodeRules rules_;
  FrameClassifier classifier_;
  std::vector<FrameInfo> frames_;
  std::vector<SiteId> site_of_stack_;
  std::vector<StackTraits> traits_;
  std::vector<uint32_t> site_frame_;  // FrameId, or UINT32_MAX
  std::vector<std::string> names_;
  std::vector<std::string> contexts_;  // per site
  std::vector<uint8_t> user_;          // per site
  std::unordered_map<std::string, uint32_t> index_;
};

/// The read-only context every analysis of one snapshot shares.
struct Context {
  explicit Context(const snapshot::Snapshot& s, const CodeRules& rules = {}) : snap(s), sites(s, rules) {}
  const snapshot::Snapshot& snap;
  const Sites sites;
};

}  // namespace memsnap::analysis
