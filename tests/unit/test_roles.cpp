// The role rule table (issue 54): each rule keyed on the frames it names, user rules first,
// the --role syntax, and the annotation names that give phases.
#include <doctest/doctest.h>

#include <initializer_list>
#include <utility>

#include "memsnap/analysis/roles.hpp"
#include "memsnap/util/error.hpp"

using namespace memsnap;
using analysis::Role;

namespace {

const char* kTorch = "/opt/conda/lib/python3.11/site-packages/torch/";

struct Fixture {
  snapshot::Snapshot snap;
  // A stack of (file, function) frames, innermost first.
  snapshot::StackId stack(std::initializer_list<std::pair<std::string, std::string>> frames) {
    std::vector<snapshot::FrameId> ids;
    for (const auto& [file, name] : frames)
      ids.push_back(snap.frames.intern({snap.strings.intern(file), snap.strings.intern(name), 1}));
    return snap.stacks.intern(ids);
  }
};

std::string torch(const char* rest) {
  return std::string(kTorch) + rest;
}

}  // namespace

TEST_CASE("the role table: each rule by the frames it keys on") {
  Fixture f;
  auto param = f.stack(
      {{torch("nn/parameter.py"), "__new__"}, {torch("nn/modules/linear.py"), "__init__"}, {"/w/train.py", "build"}});
  auto moved = f.stack(
      {{torch("nn/modules/module.py"), "_apply"}, {torch("nn/modules/module.py"), "to"}, {"/w/train.py", "main"}});
  auto loaded = f.stack({{"/w/model.py", "load_state_dict"}, {"/w/train.py", "main"}});
  auto weights = f.stack({{"/w/backend.py", "allocate"}, {"/w/flex_opt.py", "init_weight_list"}});
  auto grad = f.stack({{torch("autograd/graph.py"), "_engine_run_backward"},
                       {torch("_tensor.py"), "backward"},
                       {"/w/train.py", "step"}});
  auto acc = f.stack({{"??", "torch::autograd::AccumulateGrad::apply(...)"}});
  auto opt = f.stack({{torch("optim/adam.py"), "_init_group"}, {torch("optim/adam.py"), "step"}});
  auto fwd = f.stack({{torch("nn/modules/linear.py"), "forward"}, {"/w/train.py", "forward"}});
  auto loss = f.stack({{torch("nn/functional.py"), "cross_entropy"}, {"/w/train.py", "step"}});
  auto data = f.stack({{torch("utils/data/dataloader.py"), "__next__"}, {"/w/train.py", "main"}});
  auto autocast = f.stack({{"??", "at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, c10::DeviceType)"},
                           {torch("nn/modules/linear.py"), "forward"}});
  auto kv = f.stack({{"/v/vllm/worker/cache_engine.py", "_allocate_kv_cache"}, {"/v/vllm/worker/worker.py", "init"}});
  auto nccl = f.stack({{"??", "c10d::ProcessGroupNCCL::allreduce(...)"}, {"/w/train.py", "step"}});
  auto user = f.stack({{"/w/train.py", "step"}});
  auto workspace = f.stack({{"??", "at::cuda::getNewWorkspace()"},
                            {"??", "at::cuda::getCurrentCUDABlasHandle()"},
                            {torch("nn/modules/linear.py"), "forward"}});
  analysis::Context ctx(f.snap);
  analysis::RoleTable table(ctx, {});
  auto role = [&](snapshot::StackId s) { return Role(table.stack_role(s)); };
  CHECK(role(param) == Role::Parameter);
  CHECK(role(moved) == Role::Parameter);
  CHECK(role(loaded) == Role::Parameter);
  CHECK(role(weights) == Role::Parameter);
  CHECK(role(grad) == Role::Gradient);
  CHECK(role(acc) == Role::Gradient);
  CHECK(role(opt) == Role::OptimizerState);
  CHECK(role(fwd) == Role::Activation);
  CHECK(role(loss) == Role::Activation);
  CHECK(role(data) == Role::Input);
  CHECK(role(autocast) == Role::AutocastCache);  // before the forward it runs in
  CHECK(role(kv) == Role::KvCache);
  CHECK(role(nccl) == Role::Communication);
  CHECK(role(user) == Role::Other);
  CHECK(role(workspace) == Role::Other);  // made in a forward, but no activation
  CHECK(role(snapshot::StackId{0}) == Role::Unknown);
  // The phases the same stacks give.
  const auto& ph = table.stacks();
  CHECK(ph.of(grad) == analysis::Phase::Backward);
  CHECK(ph.of(opt) == analysis::Phase::OptimizerStep);
  CHECK(ph.of(fwd) == analysis::Phase::Forward);
  CHECK(ph.of(data) == analysis::Phase::DataLoading);
  CHECK(ph.of(param) == analysis::Phase::Other);
  CHECK_FALSE(ph.of(user).has_value());
  auto zero = f.stack({{torch("optim/optimizer.py"), "zero_grad"}, {"/w/train.py", "step"}});
  analysis::Context ctx2(f.snap);
  analysis::StackPhases ph2(ctx2);
  CHECK(ph2.of(zero) == analysis::Phase::ZeroGrad);  // zero_grad before the optimizer file

  // User rules win, matched on file:line:function, the file, or the function.
  analysis::RoleRules rules;
  rules.user = {{"mine", "*train.py:1:forward"}, {"fetch", "__next__"}, {"gradient", "*/backend.py"}};
  analysis::RoleTable mine(ctx, rules);
  REQUIRE(mine.names().size() == analysis::kBuiltinRoles + 2);  // `gradient` is a built-in name
  CHECK(mine.names()[analysis::kBuiltinRoles] == "mine");
  CHECK(mine.stack_role(fwd) == analysis::kBuiltinRoles);
  CHECK(mine.stack_role(data) == analysis::kBuiltinRoles + 1);
  CHECK(Role(mine.stack_role(weights)) == Role::Gradient);
  CHECK(Role(mine.stack_role(opt)) == Role::OptimizerState);  // no rule matches: the built-in table
}

