// The site definition: innermost user frame, noise filter, fallbacks.
#include <doctest/doctest.h>

#include <cctype>
#include <set>

#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using analysis::FrameKind;

TEST_CASE("frame classification") {
  CHECK(analysis::classify_frame("/workspace/train.py") == FrameKind::User);
  CHECK(analysis::classify_frame("/opt/conda/lib/python3.11/site-packages/torch/nn/modules/linear.py") ==
        FrameKind::Torch);
  CHECK(analysis::classify_frame("/home/u/.conda/envs/x/lib/python3.9/runpy.py") == FrameKind::PythonRuntime);
  CHECK(analysis::classify_frame("<frozen runpy>") == FrameKind::PythonRuntime);
  CHECK(analysis::classify_frame("<ipython-input-3-abc>") == FrameKind::User);
  CHECK(analysis::classify_frame("/usr/lib/python3/dist-packages/transformers/models/llama.py") == FrameKind::Library);
  CHECK(analysis::classify_frame("??") == FrameKind::Native);
  CHECK(analysis::classify_frame("C:\\Python311\\Lib\\site-packages\\torch\\nn\\modules\\module.py") ==
        FrameKind::Torch);
  CHECK(analysis::classify_frame("C:\\work\\train.py") == FrameKind::User);
  CHECK(analysis::classify_frame("") == FrameKind::Native);
  CHECK(analysis::classify_frame("/usr/local/src/conda/python-3.11.7/Python/ceval.c") == FrameKind::Native);
  CHECK(analysis::is_noise_frame("/usr/local/src/conda/python-3.11.7/Python/ceval.c", "_PyEval_EvalFrameDefault"));
  CHECK(analysis::is_noise_frame("build/aten/src/ATen/RegisterBackendSelect.cpp", "at::_ops::empty::redispatch"));
  CHECK_FALSE(analysis::is_noise_frame("??", "at::native::empty_cuda(...)"));
}

TEST_CASE("the leak fixture's leaked blocks are named by the truth's site") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/leak.pickle").string());
  auto truth = test::read_json_file(test::testdata("snapgen/leak.truth.json"));
  analysis::Sites sites(l.snapshot);
  std::string want = truth["leak"]["site"];
  size_t found = 0;
  for (const auto& b : l.snapshot.devices[0].blocks)
    if (b.state == snapshot::BlockState::ActiveAllocated && sites.site(b.stack) == want) ++found;
  CHECK(found == truth["steps"].get<size_t>());
}

TEST_CASE("C++ frames and torch frames are skipped for the site but kept (filtered) in the stack") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/cpp.pickle").string());
  analysis::Sites sites(l.snapshot);
  size_t checked = 0;
  for (const auto& b : l.snapshot.devices[0].blocks) {
    if (b.stack.v == 0) continue;
    const std::string& site = sites.site(b.stack);
    CHECK(site.rfind("train.py:", 0) == 0);  // the simulated user script
    const auto& st = sites.stack(b.stack);
    REQUIRE_FALSE(st.empty());
    for (const auto& f : st) CHECK(f.find("_PyEval_EvalFrameDefault") == std::string::npos);
    CHECK(st.front().find("DeviceCachingAllocator::malloc") != std::string::npos);  // innermost first
    ++checked;
  }
  CHECK(checked > 0);
  CHECK(sites.site(snapshot::StackId{0}) == analysis::Sites::kNoStack);
}

TEST_CASE("autograd nodes are the class whose apply runs, never a helper namespace") {
  CHECK(analysis::autograd_node("torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor>&&)") ==
        "MulBackward0");
  CHECK(
      analysis::autograd_node(
          "at::Tensor torch::autograd::generated::details::mul_tensor_backward<at::Tensor>(at::Tensor, at::Tensor)") ==
      "");
  CHECK(analysis::autograd_node("torch::autograd::generated::ScaledDotProductEfficientAttentionBackward0::apply(x)") ==
        "ScaledDotProductEfficientAttentionBackward0");
  CHECK(analysis::autograd_node("torch::autograd::Engine::thread_main(x)") == "");
}

