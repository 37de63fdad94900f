// Every live block's role (see roles.hpp for the rules in order; the frames they key on are
// phases.cpp's kFrameRules and the frame classifier of sites.hpp).
#include "memsnap/analysis/roles.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "memsnap/analysis/replay.hpp"
#include "memsnap/util/error.hpp"

namespace memsnap::analysis {

namespace {

using F = StackPhases::Fact;

// Rule 2: the stack names the role whatever the phases say.
std::optional<Role> named_by_stack(uint16_t facts) {
  if (facts & F::kWorkspace) return Role::Other;  // cuBLAS's workspace: neither an activation nor a leak
  if (facts & F::kAutocast) return Role::AutocastCache;
  if (facts & F::kKvCache) return Role::KvCache;
  if (facts & F::kCommunication) return Role::Communication;
  if (facts & F::kParameter) return Role::Parameter;
  return std::nullopt;
}

bool valid_glob(std::string_view g) {
  if (g.empty()) return false;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == '\\') {
      ++i;
      continue;
    }
    if (g[i] == '[') {
      size_t j = i + 1;
      if (j < g.size() && (g[j] == '!' || g[j] == '^')) ++j;
      if (j < g.size() && g[j] == ']') ++j;
      while (j < g.size() && g[j] != ']') ++j;
      if (j >= g.size()) return false;
      i = j;
    }
  }
  return true;
}

}  // namespace

const char* to_string(Role r) {
  switch (r) {
    case Role::Parameter: return "parameter";
    case Role::Gradient: return "gradient";
    case Role::OptimizerState: return "optimizer_state";
    case Role::Activation: return "activation";
    case Role::Temporary: return "temporary";
    case Role::Input: return "input";
    case Role::AutocastCache: return "autocast_cache";
    case Role::KvCache: return "kv_cache";
    case Role::Communication: return "communication";
    case Role::Other: return "other";
    case Role::Unknown: return "unknown";
  }
  return "other";
}

const char* role_words(Role r) {
  switch (r) {
    case Role::Parameter: return "weights";
    case Role::Gradient: return "gradients";
    case Role::OptimizerState: return "optimizer state";
    case Role::Activation: return "activations";
    case Role::Temporary: return "temporaries";
    case Role::Input: return "inputs";
    case Role::AutocastCache: return "autocast cache";
    case Role::KvCache: return "KV cache";
    case Role::Communication: return "communication";
    case Role::Other: return "other";
    case Role::Unknown: return "unknown";
  }
  return "other";
}

