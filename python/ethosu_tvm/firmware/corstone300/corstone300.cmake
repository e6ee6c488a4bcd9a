# corstone300_firmware(NAME SOURCES...): a bare-metal Corstone-300 executable NAME.elf of SOURCES with this folder's
# start-up code and linker script (which places the model's .rodata.tvm and .bss.noinit.tvm), and newlib's
# semihosting (rdimon) for printf and exit; the link map goes beside it as NAME.map.
set(CORSTONE300_DIR ${CMAKE_CURRENT_LIST_DIR})

function(corstone300_firmware name)
  add_executable(${name} ${ARGN} ${CORSTONE300_DIR}/startup.c)
  set_target_properties(${name} PROPERTIES SUFFIX .elf LINK_DEPENDS ${CORSTONE300_DIR}/corstone300.ld)
  target_include_directories(${name} PRIVATE ${CORSTONE300_DIR})
  target_link_options(${name} PRIVATE -T${CORSTONE300_DIR}/corstone300.ld --specs=rdimon.specs -nostartfiles
                      -Wl,--gc-sections -Wl,-Map=$<TARGET_FILE_DIR:${name}>/${name}.map)
endfunction()
