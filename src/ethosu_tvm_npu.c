/* ethosu_tvm_npu.c: the one runtime function generated code needs, over the Ethos-U core driver API. */
#include "ethosu_tvm_npu.h"

#include <ethosu_driver.h>

int32_t ethosu_tvm_npu_invoke(struct ethosu_driver* driver, const uint8_t* command_stream, size_t command_stream_size,
                              uint64_t* base_addrs, size_t* base_addr_sizes, int32_t num_regions) {
  struct ethosu_driver* reserved = NULL;
  int result;
  if (driver == NULL) {
    reserved = ethosu_reserve_driver();
    if (reserved == NULL) {
      return -1;
    }
    driver = reserved;
  }
  /* The base-address arrays are non-const: driver 1.99 takes uint64_t* const, 0.16 const uint64_t*. */
  result = ethosu_invoke_v3(driver, command_stream, (int)command_stream_size, base_addrs, base_addr_sizes,
                            (int)num_regions, NULL);
  if (reserved != NULL) {
    ethosu_release_driver(reserved);
  }
  return result == 0 ? 0 : -1;
}
