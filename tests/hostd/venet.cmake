# venet backend tests, label "hostd". Included from tests/hostd/CMakeLists.txt
# (needs hostd_test() and CMOCKA_LIB from there).
#   hostd_venet_frame  venet_sg <-> virtio_net_hdr conversion, unit
#   hostd_venet_tap    the device driven through the library by fakeguest
#                      (fg_dev.c) against a real tap
#   hostd_venet_hostd  the device and the bus events, fakeguest-driven
# The tap tests make a private network namespace themselves and exit 77
# (skipped, not passed) only when /dev/net/tun is absent.
set(VENET_SRC_DIR ${CMAKE_SOURCE_DIR}/userspace/hostd/devices/venet)

add_executable(hostd_venet_frame venet_frame_test.c
               ${VENET_SRC_DIR}/venet_frame.c)
target_include_directories(hostd_venet_frame PRIVATE ${VENET_SRC_DIR})
target_link_libraries(hostd_venet_frame PRIVATE ioq_static ${CMOCKA_LIB})
add_test(NAME hostd_venet_frame COMMAND hostd_venet_frame)
set_tests_properties(hostd_venet_frame PROPERTIES LABELS "hostd" TIMEOUT 120)

hostd_test(hostd_venet_tap hostd_dev_venet venet_tap_test.c fg_dev.c
           fakeguest.c)
target_include_directories(hostd_venet_tap PRIVATE ${VENET_SRC_DIR})
hostd_test(hostd_venet_hostd "hostd_dev_venet;hostd_dev_vbus_test"
           venet_hostd_test.c fakeguest.c)
target_include_directories(hostd_venet_hostd PRIVATE ${VENET_SRC_DIR})
