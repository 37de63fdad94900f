// `memsnap mcp`: the Model Context Protocol over standard input and output.
//
// The transport is MCP's stdio one: JSON-RPC 2.0 messages, one per line, no newline inside a
// message. The client sends requests (initialize, ping, tools/list, tools/call) and
// notifications (notifications/initialized, notifications/cancelled); the server answers every
// request once, with a result or a JSON-RPC error, and never answers a notification.
//
// Two threads. The reader (the caller of run_mcp) reads lines, refuses what is not a request
// (a line over kMcpMaxRequestBytes is skipped to its newline without being held, a line nested
// deeper than kMaxDepth is refused before it is parsed, then parse error, invalid request,
// method not found, invalid params) and answers initialize, ping and tools/list at once. A
// tools/call goes to a queue that one worker thread runs in order, so a ping is answered while an
// analysis runs. notifications/cancelled drops a queued call; a running one cannot be stopped
// (the analyses have no cancellation points) and runs to its end, but its result is not sent,
// as the protocol asks. Messages go out whole, one at a time (a mutex), on the descriptor that
// was standard output; descriptor 1 itself then points at standard error, so nothing but
// protocol messages can reach the client, whatever else writes to stdout.
//
// A tool's failure (an argument its schema refuses, a path outside --allow, a file that cannot be
// read) is a result with isError: true and the one-line message, which the model can act on;
// JSON-RPC errors are for requests that are not well-formed MCP (SEP-1303).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "mcp_tools.hpp"
#include "memsnap/io/output_file.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"

