// What each live byte is: every allocated block has exactly one role.
//
// The rule table (roles.cpp, kRules) is the one place that says which frames make
// which role; the phases (phases.hpp) say when a block was born and when it died.
// In order, the first that holds decides:
//   1. a user rule (--role NAME=GLOB) matching any frame of the allocation stack;
//   2. the stack names it: other for cuBLAS's workspace (getNewWorkspace), autocast_cache (at::autocast::cached_cast),
//   kv_cache
//      (_allocate_kv_cache, a cache_engine), communication (NCCL, c10d), parameter
//      (nn.Parameter / a torch.nn module's __init__, Module.to/.cuda/_apply,
//      load_state_dict);
//   3. the stack names a phase and the block's life decides: the optimizer step ->
//      optimizer_state, or temporary when freed in the same span; backward ->
//      gradient, or temporary when freed in the same span; data loading -> input;
//      forward -> activation, or temporary when freed in the same span;
//   4. a stack that names nothing (user code between calls): temporary when freed in
//      the span it was born in; input when the next phase is a forward it outlives;
//      else other;
//   5. a block live before the window opened whose stack names nothing of the above:
//      by where it was freed (zero_grad -> gradient, the backward -> activation), else
//      unknown (never freed, or freed elsewhere: RoleState::unknown_* say which).
// Without a trace only 1-3 apply, on the dumped stacks (a forward block is an
// activation, a backward one a gradient, an optimizer one optimizer state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memsnap/analysis/phases.hpp"
#include "memsnap/analysis/sites.hpp"

namespace memsnap::analysis {

class Replay;

enum class Role : uint8_t {
  Parameter,
  Gradient,
  OptimizerState,
  Activation,
  Temporary,
  Input,
  AutocastCache,
  KvCache,
  Communication,
  Other,
  Unknown,
};
inline constexpr int kBuiltinRoles = 11;
/// The JSON name: "parameter", "gradient", "optimizer_state", ...
const char* to_string(Role r);
/// Words for text: "weights", "gradients", "optimizer state", "activations", ...
const char* role_words(Role r);

/// A role id: below kBuiltinRoles a Role, then the user's rules in order.
using RoleId = uint8_t;
inline constexpr size_t kMaxUserRoles = 64;

/// --role NAME=GLOB: blocks whose allocation stack has a frame matching GLOB (fnmatch, on
/// "file:line:function", on the file as --user-code matches it, or on the function) get NAME.
struct UserRole {
  std::string name;
  std::string glob;
};
/// Parses "NAME=GLOB"; throws UsageError naming the rule when it has no '=', an empty or
/// unprintable name, or a bad glob (an unclosed '[').
UserRole parse_role_rule(std::string_view text);

struct RoleRules {
  std::vector<UserRole> user;  // first match wins; all before the built-in rules
};

/// Bytes by role id (builtin roles first, then the user's).
struct RoleBytes {
  std::vector<uint64_t> bytes;
  uint64_t total() const;
};

/// The roles of one device state, and what is known of its unknown bytes.
struct RoleState {
  RoleBytes by_role;
  std::optional<Phase> phase;             // the phase of the event (none at the dump or window start)
  uint64_t unknown_never_freed = 0;       // of unknown: live from before the window to the dump
  uint64_t unknown_freed_later = 0;       // of unknown: freed later in the window
  std::optional<Phase> unknown_freed_in;  // where most of those were freed
  /// Of gradient: live in a forward (or before it) and freed by a zero_grad after this point,
  /// so the previous step's, kept through this step's forward.
  uint64_t stale_gradients = 0;
  /// The record_function range open at the event (the innermost; its name, at most 200 bytes):
  /// with --phases annotations any range, the state's phase; else torch.compile's alone.
  std::optional<std::string> range;
};

/// Where the blocks of a role the stack names (KV cache, communication, autocast cache) are:
/// the frame that named it, and the private pool when they all sit in one.
struct RoleWhere {
  Role role = Role::Other;
  uint64_t bytes = 0;
  std::string frame;                                // "cache_engine.py:83:_allocate_kv_cache" (capped)
  std::optional<std::pair<int64_t, int64_t>> pool;  // one private pool holds all of them
};

/// The facts of frames and stacks, the user's rules matched once per frame.
class RoleTable {
 public:
  RoleTable(const Context& ctx, const RoleRules& rules);
  const StackPhases& stacks() const { return stacks_; }
  /// Names by role id.
  const std::vector<std::string>& names() const { return names_; }
  size_t size() const { return names_.size(); }
  /// The first user rule matching a frame of the stack, if any (a RoleId).
  std::optional<RoleId> user_role(snapshot::StackId stack) const;
  /// The role the stack alone gives a block (no trace): rules 1-3, forward blocks
  /// activations, backward gradients, optimizer state; empty stacks unknown.
  RoleId stack_role(snapshot::StackId stack) const;

 private:
  const Context& ctx_;
  StackPhases stacks_;
  RoleRules rules_;
  std::vector<std::string> names_;
  mutable std::vector<uint8_t> frame_user_;  // per frame: 0 unknown, 1 none, 2+k rule k
  mutable std::vector<uint8_t> stack_user_;  // per stack, likewise
};

/// The role of every block of one device's replay.
class BlockRoles {
 public:
  BlockRoles(const RoleTable& table, const Replay& replay, const Phases& phases);
  RoleId of(uint32_t range) const { return role_[range]; }
  /// The allocated bytes by role right after event i (or before the first event).
  RoleState at(uint32_t event) const;
  RoleState at_start() const;
  /// Per range: the phase it was freed in, or nullopt (never freed in the window).
  std::optional<Phase> freed_phase(uint32_t range) const;

 private:
  RoleState sum(std::optional<uint32_t> event) const;
  const RoleTable& table_;
  const Replay& replay_;
  const Phases& phases_;
  std::vector<RoleId> role_;
};

/// The roles of a dumped (or replayed) state from its stacks alone.
RoleState roles_of_state(const RoleTable& table, const snapshot::Device& state);
/// Where the state's KV cache, communication and autocast cache blocks are (by the built-in
/// rules), largest first.
std::vector<RoleWhere> named_roles_where(const Context& ctx, const RoleTable& table, const snapshot::Device& state);

}  // namespace memsnap::analysis
