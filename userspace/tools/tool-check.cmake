# Run CMD with ARGS ("|"-separated: a ;-list does not survive add_test and
# -D intact) and check: exit code EXPECT_RC, stdout
# matching EXPECT_OUT, stderr matching EXPECT_ERR, and with JSON=1 that
# stdout parses as JSON (string(JSON) is CMake's own parser: no python or
# jq needed on the machine).
cmake_minimum_required(VERSION 3.19)
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${CMD} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REPLACE "\n" " " out1 "${out}")
string(REPLACE "\n" " " err1 "${err}")
set(bad "")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  string(APPEND bad "exit ${rc}, expected ${EXPECT_RC}; ")
endif()
if(DEFINED EXPECT_OUT AND NOT out1 MATCHES "${EXPECT_OUT}")
  string(APPEND bad "stdout does not match '${EXPECT_OUT}'; ")
endif()
if(DEFINED EXPECT_ERR AND NOT err1 MATCHES "${EXPECT_ERR}")
  string(APPEND bad "stderr does not match '${EXPECT_ERR}'; ")
endif()
if(JSON OR out1 MATCHES "^{")
  string(JSON type ERROR_VARIABLE jerr TYPE "${out}")
  if(NOT jerr STREQUAL "NOTFOUND")
    string(APPEND bad "stdout is not valid JSON: ${jerr}; ")
  endif()
endif()
message("${out}")
message("${err}")
if(bad)
  message(FATAL_ERROR "${CMD}: ${bad}")
endif()