namespace memsnap::app {

namespace {

using json = nlohmann::json;

// The revisions spoken, newest first: a client asking for one of them gets it, any other client
// the newest. Before 2025-06-18 results had no structuredContent: those clients also get the
// document as a text block.
constexpr const char* kVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
constexpr const char* kStructuredSince = "2025-06-18";
constexpr int kMaxDepth = 32;  // MCP requests nest a handful of levels

enum : int { kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601, kInvalidParams = -32602 };

std::string line_of(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_message(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json result_message(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

// Whether the arrays and objects of `line` nest deeper than `limit`, counting outside strings.
bool nests_deeper_than(std::string_view line, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : line) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// Lines from a descriptor, each at most `max` bytes: a longer one is read to its newline and
// dropped as it goes, so it never occupies more than the read buffer.
class LineReader {
 public:
  enum class Got { Line, TooLong, End };
  LineReader(int fd, size_t max) : fd_(fd), max_(max), buffer_(size_t{1} << 16) {}

  Got next(std::string& line) {
    line.clear();
    bool too_long = false;
    for (;;) {
      if (pos_ == len_) {
        if (eof_) break;
        ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          eof_ = true;
          break;
        }
        pos_ = 0, len_ = size_t(n);
      }
      const char* start = buffer_.data() + pos_;
      const void* newline = std::memchr(start, '\n', len_ - pos_);
      size_t take = newline ? size_t(static_cast<const char*>(newline) - start) : len_ - pos_;
      if (!too_long && line.size() + take > max_) {
        too_long = true;
        std::string().swap(line);
      }
      if (!too_long) line.append(start, take);
      pos_ += take;
      if (newline) {
        ++pos_;
        return too_long ? Got::TooLong : Got::Line;
      }
    }
    if (too_long) return Got::TooLong;  // the last line, without its newline
    return line.empty() ? Got::End : Got::Line;
  }

 private:
  int fd_;
  size_t max_;
  std::vector<char> buffer_;
  size_t pos_ = 0, len_ = 0;
  bool eof_ = false;
};

// The protocol's output: one message a line, whole, one writer at a time.
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  void send(const json& message) {
    std::string line = line_of(message) + '\n';
    std::lock_guard lock(mutex_);
    for (size_t done = 0; done < line.size() && !gone_;) {
      ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) gone_ = true;  // the client closed its end
      done += n > 0 ? size_t(n) : 0;
    }
  }
  bool gone() {
    std::lock_guard lock(mutex_);
    return gone_;
  }

 private:
  int fd_;
  std::mutex mutex_;
  bool gone_ = false;
};

void note(const std::string& line) {
  std::cerr << "memsnap mcp: " << terminal_safe(line) << '\n' << std::flush;
}

json tool_error(const std::string& message) {
  return {{"content", json::array({{{"type", "text"}, {"text", message}}})}, {"isError", true}};
}

class Server {
 public:
  Server(const McpRequest& request, uint64_t max_output, Channel& out)
      : paths_(request.allow), env_{paths_, request.max_memory, max_output}, out_(out) {
    worker_ = std::thread([this] { work(); });
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server() { finish(); }

  /// Standard input ended: the calls already read are answered, then the worker stops.
  void finish() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

  void too_long() {
    out_.send(error_message(nullptr, kInvalidRequest,
                            "request larger than " + human_bytes(kMcpMaxRequestBytes) + ": refused, not read"));
  }

  void message(const std::string& line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    if (nests_deeper_than(line, kMaxDepth))
      return out_.send(
          error_message(nullptr, kInvalidRequest, "nested deeper than " + std::to_string(kMaxDepth) + " levels"));
    json m = json::parse(line, nullptr, false);
    if (m.is_discarded()) return out_.send(error_message(nullptr, kParseError, "parse error: the line is not JSON"));
    if (m.is_array())
      return out_.send(error_message(nullptr, kInvalidRequest, "batches are not supported: one message a line"));
    if (!m.is_object()) return out_.send(error_message(nullptr, kInvalidRequest, "a message is a JSON object"));
    auto id = m.find("id");
    bool good_id = id != m.end() && (id->is_string() || id->is_number_integer());
    json reply_id = good_id ? *id : json(nullptr);
    auto method = m.find("method");
    if (m.find("jsonrpc") == m.end() || m["jsonrpc"] != "2.0")
      return out_.send(error_message(reply_id, kInvalidRequest, "jsonrpc must be \"2.0\""));
    if (method == m.end()) {
      if (m.contains("result") || m.contains("error")) return;  // a response: this server sends no requests
      return out_.send(error_message(reply_id, kInvalidRequest, "no method"));
    }
    if (!method->is_string()) return out_.send(error_message(reply_id, kInvalidRequest, "method must be a string"));
    if (id != m.end() && !good_id)
      return out_.send(error_message(nullptr, kInvalidRequest, "id must be a string or an integer"));
    json params = m.value("params", json::object());
    if (id == m.end()) return notification(method->get<std::string>(), params);
    if (!params.is_object()) return out_.send(error_message(reply_id, kInvalidParams, "params must be an object"));
    request(reply_id, method->get<std::string>(), params);
  }

 private:
  struct Call {
    json id;
    const mcp::Tool* tool = nullptr;
    json arguments;
  };

  void request(const json& id, const std::string& method, const json& params) {
    if (method == "initialize") return initialize(id, params);
    if (method == "ping") return out_.send(result_message(id, json::object()));
    if (method == "tools/list") return out_.send(result_message(id, tool_list()));
    if (method != "tools/call")
      return out_.send(error_message(id, kMethodNotFound, "method not found: " + method.substr(0, 64)));
    auto name = params.find("name");
    if (name == params.end() || !name->is_string())
      return out_.send(error_message(id, kInvalidParams, "params.name: the tool's name, a string"));
    const mcp::Tool* tool = mcp::find_tool(name->get<std::string>());
    if (!tool) {
      std::string known;
      for (const auto& t : mcp::tools()) known += (known.empty() ? "" : ", ") + std::string(t.name);
      return out_.send(error_message(
          id, kInvalidParams, "unknown tool '" + name->get<std::string>().substr(0, 64) + "' (tools: " + known + ")"));
    }
    json arguments = params.value("arguments", json::object());
    if (!arguments.is_object())
      return out_.send(error_message(id, kInvalidParams, "params.arguments must be an object"));
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({id, tool, std::move(arguments)});
    }
    wake_.notify_one();
  }

  void notification(const std::string& method, const json& params) {
    if (method != "notifications/cancelled" || !params.is_object() || !params.contains("requestId")) return;
    const json& id = params["requestId"];
    std::lock_guard lock(mutex_);
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (it->id == id) {
        queue_.erase(it);
        note("request " + id.dump() + " cancelled before it ran");
        return;
      }
    if (running_ && *running_ == id) {
      running_cancelled_ = true;
      note("request " + id.dump() + " cancelled: it runs to its end, its result is not sent");
    }
  }

  void initialize(const json& id, const json& params) {
    auto asked = params.find("protocolVersion");
    if (asked == params.end() || !asked->is_string())
      return out_.send(error_message(id, kInvalidParams, "params.protocolVersion: a string, e.g. \"2025-11-25\""));
    std::string version = kVersions[0];
    for (const char* v : kVersions)
      if (*asked == v) version = v;
    {
      std::lock_guard lock(mutex_);
      version_ = version;
    }
    json result = {
        {"protocolVersion", version},
        {"capabilities", {{"tools", {{"listChanged", false}}}}},
        {"serverInfo", {{"name", "memsnap"}, {"title", "memsnap"}, {"version", kVersion}}},
        {"instructions",
         "memsnap explains PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot): why a job ran out of "
         "memory, whether it leaks, what changed between two snapshots, where memory goes by call stack. Start "
         "with analyze; events, segments and flame look closer at one moment (the peak, the OOM, an event index); "
         "simulate tries allocator settings and device sizes; diff compares two snapshots; check tests limits. "
         "Files must be under: " +
             paths_.describe()}};
    out_.send(result_message(id, std::move(result)));
  }

