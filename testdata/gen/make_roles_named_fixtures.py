#!/usr/bin/env python3
"""Writes testdata/roles/kv_cache.pickle and autocast.pickle (+ .truth.json): the roles the
snapgen runs never make, from the frames PyTorch records for them (issue 54).

kv_cache: a serving engine's dump without a trace. Weights moved to the GPU by Module.to, a
KV cache of KV_BLOCKS blocks in private pool (0, 2) from vLLM's cache_engine._allocate_kv_cache,
an NCCL buffer (c10d::ProcessGroupNCCL) and one block without a stack (unknown).
autocast: a forward under torch.autocast with a trace: the weights built in the window, each
Linear's fp16 weight copy made by at::autocast::cached_cast (kept until autocast exits), and
the activations the forward saves. The truth: allocated_by_role at the dump and at the peak."""
import json, os, pickle

MB = 1 << 20
here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "roles")
TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
S = "/workspace/serve.py"
VLLM = "/opt/conda/lib/python3.11/site-packages/vllm"


def fr(*frames):
    return [{"filename": f, "line": l, "name": n} for f, l, n in frames]


SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False}


def segment(addr, size, blocks, frames, pool=(0, 0)):
    """One large segment of `size` holding `blocks` [(size, frames)] from its start, the rest free."""
    out, a, used = [], addr, 0
    for bsize, bframes in blocks:
        out.append({"address": a, "size": bsize, "requested_size": bsize, "state": "active_allocated",
                    "frames": bframes})
        a += bsize
        used += bsize
    if used < size:
        out.append({"address": a, "size": size - used, "requested_size": 0, "state": "inactive", "frames": []})
    return {"address": addr, "total_size": size, "stream": 0, "segment_type": "large", "allocated_size": used,
            "active_size": used, "requested_size": used, "device": 0, "segment_pool_id": pool,
            "is_expandable": False, "frames": frames, "blocks": out}


def write(name, snap, truth):
    with open(os.path.join(out, name + ".pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)
    with open(os.path.join(out, name + ".truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)


# ---- kv_cache ---------------------------------------------------------------------------
MOVE = fr((f"{TORCH}/nn/modules/module.py", 1326, "convert"), (f"{TORCH}/nn/modules/module.py", 900, "_apply"),
          (f"{TORCH}/nn/modules/module.py", 1340, "to"), (f"{VLLM}/model_executor/model_loader/loader.py", 380,
                                                           "load_model"), (S, 20, "main"))
KV = fr((f"{VLLM}/worker/cache_engine.py", 83, "_allocate_kv_cache"), (f"{VLLM}/worker/cache_engine.py", 60,
                                                                          "__init__"),
        (f"{VLLM}/worker/worker.py", 270, "_init_cache_engine"), (S, 24, "main"))
NCCL = fr(("??", 0, "c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor, std::allocator<at::Tensor> >&, "
                    "c10d::AllreduceOptions const&)"),
          (f"{TORCH}/distributed/distributed_c10d.py", 2288, "all_reduce"), (S, 30, "warmup"), (S, 40, "main"))
KV_BLOCKS = 6
base = 0x7F0000000000
segs = [segment(base, 40 * MB, [(16 * MB, MOVE), (16 * MB, MOVE)], MOVE),
        segment(base + 64 * MB, KV_BLOCKS * 20 * MB, [(20 * MB, KV)] * KV_BLOCKS, KV, pool=(0, 2)),
        segment(base + 256 * MB, 20 * MB, [(4 * MB, NCCL), (2 * MB, [])], NCCL)]
write("kv_cache", {"segments": segs, "device_traces": [[]], "allocator_settings": SETTINGS},
      {"per_device": [{"allocated_by_role": {"parameter": 32 * MB, "kv_cache": KV_BLOCKS * 20 * MB,
                                             "communication": 4 * MB, "unknown": 2 * MB}}]})

# ---- autocast -------------------------------------------------------------------------------
LIN = f"{TORCH}/nn/modules/linear.py"
MOD = f"{TORCH}/nn/modules/module.py"
T = "/workspace/forward.py"
LAYERS = 4


def build(layer):
    return fr((f"{TORCH}/nn/parameter.py", 41, "__new__"), (LIN, 106, "__init__"), (T, 30 + layer, "build"),
              (T, 90, "main"))


def cast(layer):
    return fr(("??", 0, "at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, c10::DeviceType)"),
              ("??", 0, "at::autocast::WrapFunction_<...>::call(at::Tensor const&, at::Tensor const&)"),
              (LIN, 125, "forward"), (MOD, 1750, "_call_impl"), (T, 50 + layer, "forward"), (T, 95, "main"))


def act(layer):
    return fr((LIN, 125, "forward"), (MOD, 1750, "_call_impl"), (T, 50 + layer, "forward"), (T, 95, "main"))


trace, t, addr, segs = [], [1_700_000_000_000_000], [0x7F0000000000], []


def alloc(size, frames):
    t[0] += 10
    a = addr[0]
    addr[0] += 64 * MB
    trace.append({"action": "segment_alloc", "addr": a, "size": size, "stream": 0, "time_us": t[0],
                  "frames": frames})
    trace.append({"action": "alloc", "addr": a, "size": size, "stream": 0, "time_us": t[0], "frames": frames})
    segs.append(segment(a, size, [(size, frames)], frames))


for l in range(LAYERS):
    alloc(40 * MB, build(l))                 # fp32 weight
for l in range(LAYERS):
    alloc(20 * MB, cast(l))                  # its fp16 copy, cached by autocast
    alloc(20 * MB, act(l))                   # the layer's output, saved for a backward
by = {"parameter": LAYERS * 40 * MB, "autocast_cache": LAYERS * 20 * MB, "activation": LAYERS * 20 * MB}
write("autocast", {"segments": segs, "device_traces": [trace], "allocator_settings": SETTINGS},
      {"per_device": [{"allocated_by_role": by, "peak": {"allocated_by_role": by,
                                                         "allocated_event_index": len(trace) - 1}}]})

# ---- autocast_eval --------------------------------------------------------------------------
# One forward under torch.autocast with autograd on and no backward, its layers run by one loop
# line (a repeat analyze finds): activations_kept_without_backward counts the activations only,
# never autocast's cached casts (issue 54). Truth: the same allocated_by_role as above.
EVAL_LAYERS = 12


def loop_cast():
    return fr(("??", 0, "at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, c10::DeviceType)"),
              ("??", 0, "at::autocast::WrapFunction_<...>::call(at::Tensor const&, at::Tensor const&)"),
              (LIN, 125, "forward"), (MOD, 1750, "_call_impl"), (T, 50, "forward"), (T, 95, "main"))


def loop_act():
    return fr((LIN, 125, "forward"), (MOD, 1750, "_call_impl"), (T, 50, "forward"), (T, 95, "main"))


trace, t, addr, segs = [], [1_700_000_000_000_000], [0x7F0000000000], []
for l in range(EVAL_LAYERS):
    alloc(40 * MB, build(l))
for l in range(EVAL_LAYERS):
    alloc(20 * MB, loop_cast())
    alloc(20 * MB, loop_act())
by = {"parameter": EVAL_LAYERS * 40 * MB, "autocast_cache": EVAL_LAYERS * 20 * MB,
      "activation": EVAL_LAYERS * 20 * MB}
write("autocast_eval", {"segments": segs, "device_traces": [trace], "allocator_settings": SETTINGS},
      {"per_device": [{"allocated_by_role": by, "peak": {"allocated_by_role": by,
                                                         "allocated_event_index": len(trace) - 1}}]})
