// CanonicalText's lookup: by the view's address first, then by its text in the ordered set
// (see canonical_text.hpp).
#include "memsnap/util/canonical_text.hpp"

namespace memsnap {

std::string_view CanonicalText::operator()(std::string_view v) {
  std::vector<std::string_view>& seen = by_data_[v.data()];
  for (std::string_view s : seen)
    if (s.size() == v.size()) return s;
  std::string_view c = *texts_.insert(v).first;
  seen.push_back(c);
  return c;
}

}  // namespace memsnap
