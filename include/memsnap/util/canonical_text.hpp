// One view per distinct text: strings of two snapshots (or of one) that are equal become the
// same view, so that keys holding them compare without reading them (compare_text). Thousands
// of frames sharing one 1 MiB file name then cost one comparison of that name, not one per
// frame (issue 38). Each distinct view is looked up once by its address, then by its text in
// an ordered set (O(log n) comparisons, no hash to flood).
#pragma once

#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memsnap {

/// Equal texts compare equal without being read when they are the same view.
inline int compare_text(std::string_view a, std::string_view b) {
  if (a.data() == b.data() && a.size() == b.size()) return 0;
  return a.compare(b);
}

/// The views it returns live as long as the texts given to it.
class CanonicalText {
 public:
  /// The one view of v's text: the first view of equal text this was given.
  std::string_view operator()(std::string_view v);

 private:
  std::unordered_map<const char*, std::vector<std::string_view>> by_data_;
  std::set<std::string_view> texts_;
};

}  // namespace memsnap
