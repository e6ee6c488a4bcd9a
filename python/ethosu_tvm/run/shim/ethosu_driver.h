/* ethosu_driver.h for running generated code off-target: the subset of the Arm Ethos-U core driver API that
 * ethosu-tvm's runtime glue calls, implemented by ethosu_driver_sim.c with a callback into a simulator.
 * Signatures follow driver 1.99 (non-const base-address arrays), which also match 0.16 call sites. */
#ifndef ETHOSU_DRIVER_H
#define ETHOSU_DRIVER_H

#include <stddef.h>
#include <stdint.h>

struct ethosu_driver {
  int reserved;
};

struct ethosu_driver* ethosu_reserve_driver(void);
void ethosu_release_driver(struct ethosu_driver* drv);
int ethosu_invoke_v3(struct ethosu_driver* drv, const void* custom_data_ptr, const int custom_data_size,
                     uint64_t* const base_addr, size_t* const base_addr_size, const int num_base_addr,
                     void* user_arg);

#endif /* ETHOSU_DRIVER_H */