TEST_CASE("stacks captured in C++ only are named by their autograd node and ATen operator") {
  snapshot::Snapshot s;
  auto fr = [&](const char* file, const char* name) {
    return s.frames.intern({s.strings.intern(file), s.strings.intern(name), 0});
  };
  std::vector<snapshot::FrameId> backward = {
      fr("??", "torch::unwind::unwind()"),
      fr("CUDACachingAllocator.cpp",
         "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, "
         "CUstream_st*)"),
      fr("", "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>)"),
      fr("??", "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)"),
      fr("??", "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)"),
      fr("??", "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)")};
  std::vector<snapshot::FrameId> op_only = {backward[1], backward[3]};
  std::vector<snapshot::FrameId> machinery_only = {backward[1], backward[2]};
  auto a = s.stacks.intern(backward), b = s.stacks.intern(op_only), c = s.stacks.intern(machinery_only);
  analysis::Sites sites(s);
  CHECK(sites.site(a) == "backward: BmmBackward0");
  CHECK(sites.traits(a).backward);
  CHECK(sites.site(b) == "aten::bmm");
  // The library call such a site went through is the site itself: no "via" that repeats it.
  CHECK(sites.context(sites.site_of(a)).empty());
  CHECK(sites.stack_context(a).empty());
  CHECK(sites.context(sites.site_of(b)).empty());
  // nothing but the allocator: the innermost frame, as the definition's last resort
  CHECK(sites.site(c) == sites.frame_string(backward[1]));
}

TEST_CASE("frameworks are library code wherever installed; --user-code and --library override") {
  using analysis::FrameKind;
  CHECK(analysis::classify_frame("/opt/conda/lib/python3.11/site-packages/timm/models/vision_transformer.py") ==
        FrameKind::Library);
  CHECK(analysis::classify_frame("/opt/venv/lib/python3.10/site-packages/lightning/pytorch/strategies/strategy.py") ==
        FrameKind::Library);
  CHECK(analysis::classify_frame("/home/u/src/transformers/src/transformers/modeling_utils.py") == FrameKind::Library);
  CHECK(analysis::classify_frame("/home/u/proj/hydra_app/train.py") == FrameKind::User);
  analysis::CodeRules rules;
  rules.user_code = {"mypkg/*"};
  rules.library = {"*/vendor/*", "helpers.py"};
  CHECK(rules.classify("/x/site-packages/mypkg/model.py") == FrameKind::User);
  CHECK(rules.classify("/work/proj/vendor/lib.py") == FrameKind::Library);
  CHECK(rules.classify("/work/proj/helpers.py") == FrameKind::Library);
  CHECK(rules.classify("/work/proj/train.py") == FrameKind::User);
  CHECK(rules.classify("libc10_cuda.so") == FrameKind::Native);  // C++ frames stay native
  CHECK(analysis::path_glob_match("train.py", "/a/b/train.py"));
  CHECK_FALSE(analysis::path_glob_match("train.py", "/a/b/mytrain.py"));
}

TEST_CASE("dispatch frames are machinery; autograd nodes and kernels are not") {
  CHECK(analysis::is_dispatch_frame("/x/torch/nn/modules/module.py", "_call_impl"));
  CHECK(analysis::is_dispatch_frame("/x/torch/nn/modules/module.py", "_wrapped_call_impl"));
  CHECK_FALSE(analysis::is_dispatch_frame("/x/model.py", "_call_impl"));
  CHECK(analysis::is_dispatch_frame(
      "??", "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long)"));
  CHECK(analysis::is_dispatch_frame("??", "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"));
  CHECK_FALSE(analysis::is_dispatch_frame("??", "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)"));
  CHECK_FALSE(analysis::is_dispatch_frame("??", "torch::autograd::generated::MmBackward0::apply(x)"));
  CHECK(analysis::library_call_name("/x/site-packages/torch/nn/modules/linear.py", "forward") ==
        "torch.nn.modules.linear.forward");
  CHECK(analysis::library_call_name("/x/dist-packages/transformers/__init__.py", "f") == "transformers.f");
}