  json tool_list() const {
    json list = json::array();
    for (const auto& t : mcp::tools())
      list.push_back(
          {{"name", t.name},
           {"title", t.title},
           {"description", t.description},
           {"inputSchema", t.input_schema},
           {"outputSchema", t.output_schema},
           {"annotations",
            {{"readOnlyHint", true}, {"destructiveHint", false}, {"idempotentHint", true}, {"openWorldHint", false}}}});
    return {{"tools", std::move(list)}};
  }

  void work() {
    for (;;) {
      Call call;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        call = std::move(queue_.front());
        queue_.pop_front();
        running_ = call.id;
        running_cancelled_ = false;
      }
      json result = run(call);
      bool cancelled;
      {
        std::lock_guard lock(mutex_);
        cancelled = running_cancelled_;
        running_.reset();
      }
      if (!cancelled) out_.send(result_message(call.id, std::move(result)));
    }
  }

  // One tools/call, start to end: its result, or its error as a result with isError.
  json run(const Call& call) {
    auto start = std::chrono::steady_clock::now();
    std::string error;
    json result;
    if (std::string problem = mcp::schema_problem(call.tool->input_schema, call.arguments); !problem.empty()) {
      error = problem;
    } else {
      try {
        mcp::ToolResult r = call.tool->run(call.arguments, env_);
        json content = json::array({{{"type", "text"}, {"text", r.summary}}});
        std::string version;
        {
          std::lock_guard lock(mutex_);
          version = version_;
        }
        if (version < kStructuredSince) content.push_back({{"type", "text"}, {"text", line_of(r.structured)}});
        result = {{"content", std::move(content)}, {"structuredContent", std::move(r.structured)}, {"isError", false}};
      } catch (const mcp::ToolError& e) {
        error = e.what();
      } catch (const Failure& e) {
        error = e.what();
      } catch (const InputError& e) {
        error = e.what();
      } catch (const UsageError& e) {
        error = e.what();
      } catch (const io::OutputError& e) {
        error = e.what();
      } catch (const std::bad_alloc&) {
        error = "out of memory (memsnap mcp --max-memory bounds each load)";
      } catch (const std::exception& e) {
        error = std::string("internal error: ") + e.what() + " (a bug in memsnap; please report it)";
      }
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    note(std::string(call.tool->name) + ": " + (error.empty() ? "answered" : "error: " + error) + " (" +
         std::to_string(ms) + " ms)");
    return error.empty() ? result : tool_error(error);
  }

  PathGuard paths_;
  mcp::ToolEnv env_;
  Channel& out_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Call> queue_;
  std::optional<json> running_;  // the id of the call the worker runs
  bool running_cancelled_ = false;
  bool closing_ = false;
  std::string version_ = kVersions[0];
  std::thread worker_;
};

}  // namespace

void run_mcp(const McpRequest& request) {
  auto max_output = parse_size(request.max_output);
  if (!max_output || *max_output == 0)
    throw Failure("--max-output: not a size: '" + request.max_output + "'", kBadInput);
  auto max_memory = parse_size(request.max_memory);
  if (!max_memory || *max_memory == 0)
    throw Failure("--max-memory: not a size: '" + request.max_memory + "'", kBadInput);
  PathGuard check_first(request.allow);  // a bad --allow fails before the protocol starts

  // Descriptor 1 is the protocol's alone: kept aside, then pointed at standard error.
  std::cout.flush();
  int protocol = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (protocol < 0) throw Failure(std::string("mcp: standard output: ") + std::strerror(errno), kBadInput);
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    throw Failure(std::string("mcp: standard error: ") + std::strerror(errno), kBadInput);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone is a failed write, not a signal

  Channel out(protocol);
  Server server(request, *max_output, out);
  note("serving " + std::string(kVersions[0]) + " on stdin/stdout; tools read " + check_first.describe());
  LineReader in(STDIN_FILENO, kMcpMaxRequestBytes);
  std::string line;
  for (;;) {
    LineReader::Got got = in.next(line);
    if (got == LineReader::Got::End || out.gone()) break;
    if (got == LineReader::Got::TooLong)
      server.too_long();
    else
      server.message(line);
  }
  server.finish();
  ::close(protocol);
}

}  // namespace memsnap::app
