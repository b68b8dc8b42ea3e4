# venet backend (virtual-ethernet) tests, label "hostd". Included from
# tests/hostd/CMakeLists.txt (needs CMOCKA_LIB from there).
#   hostd_venet_frame  venet_sg <-> virtio_net_hdr conversion, unit
#   hostd_venet_tap    the device on a stand-in host (venet_harness.c
#                      implements device.h, so it links the venet sources,
#                      not hostd_objects) against a real tap
#   hostd_venet_hostd  the device inside hostd_objects, fakeguest-driven
# The tap tests make a private network namespace themselves and exit 77
# (skipped, not passed) only when /dev/net/tun is absent.
set(VENET_SRC_DIR ${CMAKE_SOURCE_DIR}/userspace/hostd/devices/venet)
set(HOSTD_INC_DIR ${CMAKE_SOURCE_DIR}/userspace/hostd/include)

add_executable(hostd_venet_frame venet_frame_test.c
               ${VENET_SRC_DIR}/venet_frame.c)
target_include_directories(hostd_venet_frame PRIVATE ${VENET_SRC_DIR})
target_link_libraries(hostd_venet_frame PRIVATE ioq_static ${CMOCKA_LIB})

add_executable(hostd_venet_tap venet_tap_test.c venet_harness.c
               ${VENET_SRC_DIR}/venet_dev.c ${VENET_SRC_DIR}/venet_frame.c
               ${VENET_SRC_DIR}/tap.c)
target_include_directories(hostd_venet_tap PRIVATE ${VENET_SRC_DIR} ${HOSTD_INC_DIR})
target_compile_definitions(hostd_venet_tap PRIVATE _GNU_SOURCE)
target_link_libraries(hostd_venet_tap PRIVATE ioq_static ${CMOCKA_LIB})

add_executable(hostd_venet_hostd venet_hostd_test.c fakeguest.c)
target_link_libraries(hostd_venet_hostd PRIVATE hostd_objects ${CMOCKA_LIB})

foreach(t hostd_venet_frame hostd_venet_tap hostd_venet_hostd)
  add_test(NAME ${t} COMMAND ${t})
  set_tests_properties(${t} PROPERTIES LABELS "hostd" TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endforeach()
