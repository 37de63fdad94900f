// `memsnap export`: the model written back in PyTorch's own snapshot schema, as JSON or as a pickle.
//
// One rendering serves both formats (src/report/export.cpp walks the model once and
// drives either writer), so a JSON export and a pickle export of one snapshot hold the same
// data. The document is the dict form `_dump_snapshot` writes and PyTorch's viewers read
// (torch/cuda/_memory_viz.py, MemoryViz.js at pytorch.org/memory_viz):
//
//   {"segments": [{device, address, total_size, allocated_size, active_size, requested_size,
//                  stream, segment_type, segment_pool_id, is_expandable, frames,
//                  blocks: [{address, size, requested_size, state, frames, role?, phase?}]}],
//    "device_traces": [[{action, addr | device_free, size, stream, time_us?, frames}], ...],
//    "allocator_settings": {...}?, "external_annotations": [{device, time_us?, name, stage}]?}
//
// with frames as [{filename, line, name}], innermost first. device_traces has one list per
// device index up to the highest (empty for devices without a trace), as torch writes it.
// Segment totals are the file's own when it stated them, else summed from the blocks.
//
// What memsnap does not model, and so does not write back (see docs/export.md):
// frame keys other than filename/line/name (fx_*), trace keys other than the above
// (compile_context, user_metadata, cpp_frames, pool_id, forward_frames, category),
// block forward_frames, frames of inactive blocks (torch writes [] there anyway), the 1.13/2.0
// block `history` (written as frames + requested_size, as torch >= 2.1 does),
// allocator_settings keys other than PYTORCH_CUDA_ALLOC_CONF, max_split_size,
// garbage_collection_threshold, expandable_segments, roundup_power2_divisions,
// trace_alloc_max_entries and trace_alloc_overflowed; annotation keys other than device,
// time_us, name and stage; other top-level keys. An action memsnap does not know is written
// as "unknown"; `active_awaiting_free` as `active_pending_free`.
//
// The pickle is protocol 4 without FRAME opcodes; every distinct frame dict, frames list and
// string is written once and then referenced through the memo (BINGET / LONG_BINGET), so
// Python loads one shared object per traceback as it would from torch's own file. Only the
// opcodes MemoryViz.js's unpickler knows are used. Both writers stream: memory is the model,
// the memo indices and a 64 KiB buffer.
#pragma once

#include <ostream>
#include <vector>

#include "memsnap/analysis/dump_roles.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::report {

/// Each device's block roles (by position in snap.devices): every active block gets a `role`
/// key (analyze's role name) and, when the trace holds its alloc, a `phase` key (the phase it
/// was allocated in): memsnap's own keys, which PyTorch's viewers ignore.
using ExportRoles = std::vector<analysis::DumpRoles>;

/// The snapshot as one JSON document (compact, UTF-8; invalid UTF-8 replaced, control
/// characters escaped). Throws std::ios_base::failure when `out` fails.
void write_snapshot_json(std::ostream& out, const snapshot::Snapshot& snap, const ExportRoles* roles = nullptr);
/// The snapshot as a protocol-4 pickle. Throws std::ios_base::failure when `out` fails.
void write_snapshot_pickle(std::ostream& out, const snapshot::Snapshot& snap, const ExportRoles* roles = nullptr);

}  // namespace memsnap::report
