# Finds third-party dependencies in the one order that works:
#  1. Protobuf and gRPC (Debian) BEFORE torch: torch's config otherwise defines an empty
#     protobuf::libprotobuf and every protobuf symbol is undefined at link time.
#  2. CUDA (optional, MYOPS_WITH_CUDA), with TORCH_CUDA_ARCH_LIST preset so torch never
#     probes for a GPU (there is none on build machines; nvcc 13 rejects its fallback).
#  3. Torch, from the Python wheel: pass -DCMAKE_PREFIX_PATH=$(python -c 'import torch.utils;
#     print(torch.utils.cmake_prefix_path)'). Link it PRIVATE only (its include dirs carry an
#     old protobuf copy that breaks Debian-generated .pb.h files).
if(MYOPS_BUILD_SERVER)
  find_package(Protobuf REQUIRED)
  find_package(gRPC CONFIG REQUIRED)
  find_package(absl CONFIG REQUIRED)
endif()
if(NOT MYOPS_BUILD_OPS)
  return()  # proto/ + client/ only: no CUDA, no torch.
endif()

set(MYOPS_CUDA OFF)
if(NOT MYOPS_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MYOPS_CUDA ON)
  elseif(MYOPS_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MYOPS_WITH_CUDA=ON but no nvcc was found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()
if(MYOPS_CUDA)
  # Default 9.0+PTX: machine code for sm_90 (H100/H200) plus compute_90 PTX, which the
  # driver compiles at load time for any newer GPU (without it those fail with "no kernel
  # image is available"). Add others with -DTORCH_CUDA_ARCH_LIST or the environment
  # variable, e.g. "8.0;9.0+PTX" for A100 too (each entry adds one nvcc pass).
  set(_myops_default_archs "9.0+PTX")
  if(TORCH_CUDA_ARCH_LIST STREQUAL "8.0;9.0" AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    unset(TORCH_CUDA_ARCH_LIST CACHE)  # the former default: trees configured with it move on
  endif()
  if(NOT DEFINED TORCH_CUDA_ARCH_LIST)
    if(DEFINED ENV{TORCH_CUDA_ARCH_LIST})
      set(TORCH_CUDA_ARCH_LIST "$ENV{TORCH_CUDA_ARCH_LIST}")
    else()
      set(TORCH_CUDA_ARCH_LIST "${_myops_default_archs}")
    endif()
  endif()
  set(TORCH_CUDA_ARCH_LIST "${TORCH_CUDA_ARCH_LIST}" CACHE STRING "CUDA archs for torch" FORCE)
  set(ENV{TORCH_CUDA_ARCH_LIST} "${TORCH_CUDA_ARCH_LIST}")
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_ARCHITECTURES OFF)  # torch adds -gencode flags from TORCH_CUDA_ARCH_LIST
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()

# The PyPI wheel is a CUDA build: its config insists on a CUDA toolkit unless torch::cudart
# already exists (public/cuda.cmake returns early then). A CPU-only build links no torch
# CUDA library, so an empty target lets it configure on machines without the toolkit.
if(NOT MYOPS_CUDA AND NOT TARGET torch::cudart)
  add_library(torch::cudart INTERFACE IMPORTED)
endif()
find_package(Torch REQUIRED)
# myops_torch_deps: what our torch-facing targets link (PRIVATE everywhere, so torch's
# include dirs never reach protobuf-facing code). A CPU-only build links libtorch_cpu and
# libc10 alone: the wheel's libtorch.so pulls in libtorch_cuda.so and the CUDA math
# libraries (gigabytes), which a CPU deployment never uses.
add_library(myops_torch_deps INTERFACE)
if(MYOPS_CUDA)
  target_link_libraries(myops_torch_deps INTERFACE ${TORCH_LIBRARIES})
else()
  find_library(MYOPS_TORCH_CPU_LIBRARY torch_cpu PATHS "${TORCH_INSTALL_PREFIX}/lib" REQUIRED)
  find_library(MYOPS_C10_LIBRARY c10 PATHS "${TORCH_INSTALL_PREFIX}/lib" REQUIRED)
  target_link_libraries(myops_torch_deps INTERFACE ${MYOPS_TORCH_CPU_LIBRARY} ${MYOPS_C10_LIBRARY})
  target_include_directories(myops_torch_deps SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
endif()
message(STATUS "myops: torch ${Torch_VERSION}, CUDA kernels: ${MYOPS_CUDA}")
