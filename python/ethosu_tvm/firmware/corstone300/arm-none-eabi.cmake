# CMake toolchain file: arm-none-eabi-gcc (Debian 12: gcc-arm-none-eabi, libnewlib-arm-none-eabi) for the
# Corstone-300's Cortex-M55 with its FPU and MVE. Use: cmake -DCMAKE_TOOLCHAIN_FILE=<this file> ...
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR cortex-m55)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
# Bare metal: CMake's compiler checks must not try to link a program without start-up code and linker script.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard -O2")