TEST_CASE("sites are the user's frame with the library call as context; gradients are named") {
  snapshot::Snapshot s;
  auto fr = [&](const char* file, const char* name, int64_t line) {
    return s.frames.intern({s.strings.intern(file), s.strings.intern(name), line});
  };
  std::vector<snapshot::FrameId> fwd = {fr("/x/site-packages/torch/nn/modules/linear.py", "forward", 125),
                                        fr("/x/site-packages/torch/nn/modules/module.py", "_call_impl", 1750),
                                        fr("/x/site-packages/timm/models/vision_transformer.py", "forward", 93),
                                        fr("/x/site-packages/torch/nn/modules/module.py", "_call_impl", 1750),
                                        fr("/work/model.py", "forward", 40),
                                        fr("/work/train.py", "main", 10)};
  std::vector<snapshot::FrameId> grad = {
      fr("??", "at::_ops::empty_strided::call(c10::ArrayRef<long>)", 0),
      fr("??", "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)", 0),
      fr("??", "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", 0)};
  auto a = s.stacks.intern(fwd), g = s.stacks.intern(grad);
  analysis::Sites sites(s);
  CHECK(sites.site(a) == "model.py:40:forward");
  CHECK(sites.is_user(sites.site_of(a)));
  CHECK(sites.context(sites.site_of(a)) == "torch.nn.modules.linear.forward");
  CHECK(sites.site(g) == analysis::Sites::kGradients);
  CHECK_FALSE(sites.is_user(sites.site_of(g)));
  REQUIRE(sites.find("model.py:40:forward"));
  CHECK(*sites.find("model.py:40:forward") == sites.site_of(a));
  // --user-code moves the site into the vendored timm file
  analysis::CodeRules rules;
  rules.user_code = {"timm/*"};
  analysis::Sites mine(s, rules);
  CHECK(mine.site(a) == "vision_transformer.py:93:forward");
}

TEST_CASE("the frame classifier answers as the per-frame rules on every fixture frame") {
  // FrameClassifier works per distinct string (issue 38); its answers must be those of
  // classify_frame, CodeRules::classify, is_noise_frame and is_dispatch_frame per frame.
  analysis::CodeRules rules;
  rules.user_code = {"*/models/*"};
  rules.library = {"train.py"};
  size_t frames = 0, noise = 0, dispatch = 0, user = 0, parameter = 0, adam = 0, train = 0;
  auto ends = [](std::string_view s, std::string_view t) {
    return s.size() >= t.size() && s.substr(s.size() - t.size()) == t;
  };
  auto has = [](std::string_view s, std::string_view t) { return s.find(t) != std::string_view::npos; };
  for (const char* name :
       {"snapgen/cpp.pickle", "snapgen/leak.pickle", "snapgen/forward.pickle", "snapgen/big_layer.pickle"}) {
    auto l = snapshot::load_snapshot(test::testdata(name).string());
    const auto& s = l.snapshot;
    for (const analysis::CodeRules& used : {rules, analysis::CodeRules{}}) {
      analysis::FrameClassifier c(s, used);
      for (uint32_t i = 0; i < s.frames.size(); ++i) {
        snapshot::FrameId id{i};
        std::string_view file = s.strings[s.frames[id].filename], fn = s.strings[s.frames[id].name];
        CHECK(c.default_kind(id) == analysis::classify_frame(file));
        CHECK(c.kind(id) == used.classify(file));
        CHECK(c.noise(id) == analysis::is_noise_frame(file, fn));
        CHECK(c.dispatch(id) == analysis::is_dispatch_frame(file, fn));
        CHECK(c.node(id) == analysis::autograd_node(fn));
        if (c.default_kind(id) != FrameKind::Native) CHECK(c.call_name(id) == analysis::library_call_name(file, fn));
        CHECK(std::string(c.basename(id)) == std::string(file.substr(file.find_last_of("/\\") + 1)));
        // The anti-patterns' questions (antipatterns.cpp asked them of each stack's frames' strings).
        const bool builds = (ends(file, "nn/parameter.py") && fn == "__new__") ||
                            (has(file, "torch/nn/modules/") && (fn == "__init__" || fn == "reset_parameters"));
        CHECK(c.builds_parameter(id) == builds);
        CHECK(c.adam(id) == has(file, "/optim/adam"));
        std::string lower(fn);
        for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        CHECK(c.train_name(id) == has(lower, "train"));
        ++frames;
        noise += c.noise(id);
        dispatch += c.dispatch(id);
        user += c.kind(id) == FrameKind::User;
        parameter += builds;
        adam += has(file, "/optim/adam");
        train += has(lower, "train");
      }
    }
  }
  // The fixtures reach every answer, so the comparison above can fail.
  CHECK(frames > 0);
  CHECK(noise > 0);
  CHECK(dispatch > 0);
  CHECK(user > 0);
  CHECK(parameter > 0);
  CHECK(adam > 0);
  CHECK(train > 0);
}

