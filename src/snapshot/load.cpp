// path -> io -> pickle/json -> builder: the one pipeline every command uses.
#include "memsnap/snapshot/load.hpp"

#include "fast_build.hpp"
#include "memsnap/pickle/json_reader.hpp"
#include "memsnap/snapshot/builder.hpp"
#include "memsnap/util/error.hpp"

namespace memsnap::snapshot {

namespace {

Loaded parse(const io::ByteSource& src, const std::string& path, const LoadOptions& options,
             util::MemoryBudget& budget) {
  Loaded out;
  out.input.path = path;
  out.input.bytes = src.stored_bytes();
  out.input.compression = src.compression();
  out.input.encoding = src.encoding();
  src.check_text_encoding();
  BuildOptions build;
  build.budget = &budget;
  std::optional<uint64_t> decoded;  // known without data(): the input went through a window
  if (out.input.encoding == io::Encoding::Json) {
    build.input_bytes = src.data().size();
    auto text = src.data().subspan(io::utf8_bom(src.data()));  // a UTF-8 byte order mark is fine
    pickle::ValueGraph g = pickle::read_json(text, &budget);
    out.snapshot = build_snapshot(g, build);
  } else if (auto fast = options.parser == Parser::General
                             ? std::nullopt
                             : detail::fast_build(
                                   src, &budget, &options.progress,
                                   detail::FastOptions{options.threads, &options.diagnostics, options.split_wait})) {
    // The schema-directed path: the same model, without a value graph (see fast/fast_builder.hpp).
    out.input.pickle_protocol = fast->protocol;
    out.snapshot = std::move(fast->snapshot);
    decoded = fast->decoded_bytes;
  } else {
    if (options.parser == Parser::Fast)
      throw InputError("",
                       "--parser fast: the fast path gives way to the general parser on this input "
                       "(--parser auto reads it)");
    budget.set(util::Account::Model, 0);
    budget.set(util::Account::Parse, 0);
    build.input_bytes = src.data().size();
    pickle::PickleInfo info;
    pickle::Limits limits = options.limits;
    limits.budget = &budget;
    if (options.progress) limits.progress = options.progress;
    pickle::ValueGraph g = pickle::unpickle(src.data(), &info, limits);
    out.input.pickle_protocol = info.protocol;
    out.snapshot = build_snapshot(g, build);
  }
  // A streaming decoder may still be reading past the pickle's end: this waits for it and
  // throws its error, as decoding first would have (a window's decoder did that already).
  out.input.decoded_bytes = decoded ? *decoded : src.data().size();
  for (auto& d : out.snapshot.devices) d.trace.trim();  // the model is complete: no more growth
  budget.set(util::Account::Parse, 0);
  return out;
}

Loaded decode(const io::ByteSource& src, const std::string& path, const LoadOptions& options,
              util::MemoryBudget& budget) {
  try {
    Loaded out = parse(src, path, options, budget);
    src.check_intact();
    return out;
  } catch (const InputError& e) {
    src.check_intact();  // a file cut short under us explains any error
    (void)src.data();    // so does a decoding error (a streaming decoder reports it only here)
    // Offsets into decompressed data are not offsets into the file: say which they are.
    if (src.compression() != io::Compression::None && e.location().rfind("offset ", 0) == 0)
      throw InputError("decoded " + e.location(), e.message());
    throw;
  }
}

}  // namespace

// What the default bound scales with: the decoded bytes, or while a compressed input is still
// being decoded (through a window, perhaps, that never holds it all), 64 times its stored bytes.
static void note_input(util::MemoryBudget& budget, const io::ByteSource& src) {
  if (src.compression() == io::Compression::None)
    budget.note_input(src.stored_bytes());
  else
    budget.note_input(src.stored_bytes() > UINT64_MAX / 64 ? UINT64_MAX : src.stored_bytes() * 64);
}

Loaded load_snapshot(const std::string& path, const LoadOptions& options) {
  auto budget = std::make_shared<util::MemoryBudget>(options.max_memory, options.shared_budget);
  if (options.input_multiple) budget->proportional(options.input_multiple, options.input_floor);
  io::ReadOptions read = options.read;
  read.threads = options.threads;
  read.budget = budget.get();
  read.stream = true;
  read.sniff_snapshot = true;  // decode on the second core while parsing
  if (options.progress) read.progress = options.progress;
  Loaded out;
  {
    io::ByteSource src = io::ByteSource::open(path, read);
    note_input(*budget, src);
    out = decode(src, path, options, *budget);
  }
  budget->set(util::Account::Input, 0);  // the input is released once the model is built
  out.budget = std::move(budget);
  return out;
}

Loaded load_snapshot_bytes(std::vector<uint8_t> bytes, const std::string& name, const LoadOptions& options) {
  auto budget = std::make_shared<util::MemoryBudget>(options.max_memory, options.shared_budget);
  if (options.input_multiple) budget->proportional(options.input_multiple, options.input_floor);
  io::ReadOptions read = options.read;
  read.threads = options.threads;
  read.budget = budget.get();
  read.stream = true;
  read.sniff_snapshot = true;
  if (options.progress) read.progress = options.progress;
  Loaded out;
  {
    io::ByteSource src = io::ByteSource::from_bytes(std::move(bytes), read);
    note_input(*budget, src);
    out = decode(src, name, options, *budget);
  }
  budget->set(util::Account::Input, 0);
  out.budget = std::move(budget);
  return out;
}

}  // namespace memsnap::snapshot
