# Uses ccache for C++ and CUDA compiles when it is installed (warm rebuilds with libtorch
# headers drop from minutes to seconds).
find_program(MYOPS_CCACHE ccache)
if(MYOPS_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${MYOPS_CCACHE} CACHE STRING "" FORCE)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${MYOPS_CCACHE} CACHE STRING "" FORCE)
endif()