TEST_CASE("code torch.compile and torch.fx generate is torch's: the site is the user's frame that ran it") {
  constexpr const char* kInductor = "/tmp/torchinductor_u/p6/cp6jhjzn335lo2yptjts5dpdcdk4hshtke2lv7btq23fgwnwn4mq.py";
  CHECK(analysis::generated_code(kInductor) == analysis::GeneratedCode::Inductor);
  CHECK(analysis::classify_frame(kInductor) == FrameKind::Torch);
  // Any cache directory (TORCHINDUCTOR_CACHE_DIR): the module's directory is its hash's first two letters.
  CHECK(analysis::classify_frame("/cache/ab/cabxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.py") ==
        FrameKind::Torch);
  CHECK(analysis::classify_frame("/cache/zz/cabxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.py") ==
        FrameKind::User);
  CHECK(analysis::classify_frame("/w/cabxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.py") ==
        FrameKind::User);
  CHECK(analysis::classify_frame("C:\\Temp\\torchinductor_u\\p6\\cp6x.py") == FrameKind::Torch);
  CHECK(analysis::classify_frame("<eval_with_key>.12") == FrameKind::Torch);
  CHECK(analysis::generated_code("<eval_with_key>.12") == analysis::GeneratedCode::Fx);
  CHECK(analysis::generated_code("/work/torchinductor.py") == analysis::GeneratedCode::None);
  CHECK(analysis::library_call_name(kInductor, "call") == "compiled graph (torch.compile)");
  CHECK(analysis::library_call_name("<eval_with_key>.3", "forward") == "fx graph (torch.fx)");

  snapshot::Snapshot s;
  auto fr = [&](const char* file, const char* name, int64_t line) {
    return s.frames.intern({s.strings.intern(file), s.strings.intern(name), line});
  };
  const char* runtime = "/x/site-packages/torch/_inductor/runtime/triton_heuristics.py";
  const char* wrappers = "/x/site-packages/torch/_functorch/_aot_autograd/runtime_wrappers.py";
  // transformer.py runs the compiled graph, whose runtime allocates (as on a real 2.7b forward).
  std::vector<snapshot::FrameId> compiled = {fr(runtime, "prepare_arg", 867), fr(kInductor, "call", 10014),
                                             fr(wrappers, "inner_fn", 672), fr("/w/transformer.py", "forward", 22),
                                             fr("/w/benchmark.py", "main", 428)};
  std::vector<snapshot::FrameId> fx = {fr("??", "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", 0),
                                       fr("<eval_with_key>.3", "forward", 7), fr("/w/train.py", "step", 30)};
  auto c = s.stacks.intern(compiled), g = s.stacks.intern(fx);
  analysis::Sites sites(s);
  CHECK(sites.site(c) == "transformer.py:22:forward");
  CHECK(sites.is_user(sites.site_of(c)));
  CHECK(sites.context(sites.site_of(c)) == "compiled graph (torch.compile)");
  CHECK(sites.site(g) == "train.py:30:step");
  CHECK(sites.context(sites.site_of(g)) == "fx graph (torch.fx)");
  // --user-code makes the generated module the user's: the site moves into it.
  analysis::CodeRules rules;
  rules.user_code = {"*/torchinductor_*/*", "<eval_with_key>*"};
  analysis::Sites mine(s, rules);
  CHECK(mine.site(c) == "cp6jhjzn335lo2yptjts5dpdcdk4hshtke2lv7btq23fgwnwn4mq.py:10014:call");
  CHECK(mine.context(mine.site_of(c)) == "torch._inductor.runtime.triton_heuristics.prepare_arg");
  CHECK(mine.site(g) == "<eval_with_key>.3:7:forward");
  CHECK(mine.context(mine.site_of(g)) == "aten::mm");
}

