/* ethosu_tvm_dump: print `size` bytes as lines of hex between "@@dump NAME SIZE" and "@@end NAME" markers, so that a
 * host reads a run's outputs back exactly from the console (tests/qemu/qemu_harness.py parse_dumps does). */
#ifndef ETHOSU_TVM_DUMP_H_
#define ETHOSU_TVM_DUMP_H_

#include <stdint.h>
#include <stdio.h>

__attribute__((unused)) static void ethosu_tvm_dump(const char* name, const void* data, unsigned size) {
  static const char digits[] = "0123456789abcdef";
  const unsigned char* bytes = (const unsigned char*)data;
  char line[2 * 64 + 2];
  printf("@@dump %s %u\n", name, size);
  for (unsigned start = 0; start < size; start += 64) {
    unsigned n = size - start < 64 ? size - start : 64, i;
    for (i = 0; i < n; ++i) {
      line[2 * i] = digits[bytes[start + i] >> 4];
      line[2 * i + 1] = digits[bytes[start + i] & 15];
    }
    line[2 * n] = '\n';
    line[2 * n + 1] = 0;
    fputs(line, stdout);
  }
  printf("@@end %s\n", name);
}

#endif /* ETHOSU_TVM_DUMP_H_ */
