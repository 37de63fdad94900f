// The fast path's roles: what each container is, from its parent's role and the key or
// position it is built for, and which field slot each key fills. Made from the schema table
// (memsnap/snapshot/schema.hpp), so a key the table gains is known here too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "memsnap/snapshot/schema.hpp"

namespace memsnap::snapshot::detail::fast {

using schema::operator""_w;
using Sym = schema::Word;
constexpr Sym Y_none = schema::kNoWord;

/// The schema word a string is, or Y_none (one compare per word of the same length).
inline Sym classify(const uint8_t* p, size_t n) {
  if (n < 3 || n > 28) return Y_none;
  for (size_t i = 1; i < schema::kWordCount; ++i) {
    std::string_view w = schema::kWords[i];
    if (w.size() == n && std::memcmp(w.data(), p, n) == 0) return Sym(i);
  }
  return Y_none;
}

/// A container's role. The dict roles are the schema's; the list roles are the lists
/// between them. R_ignore: a value of no interest, read and dropped; R_bail: a form the
/// fast path does not handle (the general path reads it).
enum Role : uint8_t {
  R_bail,
  R_top,
  R_segments,
  R_segment,
  R_blocks,
  R_block,
  R_frames,
  R_frame,
  R_devtraces,
  R_trace,
  R_event,
  R_settings,
  R_roundup,
  R_annotations,
  R_annot,
  R_ignore
};
enum CKind : uint8_t { C_list, C_dict };

/// The schema role of a dict role (kCount: none; history is the general path's alone).
constexpr schema::Role schema_role(Role r) {
  switch (r) {
    case R_top: return schema::Role::top;
    case R_segment: return schema::Role::segment;
    case R_block: return schema::Role::block;
    case R_frame: return schema::Role::frame;
    case R_event: return schema::Role::event;
    case R_settings: return schema::Role::settings;
    case R_annot: return schema::Role::annotation;
    default: return schema::Role::kCount;
  }
}

/// The role of a container of kind k that is the value of a schema field of this type:
/// R_bail when the field is not a container of that kind.
constexpr Role container_role(Role parent, std::string_view key, schema::Type type, CKind k) {
  using schema::Type;
  switch (type) {
    case Type::Stack: return k == C_list ? R_frames : R_bail;
    case Type::Dict: return k == C_dict && parent == R_top ? R_settings : R_bail;
    case Type::Map: return k == C_dict ? R_roundup : R_ignore;  // any other value is skipped, as the builder does
    case Type::Items:
      if (k != C_list) return R_bail;
      if (parent == R_top)
        return key == "segments"               ? R_segments
               : key == "device_traces"        ? R_devtraces
               : key == "external_annotations" ? R_annotations
                                               : R_bail;
      return parent == R_segment && key == "blocks" ? R_blocks : R_bail;  // a block's legacy history: R_bail
    default: return R_bail;  // a container where the schema wants a scalar: the general path says why
  }
}

/// The role of a dict's value (container of kind k) under key `key`, made from the table.
constexpr Role dict_child_role(Role parent, Sym key, CKind k) {
  if (parent == R_annot || parent == R_roundup || parent == R_ignore) return R_ignore;  // free-form or skipped
  schema::Role sr = schema_role(parent);
  if (sr == schema::Role::kCount) return R_bail;
  std::string_view text = schema::text(key);
  for (const schema::Field& f : schema::kFields)
    if (f.role == sr && f.key == text && key != Y_none) return container_role(parent, text, f.type, k);
  return R_ignore;  // a key the schema does not read
}

/// child_role for dict parents, precomputed: [parent role][key word][kind].
struct ChildTable {
  Role of[R_ignore + 1][256][2];
  constexpr ChildTable() : of{} {
    for (int r = 0; r <= R_ignore; ++r)
      for (size_t y = 0; y < 256; ++y)
        for (int k = 0; k < 2; ++k)
          of[r][y][k] = y < schema::kWordCount ? dict_child_role(Role(r), Sym(y), CKind(k)) : R_bail;  // no such word
  }
};
inline constexpr ChildTable kChildTable;

/// The role of a container of kind `k` created as a value of key `key` (dict parent) or
/// as an element (list parent) of a parent with role `parent`.
inline Role child_role(Role parent, CKind pk, Sym key, CKind k) {
  if (pk == C_dict) return kChildTable.of[parent][uint8_t(key)][k];
  switch (parent) {
    case R_segments: return k == C_dict ? R_segment : R_bail;
    case R_blocks: return k == C_dict ? R_block : R_bail;
    case R_frames: return k == C_dict ? R_frame : R_bail;
    case R_devtraces: return k == C_list ? R_trace : R_bail;
    case R_trace: return k == C_dict ? R_event : R_bail;
    case R_annotations: return k == C_dict ? R_annot : R_ignore;
    case R_ignore: return R_ignore;
    default: return R_bail;
  }
}

constexpr int kNoField = -1;

/// The field slots a dict role reads (its rows in the schema table).
constexpr int field_count(Role r) {
  schema::Role sr = schema_role(r);
  return sr == schema::Role::kCount ? 0 : schema::field_count(sr);
}

/// A field's slot: `F(R_segment, "total_size")`; a key the role lacks does not compile.
consteval int F(Role r, std::string_view key) {
  return schema::slot(schema_role(r), key);
}

// field_of is asked for every key of every dict: as a search of the table it would be a
// few percent of a large load, so a table of roles by words answers with one load.
struct FieldTable {
  int8_t of[R_ignore + 1][256];
  constexpr FieldTable() : of{} {
    for (int r = 0; r <= R_ignore; ++r)
      for (size_t y = 0; y < 256; ++y) {
        schema::Role sr = schema_role(Role(r));
        of[r][y] = sr == schema::Role::kCount || y == 0 || y >= schema::kWordCount
                       ? int8_t(kNoField)
                       : int8_t(schema::field(sr, schema::kWords[y]));
      }
  }
};
inline constexpr FieldTable kFieldTable;

inline int field_of(Role r, Sym sym) {
  return r <= R_ignore ? kFieldTable.of[r][uint8_t(sym)] : kNoField;
}

// The slots the fast path reads by name (the plain ones are read through the table).
constexpr int F_seg_device = F(R_segment, "device"), F_seg_address = F(R_segment, "address"),
              F_seg_total = F(R_segment, "total_size"), F_seg_type = F(R_segment, "segment_type"),
              F_seg_pool = F(R_segment, "segment_pool_id"), F_seg_frames = F(R_segment, "frames"),
              F_seg_blocks = F(R_segment, "blocks");
constexpr int F_blk_address = F(R_block, "address"), F_blk_size = F(R_block, "size"),
              F_blk_requested = F(R_block, "requested_size"), F_blk_state = F(R_block, "state"),
              F_blk_frames = F(R_block, "frames"), F_blk_history = F(R_block, "history");
constexpr int F_fr_filename = F(R_frame, "filename"), F_fr_line = F(R_frame, "line"), F_fr_name = F(R_frame, "name");
constexpr int F_ev_action = F(R_event, "action"), F_ev_addr = F(R_event, "addr"), F_ev_size = F(R_event, "size"),
              F_ev_stream = F(R_event, "stream"), F_ev_frames = F(R_event, "frames"), F_ev_time = F(R_event, "time_us"),
              F_ev_device_free = F(R_event, "device_free");
constexpr int F_top_segments = F(R_top, "segments");
constexpr int F_set_max_split = F(R_settings, "max_split_size"),
              F_set_gc = F(R_settings, "garbage_collection_threshold"),
              F_set_roundup = F(R_settings, "roundup_power2_divisions");
constexpr int F_ann_device = F(R_annot, "device"), F_ann_time = F(R_annot, "time_us"), F_ann_name = F(R_annot, "name"),
              F_ann_stage = F(R_annot, "stage");

}  // namespace memsnap::snapshot::detail::fast
