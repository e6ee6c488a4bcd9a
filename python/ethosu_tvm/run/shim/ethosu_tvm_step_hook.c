/* Linked into debug builds only (layer dumps): the host kernels are then compiled with -finstrument-functions, and
 * every return from a kernel that the runner called (call depth back to 0; helpers a kernel calls do not count)
 * calls the function set by ethosu_tvm_set_step_hook. The runner and the NPU glue are not instrumented. The hooks are
 * hidden so that the kernels bind to them, not to the C library's stubs of the same name. */
typedef void (*ethosu_tvm_step_fn)(void);

static ethosu_tvm_step_fn step_function;
static int depth;

void ethosu_tvm_set_step_hook(ethosu_tvm_step_fn function) { step_function = function; }

#define HOOK __attribute__((no_instrument_function, visibility("hidden")))

HOOK void __cyg_profile_func_enter(void* function, void* call_site) {
  (void)function;
  (void)call_site;
  depth++;
}

HOOK void __cyg_profile_func_exit(void* function, void* call_site) {
  (void)function;
  (void)call_site;
  if (--depth == 0 && step_function != 0) {
    step_function();
  }
}
