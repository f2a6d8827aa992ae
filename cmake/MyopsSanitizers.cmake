# Sanitizer and fuzzing builds, each in a build directory of its own (README "Testing"):
#   MYOPS_SANITIZE=address  ASan + UBSan on every C/C++ translation unit (UBSan aborts on
#                           the first report)
#   MYOPS_SANITIZE=thread   TSan, for the concurrency tests (scripts/sanitize.sh thread)
#   MYOPS_FUZZ=ON           the libFuzzer targets (tests/fuzz/), clang only; implies
#                           address. With MYOPS_SANITIZE=address they share one tree, the
#                           sanitized tree of scripts/env.sh (myops_san_configure) that
#                           scripts/sanitize.sh address and scripts/fuzz.sh both use.
# Sanitized programs must use the system allocator (tcmalloc would bypass ASan's and
# TSan's interceptors), and CUDA is off: nvcc cannot build sanitized host code and there
# is no GPU to test on where these builds run.
set(MYOPS_SANITIZE "" CACHE STRING "Sanitizer build: empty (none), address (ASan+UBSan) or thread")
set_property(CACHE MYOPS_SANITIZE PROPERTY STRINGS "" address thread)
option(MYOPS_FUZZ "Build the libFuzzer targets in tests/fuzz (clang; implies ASan+UBSan)" OFF)

if(NOT MYOPS_SANITIZE MATCHES "^(|address|thread)$")
  message(FATAL_ERROR "MYOPS_SANITIZE is \"${MYOPS_SANITIZE}\"; expected empty, address or thread")
endif()
if(MYOPS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MYOPS_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  if(MYOPS_SANITIZE STREQUAL "thread")
    message(FATAL_ERROR "MYOPS_FUZZ runs under ASan+UBSan; it cannot be combined with TSan")
  endif()
  set(MYOPS_SANITIZE address CACHE STRING "" FORCE)
endif()

if(MYOPS_SANITIZE)
  if(MYOPS_MALLOC STREQUAL "tcmalloc")
    message(FATAL_ERROR "MYOPS_SANITIZE=${MYOPS_SANITIZE} needs -DMYOPS_MALLOC=system: "
                        "tcmalloc replaces the allocator the sanitizer intercepts")
  endif()
  if(MYOPS_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MYOPS_SANITIZE=${MYOPS_SANITIZE} needs -DMYOPS_WITH_CUDA=OFF")
  endif()
  set(MYOPS_WITH_CUDA OFF CACHE STRING "" FORCE)
  if(MYOPS_SANITIZE STREQUAL "address")
    set(_myops_san -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  else()
    set(_myops_san -fsanitize=thread)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_myops_san};-fno-omit-frame-pointer>")
  add_link_options(${_myops_san})
endif()
