#!/usr/bin/env python3
"""Writes testdata/roles/grads_*.pickle (+ .truth.json): training loops that do and do not zero
their gradients, with the events autograd's AccumulateGrad records (issue 54).

Each run builds LAYERS weights, then runs STEPS steps of forward (one saved activation a layer),
backward (a gradient a layer from MmBackward0, handed to AccumulateGrad) and an SGD step
(a temporary a layer, inside an Optimizer.step record_function range). What AccumulateGrad does
with the incoming gradient depends on the parameter's .grad:
  None, stealable    the incoming gradient becomes .grad: no event;
  None, clone        a copy is made in AccumulateGrad and the incoming one freed there;
  exists             the incoming one is added into .grad and freed in AccumulateGrad.
Runs:
  grads_never_zeroed       3 steps, no zero_grad: steps 2 and 3 add into .grad (a step between)
  grads_never_zeroed_2     2 steps, no zero_grad: step 2 adds into .grad (no step between two such)
  grads_zeroed             3 steps, zero_grad(set_to_none=True) after each step (annotated)
  grads_clone              1 step, .grad None, AccumulateGrad clones (Wedsonlin's form)
  grads_microbatch         2 micro-batches then a step then zero_grad: accumulation on purpose
  kept_after_backward      3 steps with zero_grad; each layer's 4-bit matmul (bitsandbytes) keeps its
                           input on its autograd ctx, freed only when the next step rebinds `outputs`:
                           the last step's are still allocated at the dump, after its backward
The truth: gradients_never_zeroed = {gradients, bytes, first_event, across_a_step} or null, and
activations_kept_after_backward = {bytes, blocks, bitsandbytes} or null."""
import json, os, pickle

MB = 1 << 20
here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "roles")
TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
T = "/workspace/train.py"
LIN = f"{TORCH}/nn/modules/linear.py"
MOD = f"{TORCH}/nn/modules/module.py"
LAYERS = 4
SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False}


def fr(*frames):
    return [{"filename": f, "line": l, "name": n} for f, l, n in frames]


ENGINE = ("??", 0, "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, "
                   "torch::autograd::Node*, torch::autograd::InputBuffer&)")
BUILD = lambda l: fr((f"{TORCH}/nn/parameter.py", 41, "__new__"), (LIN, 106, "__init__"), (T, 20 + l, "build"),
                     (T, 90, "main"))
ACT = lambda l: fr((LIN, 125, "forward"), (MOD, 1750, "_call_impl"), (T, 40 + l, "forward"), (T, 52, "train"),
                   (T, 95, "main"))
GRAD = fr(("??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"), ENGINE)
ACCUM = fr(("??", 0, "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)"), ENGINE)
RESET = fr(("??", 0, "torch::autograd::SavedVariable::reset_data()"), ENGINE)
OPT = fr((f"{TORCH}/optim/sgd.py", 300, "_single_tensor_sgd"), (f"{TORCH}/optim/optimizer.py", 480, "wrapper"),
         (T, 56, "train"), (T, 95, "main"))
KEPT = lambda l: fr((f"/opt/conda/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", 216,
                     "forward"), (MOD, 1750, "_call_impl"), (T, 40 + l, "forward"), (T, 52, "train"),
                    (T, 95, "main"))
BNB = fr(("/opt/conda/lib/python3.11/site-packages/bitsandbytes/functional.py", 1349, "dequantize_4bit"),
         ("/opt/conda/lib/python3.11/site-packages/bitsandbytes/autograd/_functions.py", 509, "forward"),
         (MOD, 1750, "_call_impl"), (T, 40, "forward"), (T, 52, "train"), (T, 95, "main"))
REBIND = fr((T, 52, "train"), (T, 95, "main"))
ZERO = fr((f"{TORCH}/optim/optimizer.py", 960, "zero_grad"), (T, 57, "train"), (T, 95, "main"))


