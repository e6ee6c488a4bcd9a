/* Bare-metal start-up for Corstone-300 (Cortex-M55, Secure state; QEMU mps3-an547), used with corstone300.ld and
 * newlib's rdimon (semihosting). Reset: enable the FPU/MVE, copy .data, zero .bss and .sram_bss, set up semihosting
 * stdio, exit(main()). Any fault prints its status registers with integer-only code and exits with
 * ETHOSU_TVM_HARDFAULT_EXIT. The Ethos-U55's interrupt (IRQ 56) calls NPU_IRQHandler, which the application defines
 * when it uses the NPU (ethosu_irq_handler). */
#include <stdint.h>
#include <stdlib.h>

#define ETHOSU_TVM_HARDFAULT_EXIT 222

#define REG(addr) (*(volatile uint32_t *)(addr))
#define SCB_VTOR REG(0xE000ED08u)
#define SCB_CPACR REG(0xE000ED88u)
#define SCB_NSACR REG(0xE000ED8Cu)
#define SCB_CFSR REG(0xE000ED28u)
#define SCB_HFSR REG(0xE000ED2Cu)
#define SCB_MMFAR REG(0xE000ED34u)
#define SCB_BFAR REG(0xE000ED38u)

extern uint32_t __data_load, __data_start, __data_end;
extern uint32_t __bss_start, __bss_end, __sram_bss_start, __sram_bss_end;
extern uint32_t __stack_top;

extern int main(void);
extern void initialise_monitor_handles(void);

void Reset_Handler(void);
void Fault_Handler(void);
void ethosu_tvm_report_fault(const uint32_t *frame, uint32_t exc_return);
void NPU_IRQHandler(void) __attribute__((weak, alias("Fault_Handler")));

#define NPU_IRQ 56

/* -nostartfiles drops crti/crtn; newlib's exit path still refers to these. */
void _init(void) {}
void _fini(void) {}

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used)) const vector_t ethosu_tvm_vectors[16 + NPU_IRQ + 1] = {
    (vector_t)&__stack_top, /* initial MSP */
    Reset_Handler,
    Fault_Handler, /* NMI */
    Fault_Handler, /* HardFault */
    Fault_Handler, /* MemManage */
    Fault_Handler, /* BusFault */
    Fault_Handler, /* UsageFault */
    Fault_Handler, /* SecureFault */
    0, 0, 0,
    Fault_Handler, /* SVCall */
    Fault_Handler, /* DebugMonitor */
    0,
    Fault_Handler, /* PendSV */
    Fault_Handler, /* SysTick */
    [16 ... 16 + NPU_IRQ - 1] = Fault_Handler, /* external interrupts; none but the NPU's is enabled */
    [16 + NPU_IRQ] = NPU_IRQHandler,
};

static void fill_words(uint32_t *start, uint32_t *end, uint32_t value) {
  for (uint32_t *p = start; p < end; ++p) *p = value;
}

void Reset_Handler(void) {
  SCB_VTOR = (uint32_t)ethosu_tvm_vectors;
  SCB_CPACR |= 0xFu << 20; /* CP10/CP11 full access: FPU and MVE */
  SCB_NSACR |= 3u << 10;
  __asm volatile("dsb\n\tisb" ::: "memory");

  const uint32_t *src = &__data_load;
  for (uint32_t *dst = &__data_start; dst < &__data_end;) *dst++ = *src++;
  fill_words(&__bss_start, &__bss_end, 0);
  fill_words(&__sram_bss_start, &__sram_bss_end, 0);

  initialise_monitor_handles();
  exit(main()); /* newlib flushes stdio, then SYS_EXIT_EXTENDED: QEMU's exit status is main's return value */
}

/* ---- integer-only fault path: direct semihosting calls, no stdio, no FPU ---- */

static uint32_t semihost(uint32_t op, const void *arg) {
  register uint32_t r0 __asm("r0") = op;
  register const void *r1 __asm("r1") = arg;
  __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

static char *put_str(char *out, const char *s) {
  while (*s) *out++ = *s++;
  return out;
}

static char *put_hex(char *out, uint32_t value) {
  for (int shift = 28; shift >= 0; shift -= 4) *out++ = "0123456789abcdef"[(value >> shift) & 0xFu];
  return out;
}

__attribute__((noreturn, used)) void ethosu_tvm_report_fault(const uint32_t *frame, uint32_t exc_return) {
  uint32_t ipsr;
  __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  char text[160], *p = text;
  p = put_str(p, "\nethosu_tvm fault: exception=");
  p = put_hex(p, ipsr & 0x1FFu);
  p = put_str(p, " HFSR=");
  p = put_hex(p, SCB_HFSR);
  p = put_str(p, " CFSR=");
  p = put_hex(p, SCB_CFSR);
  p = put_str(p, " MMFAR=");
  p = put_hex(p, SCB_MMFAR);
  p = put_str(p, " BFAR=");
  p = put_hex(p, SCB_BFAR);
  p = put_str(p, " PC=");
  p = put_hex(p, (exc_return & 4u) ? 0u : frame[6]); /* the frame is only read when it is on the MSP */
  p = put_str(p, "\n");
  *p = 0;
  semihost(0x04u, text); /* SYS_WRITE0 */
  const uint32_t block[2] = {0x20026u, ETHOSU_TVM_HARDFAULT_EXIT}; /* ADP_Stopped_ApplicationExit, code */
  for (;;) semihost(0x20u, block); /* SYS_EXIT_EXTENDED */
}

__attribute__((naked)) void Fault_Handler(void) {
  __asm volatile(
      "mrs r0, msp\n\t"
      "mov r1, lr\n\t"
      "b ethosu_tvm_report_fault\n\t");
}
