// One source file's memory by line: the frames that match a path, and the bytes of the stacks
// through each of their lines at the dump, at the peak and over the trace.
#include "memsnap/analysis/file_lines.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

namespace memsnap::analysis {

namespace {

// Path components, empty ones and "." dropped.
std::vector<std::string_view> components(std::string_view p) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= p.size()) {
    size_t slash = p.find('/', at);
    if (slash == std::string_view::npos) slash = p.size();
    std::string_view part = p.substr(at, slash - at);
    if (!part.empty() && part != ".") out.push_back(part);
    at = slash + 1;
  }
  return out;
}

std::string_view base_name(std::string_view p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

// Levenshtein distance of the first 48 bytes of each (names are input: the cost stays bounded).
size_t distance(std::string_view a, std::string_view b) {
  a = a.substr(0, 48), b = b.substr(0, 48);
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// One profile's bytes by line key (an index into `keys`): each stack once per line it passes.
struct Tally {
  std::vector<uint64_t> bytes, blocks;
  uint64_t total_bytes = 0, total_blocks = 0;
};

}  // namespace

bool file_matches(std::string_view file, std::string_view query) {
  auto want = components(query), have = components(file);
  if (want.empty() || want.size() > have.size()) return false;
  bool absolute = !query.empty() && query.front() == '/';
  if (absolute && (file.empty() || file.front() != '/' || want.size() != have.size())) return false;
  return std::equal(want.rbegin(), want.rend(), have.rbegin());
}

FileMatch match_file(const snapshot::Snapshot& snap, std::string_view query) {
  std::unordered_set<uint32_t> seen;
  std::set<std::string> files;
  std::vector<std::string_view> all;
  for (size_t i = 0; i < snap.frames.size(); ++i) {
    snapshot::StrId id = snap.frames[snapshot::FrameId{uint32_t(i)}].filename;
    if (!seen.insert(id.v).second) continue;
    std::string_view name = snap.strings[id];
    if (name.empty()) continue;
    all.push_back(name);
    if (file_matches(name, query)) files.emplace(name);
  }
  FileMatch m{{files.begin(), files.end()}, {}};
  if (!m.files.empty()) return m;
  std::string_view want = base_name(query);
  std::vector<std::pair<size_t, std::string_view>> ranked;
  for (std::string_view f : all) ranked.emplace_back(distance(base_name(f), want), f);
  std::sort(ranked.begin(), ranked.end());
  for (size_t i = 0; i < ranked.size() && m.closest.size() < 5; ++i) m.closest.emplace_back(ranked[i].second);
  return m;
}

DeviceFileLines file_lines(const snapshot::Snapshot& snap, const FileLinesInput& in,
                           const std::vector<std::string>& files, const StackOptions& options) {
  DeviceFileLines out;
  out.device = in.dump->index;
  out.peak_event = in.peak ? in.peak_event : std::nullopt;
  out.has_trace = in.trace && !in.trace->empty();
  std::unordered_set<std::string_view> wanted(files.begin(), files.end());
  std::map<std::pair<std::string_view, int64_t>, size_t> key_of;  // (file, line) -> index into out.lines

  // Each profile's frames mapped to line keys once, then each stack's distinct keys tallied.
  auto tally = [&](const StackProfile& p) {
    std::vector<int64_t> key_of_frame(p.frames.size(), -1);
    for (size_t f = 0; f < p.frames.size(); ++f) {
      const ProfileFrame& fr = p.frames[f];
      if (!fr.line || !wanted.count(fr.file)) continue;
      auto [it, added] = key_of.try_emplace({fr.file, *fr.line}, out.lines.size());
      if (added) out.lines.push_back({std::string(fr.file), *fr.line, std::string(fr.function), 0, 0, 0, 0, 0, 0});
      key_of_frame[f] = int64_t(it->second);
    }
    Tally t;
    t.bytes.assign(out.lines.size(), 0);
    t.blocks.assign(out.lines.size(), 0);
    std::vector<int64_t> keys;
    for (const ProfileStack& s : p.stacks) {
      keys.clear();
      for (uint32_t f : s.frames)
        if (key_of_frame[f] >= 0) keys.push_back(key_of_frame[f]);
      if (keys.empty()) continue;
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      for (int64_t k : keys) t.bytes[size_t(k)] += s.bytes, t.blocks[size_t(k)] += s.blocks;
      t.total_bytes += s.bytes, t.total_blocks += s.blocks;
    }
    return t;
  };
  auto profile_of = [&](const snapshot::Device& state) {
    StackProfileBuilder b(snap, options);
    b.add(state);
    return b.take();
  };

  Tally dump = tally(profile_of(*in.dump));
  Tally peak, trace;
  if (in.peak) peak = tally(profile_of(*in.peak));
  if (out.has_trace) {
    StackProfileBuilder b(snap, options);
    for (size_t i = 0; i < in.trace->size(); ++i)
      if (in.trace->action_at(i) == snapshot::Action::Alloc) {
        b.add_stack(in.trace->stack_at(i), in.trace->size_at(i));
        ++out.trace_allocations;
      }
    trace = tally(b.take());
  }
  auto at = [](const Tally& t, size_t k, bool blocks) -> uint64_t {
    const auto& v = blocks ? t.blocks : t.bytes;
    return k < v.size() ? v[k] : 0;
  };
  for (size_t k = 0; k < out.lines.size(); ++k) {
    LineBytes& l = out.lines[k];
    l.at_dump = at(dump, k, false), l.blocks_at_dump = at(dump, k, true);
    l.at_peak = at(peak, k, false), l.blocks_at_peak = at(peak, k, true);
    l.allocated = at(trace, k, false), l.allocations = at(trace, k, true);
  }
  out.total.at_dump = dump.total_bytes, out.total.blocks_at_dump = dump.total_blocks;
  out.total.at_peak = peak.total_bytes, out.total.blocks_at_peak = peak.total_blocks;
  out.total.allocated = trace.total_bytes, out.total.allocations = trace.total_blocks;
  std::sort(out.lines.begin(), out.lines.end(),
            [](const LineBytes& a, const LineBytes& b) { return std::tie(a.file, a.line) < std::tie(b.file, b.line); });
  return out;
}

}  // namespace memsnap::analysis
