/* <cub/cub.cuh> for NVRTC (kevo): the toolkit's cub.cuh also pulls in the host-side device
 * algorithms (cub::DeviceReduce and friends), which NVRTC cannot compile. A kernel needs the
 * block-, warp- and thread-level collectives, which are these. */
#pragma once
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_discontinuity.cuh>
#include <cub/block/block_adjacent_difference.cuh>
#include <cub/block/block_shuffle.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cub/warp/warp_load.cuh>
#include <cub/warp/warp_store.cuh>
#include <cub/warp/warp_exchange.cuh>
#include <cub/thread/thread_operators.cuh>
#include <cub/thread/thread_reduce.cuh>
#include <cub/util_ptx.cuh>

/* cub::Sum, cub::Max and cub::Min were removed in CCCL 3 (CUDA 13) in favour of the function
 * objects below; kernels written against CUDA 12 still name them. */
#if CUB_VERSION >= 300000
#include <cuda/functional>
namespace cub {
using Sum = ::cuda::std::plus<>;
using Max = ::cuda::maximum<>;
using Min = ::cuda::minimum<>;
} // namespace cub
#endif
