// JSON input through nlohmann's SAX interface, straight into a ValueGraph (no DOM).
#include "memsnap/pickle/json_reader.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "memsnap/util/error.hpp"

namespace memsnap::pickle {

namespace {

// The byte offset of the bracket that opens nesting level `depth` + 1 (levels counted from 1),
// for the error: SAX events carry no offsets, and the parser has accepted everything before it.
size_t offset_of_level(std::span<const uint8_t> in, size_t depth) {
  size_t level = 0;
  bool in_string = false;
  for (size_t i = 0; i < in.size(); ++i) {
    uint8_t c = in[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++level > depth) return i;
    } else if (c == ']' || c == '}') {
      --level;
    }
  }
  return 0;
}

class Sax : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Sax(ValueGraph& g) : g_(g) {}
  bool too_deep = false;  // stopped at kMaxJsonDepth

  bool null() override { return push(g_.make_none()); }
  bool boolean(bool b) override { return push(g_.make_bool(b)); }
  bool number_integer(number_integer_t v) override { return push(g_.make_int(v)); }
  bool number_unsigned(number_unsigned_t v) override { return push(g_.make_uint(v)); }
  bool number_float(number_float_t v, const string_t&) override { return push(g_.make_float(v)); }
  bool string(string_t& s) override { return push(g_.make_side(Kind::Str, s)); }
  bool binary(binary_t& b) override {
    return push(g_.make_side(Kind::Bytes, std::string_view(reinterpret_cast<const char*>(b.data()), b.size())));
  }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t& s) override { return push(g_.make_side(Kind::Str, s)); }
  bool end_object() override { return close(Kind::Dict); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(Kind::List); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    std::string msg = ex.what();
    // nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    if (auto colon = msg.find(": "); colon != std::string::npos) msg = msg.substr(colon + 2);
    throw_at_offset(position > 0 ? position - 1 : 0, "invalid JSON: " + msg);
  }

  ValueId result() const { return stack_.empty() ? g_.make_none() : stack_.back(); }

 private:
  bool push(ValueId v) {
    stack_.push_back(v);
    return true;
  }
  bool open() {
    if (marks_.size() >= kMaxJsonDepth) {
      too_deep = true;
      return false;  // stops the parse
    }
    marks_.push_back(stack_.size());
    return true;
  }
  bool close(Kind k) {
    size_t m = marks_.back();
    marks_.pop_back();
    ValueId c = g_.make_container(k);
    g_.append(c, std::span<const ValueId>(stack_.data() + m, stack_.size() - m));
    stack_.resize(m);
    return push(c);
  }

  ValueGraph& g_;
  std::vector<ValueId> stack_;
  std::vector<size_t> marks_;
};

}  // namespace

ValueGraph read_json(std::span<const uint8_t> input, util::MemoryBudget* budget) {
  ValueGraph g(input);
  g.set_budget(budget);
  Sax sax(g);
  nlohmann::json::sax_parse(input.begin(), input.end(), &sax);
  if (sax.too_deep)
    throw_at_offset(offset_of_level(input, kMaxJsonDepth), "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                                               " levels (a snapshot has fewer than 10)");
  g.set_root(sax.result());
  return g;
}

}  // namespace memsnap::pickle
