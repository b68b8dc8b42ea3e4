# vbus-blk host device tests, label "hostd". Included from
# tests/hostd/CMakeLists.txt (needs hostd_test() and CMOCKA_LIB from there).
#   hostd_vbus_blk  the device driven through the library by fakeguest
#                   (fg_dev.c) against a real io_uring and a temporary
#                   backing file in the build tree
hostd_test(hostd_vbus_blk hostd_dev_vbus_blk vbus_blk_test.c fg_dev.c
           fakeguest.c)