TEST_CASE("a library call's name costs its cap, however long the file name thousands of frames share") {
  // Issue 38: one memoised 1 MiB library file name under many sites; each site's context is
  // its library call, at most 1 KiB and "...", from the file's module worked out once.
  snapshot::Snapshot s;
  const std::string big = "/x/site-packages/" + std::string(1 << 20, 'y') + ".py";
  auto lib = s.strings.intern(big), user = s.strings.intern("/w/train.py");
  auto f = s.strings.intern("f"), step = s.strings.intern("step");
  std::vector<snapshot::StackId> stacks;
  for (int64_t i = 0; i < 100; ++i) {
    std::vector<snapshot::FrameId> frames = {s.frames.intern({lib, f, i}), s.frames.intern({user, step, i})};
    stacks.push_back(s.stacks.intern(frames));
  }
  analysis::Sites sites(s);
  const std::string want = std::string(1024, 'y') + "...";  // the module, capped; no room for ".f"
  std::set<uint32_t> distinct;
  for (auto st : stacks) {
    CHECK(sites.context(sites.site_of(st)) == want);
    distinct.insert(sites.site_of(st).v);
  }
  CHECK(distinct.size() == stacks.size());
  // A short module keeps the function's name, itself capped.
  snapshot::Snapshot t;
  const std::string fn(5000, 'g');
  auto short_lib = t.strings.intern("/x/site-packages/pkg/mod.py"), g = t.strings.intern(fn);
  std::vector<snapshot::FrameId> frames = {t.frames.intern({short_lib, g, 1}),
                                           t.frames.intern({t.strings.intern("/w/a.py"), g, 2})};
  auto st = t.stacks.intern(frames);
  analysis::Sites other(t);
  const std::string whole = "pkg.mod." + fn;
  CHECK(other.context(other.site_of(st)) == whole.substr(0, 1024) + "...");
}

TEST_CASE("the anti-patterns' frame questions: a parameter's constructor, adam, a training function in any case") {
  // Sites answers them once per frame from facts of its two strings (issue 38: each stack's
  // frames once read the whole file name, thousands of stacks sharing one 1 MiB name).
  snapshot::Snapshot s;
  const std::string big = "/x/site-packages/torch/nn/modules/" + std::string(1 << 20, 'y') + ".py";
  auto frame = [&](const std::string& file, const char* fn) {
    return s.frames.intern({s.strings.intern(file), s.strings.intern(fn), 1});
  };
  const auto init = frame(big, "__init__"), reset = frame(big, "reset_parameters"), fwd = frame(big, "forward");
  const auto param = frame("/x/site-packages/torch/nn/parameter.py", "__new__");
  const auto other_new = frame("/x/site-packages/torch/nn/other.py", "__new__");
  const auto adam = frame("/x/site-packages/torch/optim/adamw.py", "step");
  const auto train = frame("/w/run.py", "TrainLoop"), plain = frame("/w/run.py", "evaluate");
  s.stacks.intern(std::vector<snapshot::FrameId>{init, reset, fwd, param, other_new, adam, train, plain});
  analysis::Sites sites(s);
  CHECK(sites.frame_info(init).parameter);
  CHECK(sites.frame_info(reset).parameter);
  CHECK(sites.frame_info(param).parameter);
  CHECK_FALSE(sites.frame_info(fwd).parameter);
  CHECK_FALSE(sites.frame_info(other_new).parameter);
  CHECK(sites.frame_info(adam).adam);
  CHECK_FALSE(sites.frame_info(init).adam);
  CHECK(sites.frame_info(train).train);
  CHECK_FALSE(sites.frame_info(plain).train);
}
