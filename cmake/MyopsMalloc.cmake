# Allocator of the executables that move large tensors (server, load generators, CLI).
# tcmalloc keeps freed memory for reuse, so per-request buffers of megabytes do not pay
# for fresh page faults on every request as they do with glibc, which returns large blocks
# to the kernel (bench/README.md has the measurement). Libraries never choose an allocator;
# only executables call myops_link_malloc().
set(MYOPS_MALLOC tcmalloc CACHE STRING "Allocator of myops executables: tcmalloc or system")
set_property(CACHE MYOPS_MALLOC PROPERTY STRINGS tcmalloc system)
if(NOT MYOPS_MALLOC MATCHES "^(tcmalloc|system)$")
  message(FATAL_ERROR "MYOPS_MALLOC is \"${MYOPS_MALLOC}\"; expected tcmalloc or system")
endif()

function(myops_link_malloc target)
  if(MYOPS_MALLOC STREQUAL "tcmalloc")
    find_library(MYOPS_TCMALLOC_LIBRARY tcmalloc_minimal)
    if(NOT MYOPS_TCMALLOC_LIBRARY)
      message(FATAL_ERROR "tcmalloc_minimal not found (Debian: libgoogle-perftools-dev); "
                          "install it or configure with -DMYOPS_MALLOC=system")
    endif()
    target_link_libraries(${target} PRIVATE ${MYOPS_TCMALLOC_LIBRARY})
  endif()
endfunction()
