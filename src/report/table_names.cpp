// Shortest unique file names for table columns, cut where they say least.
#include "table_names.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "text_util.hpp"

namespace memsnap::report::detail {

namespace {

constexpr const char* kCut = "…";  // one column

// A string by code points (each one display column), to cut at columns.
struct Points {
  std::string s;
  std::vector<size_t> at;  // byte offset of each code point, then s.size()
  explicit Points(std::string str) : s(std::move(str)) {
    for (size_t i = 0; i < s.size(); ++i)
      if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) at.push_back(i);
    at.push_back(s.size());
  }
  size_t size() const { return at.size() - 1; }
  std::string_view point(size_t i) const { return std::string_view(s).substr(at[i], at[i + 1] - at[i]); }
  std::string range(size_t a, size_t b) const { return s.substr(at[a], at[b] - at[a]); }
};

size_t common_prefix(const Points& x, const Points& y) {
  size_t n = std::min(x.size(), y.size()), i = 0;
  while (i < n && x.point(i) == y.point(i)) ++i;
  return i;
}

size_t common_suffix(const Points& x, const Points& y) {
  size_t n = std::min(x.size(), y.size()), i = 0;
  while (i < n && x.point(x.size() - 1 - i) == y.point(y.size() - 1 - i)) ++i;
  return i;
}

// Each path's shortest suffix of whole components that no other distinct path ends
// with. Two paths share a suffix only if they share every shorter one, so only the
// paths still unresolved are compared at each depth.
std::vector<std::string> unique_suffixes(const std::vector<std::string>& esc) {
  const size_t n = esc.size();
  std::vector<size_t> start(n);
  std::vector<size_t> open;
  for (size_t i = 0; i < n; ++i) start[i] = esc[i].size() + 1, open.push_back(i);
  while (!open.empty()) {
    for (size_t i : open) {  // one component more
      size_t p = start[i] >= 2 ? esc[i].rfind('/', start[i] - 2) : std::string::npos;
      start[i] = p == std::string::npos ? 0 : p + 1;
    }
    std::unordered_map<std::string_view, std::pair<size_t, bool>> owner;  // suffix: a path, shared?
    for (size_t i : open) {
      auto [it, fresh] = owner.try_emplace(std::string_view(esc[i]).substr(start[i]), i, false);
      if (!fresh && esc[it->second.first] != esc[i]) it->second.second = true;
    }
    std::vector<size_t> still;
    for (size_t i : open)
      if (start[i] > 0 && owner[std::string_view(esc[i]).substr(start[i])].second) still.push_back(i);
    open.swap(still);
  }
  std::vector<std::string> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = esc[i].substr(start[i]);
  return out;
}

struct Near {
  size_t prefix = 0, suffix = 0;  // code points in common at the start and at the end
};

// One name cut to `w` columns, keeping a differing character against every neighbour.
std::string cut_apart(const Points& x, const std::vector<Near>& near, size_t w) {
  const size_t n = x.size();
  auto apart = [&](size_t h, size_t t, const Near& y) { return h > y.prefix || t > y.suffix; };
  // One cut: the head or the tail tells it apart; the head gets about 2/5.
  const size_t target = (w - 1) * 2 / 5;
  for (size_t d = 0; d < w; ++d)
    for (size_t h : {target - std::min(d, target), target + d}) {
      if (h < 1 || h + 2 > w) continue;
      size_t t = w - 1 - h;
      if (std::all_of(near.begin(), near.end(), [&](const Near& y) { return apart(h, t, y); }))
        return x.range(0, h) + kCut + x.range(n - t, n);
    }
  // Two cuts: a short head, the extension as the tail, and a window over where the
  // others differ.
  const size_t h = std::max<size_t>(4, w / 5);
  size_t t = std::max<size_t>(4, w / 5);
  for (size_t e = 1; e <= std::min<size_t>(n, 8); ++e)
    if (x.point(n - e) == ".") {
      t = std::max<size_t>(e, 4);
      break;
    }
  if (w < h + t + 2 + 4) return x.range(0, target) + kCut + x.range(n - (w - 1 - target), n);
  const size_t k = w - h - t - 2;
  std::vector<Near> left;
  for (const Near& y : near)
    if (!apart(h, t, y)) left.push_back(y);
  size_t aim = n;
  for (const Near& y : left) aim = std::min(aim, y.prefix);
  for (size_t b = aim; b + 4 > aim && b > h + 1; --b)  // from the word the difference is in
    if (std::string_view sep = x.point(b - 1); sep == "_" || sep == "-" || sep == "." || sep == "/" || sep == " ") {
      aim = b;
      break;
    }
  std::optional<size_t> best;
  for (size_t a = h + 1; a + k + 1 + t <= n; ++a) {
    bool all =
        std::all_of(left.begin(), left.end(), [&](const Near& y) { return a <= n - 1 - y.suffix && a + k > y.prefix; });
    auto dist = [&](size_t v) { return v > aim ? v - aim : aim - v; };
    if (all && (!best || dist(a) < dist(*best))) best = a;
  }
  if (!best) return x.range(0, target) + kCut + x.range(n - (w - 1 - target), n);
  return x.range(0, h) + kCut + x.range(*best, *best + k) + kCut + x.range(n - t, n);
}

}  // namespace

std::vector<std::string> table_names(const std::vector<std::string>& paths, size_t width) {
  std::vector<std::string> esc;
  for (const auto& p : paths) esc.push_back(term(p, 1024));
  std::vector<std::string> names = unique_suffixes(esc);
  const size_t n = names.size();
  std::vector<Points> pts;
  for (const auto& s : names) pts.emplace_back(s);
  // Neighbours: the names closest in sorted order, from the start and from the end.
  std::vector<size_t> fwd(n), bwd(n), pos_f(n), pos_b(n);
  for (size_t i = 0; i < n; ++i) fwd[i] = bwd[i] = i;
  std::sort(fwd.begin(), fwd.end(), [&](size_t a, size_t b) { return names[a] < names[b]; });
  std::sort(bwd.begin(), bwd.end(), [&](size_t a, size_t b) {
    return std::lexicographical_compare(names[a].rbegin(), names[a].rend(), names[b].rbegin(), names[b].rend());
  });
  for (size_t k = 0; k < n; ++k) pos_f[fwd[k]] = k, pos_b[bwd[k]] = k;
  std::vector<std::string> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (pts[i].size() <= width || width < 8) {
      out[i] = pts[i].size() <= width ? names[i] : pts[i].range(0, std::min(width, pts[i].size()));
      continue;
    }
    std::vector<Near> near;
    for (const auto* order : {&fwd, &bwd}) {
      size_t at = order == &fwd ? pos_f[i] : pos_b[i];
      for (size_t k = at > 3 ? at - 3 : 0; k < std::min(n, at + 4); ++k) {
        size_t j = (*order)[k];
        if (names[j] == names[i]) continue;
        Near y{common_prefix(pts[i], pts[j]), common_suffix(pts[i], pts[j])};
        if (y.prefix < pts[i].size() && y.suffix < pts[i].size()) near.push_back(y);  // else no character of it differs
      }
    }
    out[i] = cut_apart(pts[i], near, width);
  }
  return out;
}

}  // namespace memsnap::report::detail