class Run:
    def __init__(self):
        self.trace, self.t, self.next, self.segs, self.ann = [], 1_700_000_000_000_000, 0x7F0000000000, {}, []

    def ev(self, action, addr, size, frames):
        self.t += 10
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.t,
                           "frames": frames})

    def alloc(self, size, frames):
        a = self.next
        self.next += 64 * MB
        self.ev("segment_alloc", a, size, frames)
        self.ev("alloc", a, size, frames)
        self.segs[a] = [size, frames, True]
        return a

    def free(self, a, frames):
        size = self.segs[a][0]
        self.ev("free_requested", a, size, frames)
        self.ev("free_completed", a, size, frames)
        self.segs[a][2] = False

    def annotate(self, name, stage):
        self.t += 5
        self.ann.append({"stage": stage, "name": name, "device": 0, "time_us": self.t})

    def snapshot(self):
        segs = []
        for a, (size, frames, live) in sorted(self.segs.items()):
            blk = {"address": a, "size": size, "requested_size": size if live else 0,
                   "state": "active_allocated" if live else "inactive", "frames": frames if live else []}
            segs.append({"address": a, "total_size": size, "stream": 0, "segment_type": "large",
                         "allocated_size": size if live else 0, "active_size": size if live else 0,
                         "requested_size": size if live else 0, "device": 0, "segment_pool_id": (0, 0),
                         "is_expandable": False, "frames": frames, "blocks": [blk]})
        return {"segments": segs, "device_traces": [self.trace], "allocator_settings": SETTINGS,
                "external_annotations": self.ann}


def run(name, steps, zero_grad=False, clone=False, micro=1, keep=0):
    r = Run()
    kept = []
    weights = [r.alloc((8 + 2 * l) * MB, BUILD(l)) for l in range(LAYERS)]
    grad = [None] * LAYERS
    truth = None
    adding = []  # per backward: (first free event, gradients, bytes)
    for step in range(steps):
        for _ in range(micro):
            for a in kept:  # `outputs = model(x)` rebinds the name: the last graph goes
                r.free(a, REBIND)
            kept = []
            acts = [r.alloc(4 * MB, ACT(l)) for l in range(LAYERS)]
            for l in range(LAYERS if keep else 0):
                kept.append(r.alloc(keep * MB, KEPT(l)))
                w = r.alloc(8 * MB, BNB)  # the weight dequantized for the matmul, freed at once
                r.free(w, BNB)
            first, n, b = None, 0, 0
            for l in reversed(range(LAYERS)):
                size = (8 + 2 * l) * MB
                g = r.alloc(size, GRAD)
                if grad[l] is None and clone:
                    grad[l] = r.alloc(size, ACCUM)
                    r.free(g, ACCUM)
                elif grad[l] is None:
                    grad[l] = g
                else:
                    if first is None:
                        first = len(r.trace)
                    r.free(g, ACCUM)
                    n, b = n + 1, b + size
                r.free(acts[l], RESET)
            if n:
                adding.append((first, n, b, step))
        r.annotate("Optimizer.step#SGD.step", "START")
        tmp = [r.alloc(2 * MB, OPT) for _ in range(LAYERS)]
        for a in tmp:
            r.free(a, OPT)
        r.annotate("Optimizer.step#SGD.step", "END")
        if zero_grad:
            r.annotate("Optimizer.zero_grad#SGD.zero_grad", "START")
            for l in range(LAYERS):
                r.free(grad[l], ZERO)
                grad[l] = None
            r.annotate("Optimizer.zero_grad#SGD.zero_grad", "END")
    if adding and not zero_grad:
        best = max(adding, key=lambda x: x[2])
        truth = {"gradients": best[1], "bytes": best[2], "first_event": adding[0][0],
                 "across_a_step": len({s for *_, s in adding}) > 1}
    kept_truth = {"bytes": len(kept) * keep * MB, "blocks": len(kept), "bitsandbytes": True} if kept else None
    with open(os.path.join(out, name + ".pickle"), "wb") as f:
        pickle.dump(r.snapshot(), f, protocol=4)
    with open(os.path.join(out, name + ".truth.json"), "w") as f:
        json.dump({"per_device": [{"gradients_never_zeroed": truth, "activations_kept_after_backward": kept_truth}]},
                  f, indent=1, sort_keys=True)


run("grads_never_zeroed", 3)
run("grads_never_zeroed_2", 2)
run("grads_zeroed", 3, zero_grad=True)
run("grads_clone", 1, clone=True)
run("grads_microbatch", 1, zero_grad=True, micro=2)
run("kept_after_backward", 3, zero_grad=True, keep=24)
