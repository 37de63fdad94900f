// The site definition: innermost user frame, noise filter, fallbacks.
#include <doctest/doctest.h>

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
  CHECK(analysis::classify_frame("/usr/lib/python3/dist-packages/transformers/models/llama.py") == FrameKind::User);
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
  // nothing but the allocator: the innermost frame, as the definition's last resort
  CHECK(sites.site(c) == sites.frame_string(backward[1]));
}
