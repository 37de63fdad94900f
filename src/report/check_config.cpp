// `check --config FILE`: a JSON object of limits, read in one linear pass (no DOM, no recursion).
#include <nlohmann/json.hpp>
#include <vector>

#include "memsnap/report/check.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::report {

namespace {

/// One top-level value of the config: a scalar, or a container (not allowed, but named).
struct ConfigValue {
  enum Type { Null, Bool, Unsigned, Integer, Float, String, Container } type = Null;
  bool b = false;
  uint64_t u = 0;
  double d = 0;
  std::string s;
};

/// SAX handler: collects the top-level (key, value) pairs in order; containers below the
/// top level are only counted, to the depth limit.
class ConfigSax {
 public:
  std::vector<std::pair<std::string, ConfigValue>> entries;
  bool top_is_object = false;
  std::string error;

  bool null() { return value(ConfigValue{}); }
  bool boolean(bool v) {
    ConfigValue c;
    c.type = ConfigValue::Bool, c.b = v;
    return value(std::move(c));
  }
  bool number_integer(int64_t v) {
    ConfigValue c;
    c.type = ConfigValue::Integer, c.d = double(v);
    return value(std::move(c));
  }
  bool number_unsigned(uint64_t v) {
    ConfigValue c;
    c.type = ConfigValue::Unsigned, c.u = v, c.d = double(v);
    return value(std::move(c));
  }
  bool number_float(double v, const std::string&) {
    ConfigValue c;
    c.type = ConfigValue::Float, c.d = v;
    return value(std::move(c));
  }
  bool string(std::string& v) {
    ConfigValue c;
    c.type = ConfigValue::String, c.s = std::move(v);
    return value(std::move(c));
  }
  bool binary(std::vector<uint8_t>&) { return value(ConfigValue{}); }
  bool start_object(size_t) { return open(true); }
  bool start_array(size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (depth_ == 1) pending_key_ = std::move(k);
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::json::exception& e) {
    error = e.what();
    return false;
  }

 private:
  size_t depth_ = 0;
  std::string pending_key_;

  bool value(ConfigValue v) {
    if (depth_ == 1) entries.emplace_back(std::move(pending_key_), std::move(v));
    return true;
  }
  bool open(bool object) {
    if (depth_ == 0) top_is_object = object;
    if (depth_ == 1) {
      ConfigValue c;
      c.type = ConfigValue::Container;
      entries.emplace_back(std::move(pending_key_), std::move(c));
    }
    if (++depth_ > kMaxJsonDepth) {
      error = "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return false;
    }
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
};

[[noreturn]] void bad(const std::string& what) {
  throw CheckConfigError(what);
}

}  // namespace

void read_check_config(std::string_view text, analysis::Limits& limits) {
  ConfigSax sax;
  bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  if (!ok || !sax.error.empty()) bad("not JSON: " + sax.error);
  if (!sax.top_is_object) bad("the config must be a JSON object");
  for (auto& [key, value] : sax.entries) {
    std::string where = terminal_safe(key);
    std::optional<analysis::CheckKind> size_check;
    for (analysis::CheckKind k : analysis::kSizeChecks)
      if (key == analysis::to_string(k)) size_check = k;
    if (key == "capacity" || key == "min-headroom") {
      std::optional<uint64_t>& slot = key == "capacity" ? limits.capacity : limits.min_headroom;
      if (value.type == ConfigValue::String) {
        auto v = parse_size(value.s);
        if (!v) bad(where + ": not a size: '" + value.s + "'");
        slot = *v;
      } else if (value.type == ConfigValue::Unsigned) {
        slot = value.u;
      } else {
        bad(where + ": a size is a string (\"20GiB\") or a number of bytes");
      }
    } else if (size_check) {
      if (value.type == ConfigValue::String) {
        auto v = parse_size(value.s);
        if (!v) bad(where + ": not a size: '" + value.s + "'");
        limits.size(*size_check) = *v;
      } else if (value.type == ConfigValue::Unsigned) {
        limits.size(*size_check) = value.u;
      } else {
        bad(where + ": a size is a string (\"20GiB\") or a number of bytes");
      }
    } else if (key == "max-fragmentation") {
      bool number =
          value.type == ConfigValue::Unsigned || value.type == ConfigValue::Integer || value.type == ConfigValue::Float;
      if (!number || !(value.d >= 0 && value.d <= 1)) bad(where + ": a number from 0 to 1");
      limits.max_fragmentation = value.d;
    } else if (key == "no-leaks" || key == "no-oom") {
      if (value.type != ConfigValue::Bool) bad(where + ": true or false");
      (key == "no-leaks" ? limits.no_leaks : limits.no_oom) = value.b;
    } else {
      bad("unknown key '" + where +
          "' (known: max-reserved, max-allocated, max-peak, max-fragmentation, max-stranded, no-leaks, no-oom, "
          "capacity, min-headroom)");
    }
  }
}

}  // namespace memsnap::report
