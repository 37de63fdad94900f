// path -> io -> pickle/json -> builder: the one pipeline every command uses.
#include "memsnap/snapshot/load.hpp"

#include "memsnap/pickle/json_reader.hpp"
#include "memsnap/snapshot/builder.hpp"

#include "fast_build.hpp"

namespace memsnap::snapshot {

namespace {

Loaded decode(io::ByteSource src, const std::string& path, const LoadOptions& options) {
  Loaded out;
  out.input.path = path;
  out.input.bytes = src.stored_bytes();
  out.input.decoded_bytes = src.data().size();
  out.input.compression = src.compression();
  out.input.encoding = src.encoding();
  BuildOptions build;
  build.input_bytes = src.data().size();
  if (out.input.encoding == io::Encoding::Json) {
    pickle::ValueGraph g = pickle::read_json(src.data());
    out.snapshot = build_snapshot(g, build);
  } else if (auto fast = detail::fast_build(src.data())) {
    // The schema-directed path: the same model, without a value graph (see fast_build.cpp).
    out.input.pickle_protocol = fast->protocol;
    out.snapshot = std::move(fast->snapshot);
  } else {
    pickle::PickleInfo info;
    pickle::ValueGraph g = pickle::unpickle(src.data(), &info, options.limits);
    out.input.pickle_protocol = info.protocol;
    out.snapshot = build_snapshot(g, build);
  }
  return out;
}

}  // namespace

Loaded load_snapshot(const std::string& path, const LoadOptions& options) {
  return decode(io::ByteSource::open(path, options.read), path, options);
}

Loaded load_snapshot_bytes(std::vector<uint8_t> bytes, const std::string& name, const LoadOptions& options) {
  return decode(io::ByteSource::from_bytes(std::move(bytes), options.read), name, options);
}

}  // namespace memsnap::snapshot
