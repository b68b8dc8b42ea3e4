# vbus-blk host device tests, label "hostd". Included from
# tests/hostd/CMakeLists.txt (needs hostd_test() and CMOCKA_LIB from there).
#   hostd_vbus_blk  the device driven through the library by fakeguest
#                   (fg_dev.c) against a real io_uring and a temporary
#                   backing file in the build tree
hostd_test(hostd_vbus_blk hostd_dev_vbus_blk vbus_blk_test.c fg_dev.c
           fakeguest.c)
#   hostd_vbus_blk_bench  (not a test) prints the host path's 4 KiB
#                   random-read rate against io_uring alone, same run
get_property(blk_device_libs GLOBAL PROPERTY VBUS_HOSTD_DEVICE_LIBS)
add_executable(hostd_vbus_blk_bench vbus_blk_bench.c fg_dev.c fakeguest.c
               $<TARGET_OBJECTS:hostd_dev_vbus_blk>)
target_link_libraries(hostd_vbus_blk_bench PRIVATE vbus_hostd_daemon
                      ${CMOCKA_LIB} ${blk_device_libs})