TEST_CASE("--role NAME=GLOB") {
  auto r = analysis::parse_role_rule("mine=*model.py:*");
  CHECK(r.name == "mine");
  CHECK(r.glob == "*model.py:*");
  CHECK(analysis::parse_role_rule("a=b=c").glob == "b=c");
  CHECK_THROWS_AS(analysis::parse_role_rule("mine"), UsageError);
  CHECK_THROWS_AS(analysis::parse_role_rule("=x"), UsageError);
  CHECK_THROWS_AS(analysis::parse_role_rule("mine="), UsageError);
  CHECK_THROWS_AS(analysis::parse_role_rule("mine=[ab"), UsageError);
  CHECK_THROWS_AS(analysis::parse_role_rule("bad name=x"), UsageError);
  CHECK(analysis::parse_role_rule("x=[]]").glob == "[]]");
  try {
    analysis::parse_role_rule("mine");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("'mine'") != std::string::npos);  // names the rule
  }
}

TEST_CASE("annotations that give phases") {
  CHECK(analysis::annotation_phase("Optimizer.step#AdamW.step") == analysis::Phase::OptimizerStep);
  CHECK(analysis::annotation_phase("Optimizer.zero_grad#AdamW.zero_grad") == analysis::Phase::ZeroGrad);
  CHECK(analysis::annotation_phase("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__") ==
        analysis::Phase::DataLoading);
  CHECK_FALSE(analysis::annotation_phase("my_range").has_value());
  CHECK(std::string(analysis::to_string(analysis::Phase::OptimizerStep)) == "optimizer_step");
  CHECK(std::string(analysis::to_string(Role::OptimizerState)) == "optimizer_state");
  CHECK(std::string(analysis::to_string(Role::KvCache)) == "kv_cache");
}

TEST_CASE("phases: stacks, silent frees, annotations winning, spans") {
  Fixture f;
  auto fwd = f.stack({{torch("nn/modules/linear.py"), "forward"}, {"/w/train.py", "forward"}});
  auto bwd = f.stack({{torch("autograd/graph.py"), "_engine_run_backward"}, {"/w/train.py", "step"}});
  auto user = f.stack({{"/w/train.py", "step"}});
  snapshot::Device d;
  auto ev = [&](snapshot::Action a, uint64_t addr, snapshot::StackId s, int64_t t) {
    snapshot::TraceEvent e;
    e.action = a;
    e.addr = addr;
    e.size = 512;
    e.stack = s;
    e.time_us = t;
    d.trace.push_back(e);
  };
  using A = snapshot::Action;
  ev(A::Alloc, 0x1000, user, 10);          // 0 the batch: user code, `other`
  ev(A::Alloc, 0x2000, fwd, 20);           // 1 forward
  ev(A::FreeRequested, 0x1000, user, 30);  // 2 a free whose stack names no phase: the forward's
  ev(A::Alloc, 0x3000, bwd, 40);           // 3 backward
  ev(A::FreeRequested, 0x2000, bwd, 50);   // 4 freed by the backward (its own stack)
  ev(A::Alloc, 0x4000, user, 60);          // 5 user code inside an Optimizer.step range
  ev(A::FreeRequested, 0x4000, user, 70);  // 6
  auto name = f.snap.strings.intern("Optimizer.step#SGD.step");
  f.snap.annotations.push_back({0, 55, name, f.snap.strings.intern("START")});
  f.snap.annotations.push_back({0, 75, name, f.snap.strings.intern("END")});
  analysis::Context ctx(f.snap);
  analysis::StackPhases sp(ctx);
  analysis::Phases ph(ctx, sp, d, nullptr);  // without a replay every free speaks by its stack
  using P = analysis::Phase;
  CHECK(ph.at(0) == P::Other);
  CHECK(ph.at(1) == P::Forward);
  CHECK(ph.at(2) == P::Forward);  // a free naming no phase runs in its predecessor's
  CHECK_FALSE(ph.definite(2));
  CHECK(ph.at(3) == P::Backward);
  CHECK(ph.at(4) == P::Backward);
  CHECK(ph.at(5) == P::OptimizerStep);  // the annotation wins over the stack
  CHECK(ph.at(6) == P::OptimizerStep);
  CHECK(ph.from_annotations());
  CHECK(ph.next_definite(0) == P::Forward);
  CHECK(ph.span(3) == ph.span(4));
  CHECK(ph.span(1) != ph.span(3));
  CHECK(ph.span(5) == ph.span(6));
}