UserRole parse_role_rule(std::string_view text) {
  std::string shown(text.substr(0, 200));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  size_t eq = text.find('=');
  if (eq == std::string_view::npos)
    throw UsageError("--role '" + shown + "': expected NAME=GLOB (for example mine='*my_model.py:*')");
  UserRole r{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  bool name_ok = !r.name.empty() && r.name.size() <= 64 && std::all_of(r.name.begin(), r.name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
  if (!name_ok) throw UsageError("--role '" + shown + "': the name must be 1 to 64 letters, digits, '_', '-' or '.'");
  if (!valid_glob(r.glob)) throw UsageError("--role '" + shown + "': not a glob (empty, or a '[' without ']')");
  return r;
}

uint64_t RoleBytes::total() const {
  return std::accumulate(bytes.begin(), bytes.end(), uint64_t{0});
}

RoleTable::RoleTable(const Context& ctx, const RoleRules& rules)
    : ctx_(ctx),
      stacks_(ctx),
      rules_(rules),
      frame_user_(ctx.snap.frames.size(), 0),
      stack_user_(ctx.snap.stacks.size(), 0) {
  if (rules_.user.size() > kMaxUserRoles)
    throw UsageError("--role: at most " + std::to_string(kMaxUserRoles) + " rules");
  for (int r = 0; r < kBuiltinRoles; ++r) names_.emplace_back(to_string(Role(r)));
  for (const auto& u : rules_.user)
    if (std::find(names_.begin(), names_.end(), u.name) == names_.end()) names_.push_back(u.name);
}

std::optional<RoleId> RoleTable::user_role(snapshot::StackId stack) const {
  if (rules_.user.empty()) return std::nullopt;
  uint8_t& slot = stack_user_[stack.v];
  if (slot == 0) {
    size_t best = rules_.user.size();
    for (snapshot::FrameId f : ctx_.snap.stacks[stack]) {
      uint8_t& fs = frame_user_[f.v];
      if (fs == 0) {
        const snapshot::Frame& fr = ctx_.snap.frames[f];
        std::string file(ctx_.snap.strings[fr.filename].substr(0, 4096));
        std::string name(ctx_.snap.strings[fr.name].substr(0, 4096));
        std::string text = file + ":" + std::to_string(fr.line) + ":" + name;
        fs = 1;
        for (size_t k = 0; k < rules_.user.size(); ++k) {
          const std::string& g = rules_.user[k].glob;
          if (fnmatch(g.c_str(), text.c_str(), 0) == 0 || fnmatch(g.c_str(), name.c_str(), 0) == 0 ||
              (!file.empty() && path_glob_match(g, file))) {
            fs = static_cast<uint8_t>(2 + k);
            break;
          }
        }
      }
      if (fs >= 2) best = std::min<size_t>(best, fs - 2);
    }
    slot = best < rules_.user.size() ? static_cast<uint8_t>(2 + best) : 1;
  }
  if (slot < 2) return std::nullopt;
  const std::string& name = rules_.user[slot - 2].name;
  return static_cast<RoleId>(std::find(names_.begin(), names_.end(), name) - names_.begin());
}

RoleId RoleTable::stack_role(snapshot::StackId stack) const {
  if (auto u = user_role(stack)) return *u;
  uint16_t f = stacks_.facts(stack);
  if (auto r = named_by_stack(f)) return RoleId(*r);
  if (f & F::kZeroGrad) return RoleId(Role::Other);
  if (f & F::kOptimizer) return RoleId(Role::OptimizerState);
  if (f & F::kBackward) return RoleId(Role::Gradient);
  if (f & F::kDataLoading) return RoleId(Role::Input);
  if (f & F::kForward) return RoleId(Role::Activation);
  return RoleId(ctx_.snap.stacks[stack].empty() ? Role::Unknown : Role::Other);
}

BlockRoles::BlockRoles(const RoleTable& table, const Replay& replay, const Phases& phases)
    : table_(table), replay_(replay), phases_(phases) {
  const uint32_t n = static_cast<uint32_t>(replay.ranges().size());
  const uint32_t first = replay.first_window_range();
  const size_t events = phases.size();
  role_.resize(n);
  for (uint32_t id = 0; id < n; ++id) {
    snapshot::StackId stack = replay.stack_of(id);
    const uint32_t begin = replay.begin_of(id), freed = replay.freed_of(id);
    const bool freed_in_window = freed < events;
    if (id < first) {
      // Live when the window opened. Never freed: the stack is the dumped block's own.
      if (!freed_in_window) {
        role_[id] = table.stack_role(stack);
        continue;
      }
      // Freed in the window: the stack is the free's (or, recorded with context="alloc", the
      // allocation's): what it names first, then where the free ran.
      if (auto u = table.user_role(stack)) {
        role_[id] = *u;
        continue;
      }
      uint16_t f = table.stacks().facts(stack);
      Phase pf = phases.at(freed);
      Role r = Role::Unknown;
      if (auto named = named_by_stack(f))
        r = *named;
      else if (f & F::kZeroGrad)
        r = Role::Gradient;  // what zero_grad frees: the previous step's gradients
      else if ((f & F::kOptimizer) || pf == Phase::OptimizerStep)
        r = Role::OptimizerState;  // the previous step's state, replaced by this step's
      else if (f & (F::kForward | F::kBackward))
        r = Role::Activation;  // made by a forward before the window (its stack), or freed by a backward
      else if (pf == Phase::ZeroGrad)
        r = Role::Gradient;
      else if (pf == Phase::Backward)
        r = Role::Activation;
      role_[id] = RoleId(r);
      continue;
    }
    if (auto u = table.user_role(stack)) {
      role_[id] = *u;
      continue;
    }
    uint16_t f = table.stacks().facts(stack);
    if (auto named = named_by_stack(f)) {
      role_[id] = RoleId(*named);
      continue;
    }
    const bool same_span = freed_in_window && phases.span(begin) == phases.span(freed);
    Role r;
    if (f & F::kZeroGrad)
      r = same_span ? Role::Temporary : Role::Other;
    else if (f & F::kOptimizer)
      r = same_span ? Role::Temporary : Role::OptimizerState;
    else if (f & F::kBackward)
      r = same_span ? Role::Temporary : Role::Gradient;
    else if (f & F::kDataLoading)
      r = Role::Input;
    else if (f & F::kForward)
      r = same_span ? Role::Temporary : Role::Activation;
    else if (stack.v == 0)
      r = Role::Other;  // no stack recorded
    else if (same_span)
      r = Role::Temporary;
    else if (phases.next_definite(begin) == Phase::Forward)
      r = Role::Input;  // made by user code before a forward it outlives: the batch
    else
      r = Role::Other;
    role_[id] = RoleId(r);
  }
}

std::optional<Phase> BlockRoles::freed_phase(uint32_t range) const {
  uint32_t f = replay_.freed_of(range);
  if (f >= phases_.size()) return std::nullopt;
  return phases_.at(f);
}

RoleState BlockRoles::sum(std::optional<uint32_t> event) const {
  RoleState s;
  s.by_role.bytes.assign(table_.size(), 0);
  const uint32_t n = static_cast<uint32_t>(role_.size());
  const uint32_t first = replay_.first_window_range();
  uint64_t freed_in[kPhases] = {};
  uint64_t stale_candidates = 0;
  for (uint32_t id = 0; id < n; ++id) {
    uint32_t begin = replay_.begin_of(id), freed = replay_.freed_of(id);
    if (!event) {
      if (id >= first) break;
      if (replay_.pending_at_start_of(id)) continue;
    } else {
      if (id >= first && begin > *event) break;  // window ranges are in alloc order
      if (replay_.pending_at_start_of(id)) continue;
      if (freed != kNever && freed <= *event) continue;
    }
    uint64_t size = replay_.size_of(id);
    s.by_role.bytes[role_[id]] += size;
    if (role_[id] == RoleId(Role::Gradient) && event && freed != kNever && freed < phases_.size() &&
        phases_.at(freed) == Phase::ZeroGrad)
      stale_candidates += size;
    if (role_[id] == RoleId(Role::Unknown)) {
      if (freed == kNever || freed >= phases_.size()) {
        s.unknown_never_freed += size;
      } else {
        s.unknown_freed_later += size;
        freed_in[int(phases_.at(freed))] += size;
      }
    }
  }
  if (s.unknown_freed_later) {
    int best = int(std::max_element(std::begin(freed_in), std::end(freed_in)) - std::begin(freed_in));
    s.unknown_freed_in = Phase(best);
  }
  if (event && *event < phases_.size()) s.phase = phases_.state_phase(*event);
  if (s.phase == Phase::Forward || s.phase == Phase::DataLoading) s.stale_gradients = stale_candidates;
  return s;
}

RoleState BlockRoles::at(uint32_t event) const {
  return sum(event);
}

RoleState BlockRoles::at_start() const {
  return sum(std::nullopt);
}

RoleState roles_of_state(const RoleTable& table, const snapshot::Device& state) {
  RoleState s;
  s.by_role.bytes.assign(table.size(), 0);
  for (const auto& b : state.blocks) {
    if (b.state != snapshot::BlockState::ActiveAllocated) continue;
    RoleId r = table.stack_role(b.stack);
    s.by_role.bytes[r] += b.size;
  }
  return s;
}

}  // namespace memsnap::analysis

namespace memsnap::analysis {

std::vector<RoleWhere> named_roles_where(const Context& ctx, const RoleTable& table, const snapshot::Device& state) {
  struct Acc {
    RoleWhere w;
    bool one_pool = true;
    std::map<uint32_t, uint64_t> by_frame;  // frame id -> bytes
  };
  std::map<Role, Acc> acc;
  for (const auto& seg : state.segments) {
    for (const auto& b : state.blocks_of(seg)) {
      if (b.state != snapshot::BlockState::ActiveAllocated) continue;
      uint16_t f = table.stacks().facts(b.stack);
      auto named = named_by_stack(f);
      if (!named || *named == Role::Parameter || *named == Role::Other || table.user_role(b.stack)) continue;
      uint16_t fact = *named == Role::KvCache         ? F::kKvCache
                      : *named == Role::Communication ? F::kCommunication
                                                      : F::kAutocast;
      Acc& a = acc[*named];
      std::pair<int64_t, int64_t> pool{seg.pool_id[0], seg.pool_id[1]};
      if (a.w.bytes == 0)
        a.w.pool = pool;
      else if (a.w.pool != pool)
        a.one_pool = false;
      a.w.role = *named;
      a.w.bytes += b.size;
      for (snapshot::FrameId fr : ctx.snap.stacks[b.stack])
        if (table.stacks().frame_facts(fr) & fact) {
          a.by_frame[fr.v] += b.size;
          break;
        }
    }
  }
  std::vector<RoleWhere> out;
  for (auto& [role, a] : acc) {
    if (!a.one_pool || (a.w.pool && a.w.pool->first == 0 && a.w.pool->second == 0)) a.w.pool.reset();
    auto best = std::max_element(a.by_frame.begin(), a.by_frame.end(),
                                 [](const auto& x, const auto& y) { return x.second < y.second; });
    if (best != a.by_frame.end()) {
      std::string text = ctx.sites.frame_string(snapshot::FrameId{best->first});
      if (text.find(".py:") == std::string::npos) text = text.substr(0, text.find('('));  // C++: the name alone
      a.w.frame = text.substr(0, 200);
    }
    out.push_back(std::move(a.w));
  }
  std::stable_sort(out.begin(), out.end(), [](const RoleWhere& x, const RoleWhere& y) { return x.bytes > y.bytes; });
  return out;
}

}  // namespace memsnap::analysis
