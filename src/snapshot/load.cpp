// path -> io -> pickle/json -> builder: the one pipeline every command uses.
#include "memsnap/snapshot/load.hpp"

#include "memsnap/pickle/json_reader.hpp"
#include "memsnap/snapshot/builder.hpp"

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
  } else {
    pickle::PickleInfo info;
    pickle::Limits limits = options.limits;
    if (options.progress) limits.progress = options.progress;
    pickle::ValueGraph g = pickle::unpickle(src.data(), &info, limits);
    out.input.pickle_protocol = info.protocol;
    out.snapshot = build_snapshot(g, build);
  }
  return out;
}

io::ReadOptions read_options(const LoadOptions& options) {
  io::ReadOptions read = options.read;
  if (options.progress) read.progress = options.progress;
  return read;
}

}  // namespace

Loaded load_snapshot(const std::string& path, const LoadOptions& options) {
  return decode(io::ByteSource::open(path, read_options(options)), path, options);
}

Loaded load_snapshot_bytes(std::vector<uint8_t> bytes, const std::string& name, const LoadOptions& options) {
  return decode(io::ByteSource::from_bytes(std::move(bytes), read_options(options)), name, options);
}

}  // namespace memsnap::snapshot
