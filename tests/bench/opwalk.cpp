// The floor for any pickle reader: walk the opcodes of a protocol 2-5 pickle, build nothing.
// bench_opwalk FILE; prints the opcode count. Used by tests/bench/run.sh as the yardstick.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int fd = open(argv[1], O_RDONLY);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) return 2;
  auto* p = static_cast<const uint8_t*>(mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0));
  const uint8_t* end = p + st.st_size;
  uint64_t ops = 0;
  auto u32 = [](const uint8_t* q) {
    uint32_t v;
    std::memcpy(&v, q, 4);
    return uint64_t(v);
  };
  while (p < end) {
    uint8_t c = *p++;
    ++ops;
    switch (c) {
      case 0x80:
      case 'K':
      case 'h':
      case 'q': p += 1; break;
      case 'M': p += 2; break;
      case 'J':
      case 'j':
      case 'r': p += 4; break;
      case 'G':
      case 0x95: p += 8; break;
      case 0x8a: p += 1 + *p; break;
      case 0x8c:
      case 'C': p += 1 + *p; break;
      case 'X':
      case 'B': p += 4 + u32(p); break;
      case 0x8d:
      case 0x8e:
      case 0x96: {
        uint64_t n;
        std::memcpy(&n, p, 8);
        p += 8 + n;
        break;
      }
      case '.': std::printf("%llu opcodes\n", static_cast<unsigned long long>(ops)); return 0;
      default: break;
    }
  }
  return 1;
}
