// Test-only: decodes each pickle named on the command line with memsnap's unpickler and
// prints one line per file, "OK <value>" or "ERR <message>", in the canonical form of
// testdata/pickle/*.expected. Dicts are shown as Python holds them (a repeated key keeps
// its first position and its last value; 1, 1.0 and True are one key), so the line can
// be compared with what Python's pickle.loads returns.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/util/error.hpp"

using namespace memsnap::pickle;

namespace {

// The key as Python compares it: numbers by value, everything else by its rendering.
std::string key_identity(const ValueGraph& g, ValueId k) {
  switch (g.kind(k)) {
    case Kind::Bool: return g.as_bool(k) ? "1" : "0";
    case Kind::Float: {
      double d = g.as_float(k);
      if (d == static_cast<double>(static_cast<long long>(d)) && d > -9e18 && d < 9e18)
        return std::to_string(static_cast<long long>(d));
      return dump(g, k);
    }
    default: return dump(g, k);
  }
}

void render(const ValueGraph& g, ValueId id, std::string& out, int depth) {
  if (depth > 150 || out.size() > (size_t{1} << 22)) {
    out += "...";
    return;
  }
  switch (g.kind(id)) {
    case Kind::List:
    case Kind::Tuple: {
      bool list = g.kind(id) == Kind::List;
      out += list ? '[' : '(';
      bool first = true;
      for (ValueId c : g.items(id)) {
        if (!first) out += ", ";
        first = false;
        render(g, c, out, depth + 1);
      }
      out += list ? ']' : ')';
      return;
    }
    case Kind::Dict: {
      auto it = g.items(id);
      std::vector<std::string> keys;
      std::vector<ValueId> key_ids, values;
      for (size_t i = 0; i + 1 < it.size(); i += 2) {
        std::string k = key_identity(g, it[i]);
        size_t j = 0;
        while (j < keys.size() && keys[j] != k) ++j;
        if (j == keys.size()) {
          keys.push_back(k);
          key_ids.push_back(it[i]);
          values.push_back(it[i + 1]);
        } else {
          values[j] = it[i + 1];
        }
      }
      out += '{';
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i) out += ", ";
        render(g, key_ids[i], out, depth + 1);
        out += ": ";
        render(g, values[i], out, depth + 1);
      }
      out += '}';
      return;
    }
    default: out += dump(g, id);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    try {
      ValueGraph g = unpickle(bytes);
      std::string out;
      render(g, g.root(), out, 0);
      std::printf("OK %s\n", out.c_str());
    } catch (const memsnap::InputError& e) {
      std::string m = e.what();
      for (char& c : m)
        if (c == '\n') c = ' ';
      std::printf("ERR %s\n", m.c_str());
    }
  }
  return 0;
}
