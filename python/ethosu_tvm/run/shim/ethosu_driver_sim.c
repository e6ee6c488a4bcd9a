/* The driver API of ethosu_driver.h for a PC: every invoke calls the function set by ethosu_tvm_set_invoke
 * (ethosu-tvm's Python runner installs one that runs the command stream in its Ethos-U55 simulator). */
#include "ethosu_driver.h"

typedef int (*ethosu_tvm_invoke_fn)(const void* command_stream, int size, uint64_t* base_addr,
                                    size_t* base_addr_size, int num_base_addr);

static ethosu_tvm_invoke_fn invoke_function;
static struct ethosu_driver the_driver;

void ethosu_tvm_set_invoke(ethosu_tvm_invoke_fn function) { invoke_function = function; }

struct ethosu_driver* ethosu_reserve_driver(void) { return &the_driver; }

void ethosu_release_driver(struct ethosu_driver* drv) { (void)drv; }

int ethosu_invoke_v3(struct ethosu_driver* drv, const void* custom_data_ptr, const int custom_data_size,
                     uint64_t* const base_addr, size_t* const base_addr_size, const int num_base_addr,
                     void* user_arg) {
  (void)user_arg;
  if (drv == NULL || invoke_function == NULL) {
    return -1;
  }
  return invoke_function(custom_data_ptr, custom_data_size, base_addr, base_addr_size, num_base_addr);
}
