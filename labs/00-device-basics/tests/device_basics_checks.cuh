// Lab 00 checks shared by the public and the hidden tests. The trusted answers come from the
// CUDA runtime, asked here by the tests' own process (the judge), never by your code: the same
// device, and the same kernels (device_basics.cuh compiles them into both programs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "device_basics.cuh"
#include "kit/kit.cuh"

// How a failure message shows a place (the guard check prints what it found past the end).
inline std::ostream& operator<<(std::ostream& out, const ThreadPlace& place) {
  return out << "{block " << place.block << ", warp " << place.warp << ", lane " << place.lane << ", sm "
             << place.sm << "}";
}

namespace device_basics_checks {

inline const std::string kLookAtFacts = "query_device in device_basics.cu";
inline const std::string kLookAtPlaces = "record_places_kernel and record_places in device_basics.cu";
inline const std::string kLookAtGuard =
    "the bounds check in record_places_kernel: a thread whose index is count or more must not write";
inline const std::string kLookAtTiming = "time_kernel_ms in device_basics.cu";
inline const std::string kLookAtKernelFacts = "kernel_facts in device_basics.cu";
inline const std::string kLookAtSweep = "occupancy_sweep in device_basics.cu";
inline const std::string kLookAtChoice = "choose_block_size in device_basics.cu";

struct NamedKernel {
  LabKernel kernel;
  const char* name;
};
inline const std::vector<NamedKernel> kLabKernels = {{LabKernel::kScale, "kScale"},
                                                     {LabKernel::kManyRegisters, "kManyRegisters"},
                                                     {LabKernel::kSpilling, "kSpilling"},
                                                     {LabKernel::kSharedTile, "kSharedTile"},
                                                     {LabKernel::kSpin, "kSpin"}};

// One field of a struct the student returned, against the runtime's value.
template <class T>
bool expect_field(const char* field, const T& got, const T& expected, const std::string& input,
                  const std::string& look_at) {
  CHECK_MESSAGE(got == expected, input << ": " << field << " is " << got << ", the CUDA runtime says " << expected
                                       << ".\nLook at: " << look_at);
  return got == expected;
}

// ---- Part 1: the device, as the runtime tells the judge ----

inline int attribute(cudaDeviceAttr which, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, which, device));
  return value;
}

// The facts of `device`, asked attribute by attribute where an attribute exists: another road
// to the same numbers than the one the handout suggests.
inline DeviceFacts runtime_facts(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceFacts facts{};
  std::snprintf(facts.name, sizeof(facts.name), "%s", prop.name);
  facts.compute_major = attribute(cudaDevAttrComputeCapabilityMajor, device);
  facts.compute_minor = attribute(cudaDevAttrComputeCapabilityMinor, device);
  facts.sm_count = attribute(cudaDevAttrMultiProcessorCount, device);
  facts.warp_size = attribute(cudaDevAttrWarpSize, device);
  facts.max_threads_per_block = attribute(cudaDevAttrMaxThreadsPerBlock, device);
  facts.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device);
  facts.max_blocks_per_sm = attribute(cudaDevAttrMaxBlocksPerMultiprocessor, device);
  facts.max_warps_per_sm = facts.max_threads_per_sm / facts.warp_size;
  facts.registers_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor, device);
  facts.registers_per_block = attribute(cudaDevAttrMaxRegistersPerBlock, device);
  facts.shared_bytes_per_sm = static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  facts.shared_bytes_per_block = static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlock, device));
  facts.shared_bytes_per_block_optin =
      static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  facts.shared_bytes_reserved_per_block =
      static_cast<std::size_t>(attribute(cudaDevAttrReservedSharedMemoryPerBlock, device));
  facts.l2_bytes = static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize, device));
  facts.global_bytes = prop.totalGlobalMem;
  facts.copy_engines = attribute(cudaDevAttrAsyncEngineCount, device);
  facts.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  facts.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  const double transfers_per_s = 2.0 * 1e3 * facts.memory_clock_khz;  // two a clock, the clock in kHz
  facts.peak_bandwidth_gb_s = transfers_per_s * facts.memory_bus_bits / 8.0 / 1e9;
  return facts;
}

// The properties query_device copies from the runtime, field by field.
inline void check_properties(int device) {
  const DeviceFacts got = query_device(device);
  const DeviceFacts want = runtime_facts(device);
  const std::string input = "GPU " + std::to_string(device);
  const std::string got_name(got.name, strnlen(got.name, sizeof(got.name)));
  CHECK_MESSAGE(got_name == std::string(want.name),
                input << ": name is \"" << got_name << "\", the CUDA runtime says \"" << want.name
                      << "\".\nLook at: " << kLookAtFacts);
  expect_field("compute_major", got.compute_major, want.compute_major, input, kLookAtFacts);
  expect_field("compute_minor", got.compute_minor, want.compute_minor, input, kLookAtFacts);
  expect_field("sm_count", got.sm_count, want.sm_count, input, kLookAtFacts);
  expect_field("warp_size", got.warp_size, want.warp_size, input, kLookAtFacts);
  expect_field("max_threads_per_block", got.max_threads_per_block, want.max_threads_per_block, input, kLookAtFacts);
  expect_field("max_threads_per_sm", got.max_threads_per_sm, want.max_threads_per_sm, input, kLookAtFacts);
  expect_field("max_blocks_per_sm", got.max_blocks_per_sm, want.max_blocks_per_sm, input, kLookAtFacts);
  expect_field("registers_per_sm", got.registers_per_sm, want.registers_per_sm, input, kLookAtFacts);
  expect_field("registers_per_block", got.registers_per_block, want.registers_per_block, input, kLookAtFacts);
  expect_field("shared_bytes_per_sm", got.shared_bytes_per_sm, want.shared_bytes_per_sm, input, kLookAtFacts);
  expect_field("shared_bytes_per_block", got.shared_bytes_per_block, want.shared_bytes_per_block, input,
               kLookAtFacts);
  expect_field("shared_bytes_per_block_optin", got.shared_bytes_per_block_optin, want.shared_bytes_per_block_optin,
               input, kLookAtFacts);
  expect_field("shared_bytes_reserved_per_block", got.shared_bytes_reserved_per_block,
               want.shared_bytes_reserved_per_block, input, kLookAtFacts);
  expect_field("l2_bytes", got.l2_bytes, want.l2_bytes, input, kLookAtFacts);
  expect_field("global_bytes", got.global_bytes, want.global_bytes, input, kLookAtFacts);
  expect_field("copy_engines", got.copy_engines, want.copy_engines, input, kLookAtFacts);
  expect_field("memory_clock_khz", got.memory_clock_khz, want.memory_clock_khz, input, kLookAtFacts);
  expect_field("memory_bus_bits", got.memory_bus_bits, want.memory_bus_bits, input, kLookAtFacts);
}

// The two figures query_device works out. The bandwidth is a product of a few doubles, so any
// order of the multiplications lands within a few units in the last place: 1e-12 relative.
inline void check_worked_out(int device) {
  const DeviceFacts got = query_device(device);
  const DeviceFacts want = runtime_facts(device);
  const std::string input = "GPU " + std::to_string(device);
  expect_field("max_warps_per_sm", got.max_warps_per_sm, want.max_warps_per_sm, input,
               kLookAtFacts + ": the threads one SM holds, in warps");
  const double error = got.peak_bandwidth_gb_s - want.peak_bandwidth_gb_s;
  CHECK_MESSAGE(std::fabs(error) <= 1e-12 * want.peak_bandwidth_gb_s,
                input << ": peak_bandwidth_gb_s is " << got.peak_bandwidth_gb_s << ", expected "
                      << want.peak_bandwidth_gb_s << " GB/s: 2 transfers per clock x " << want.memory_clock_khz
                      << " kHz x " << want.memory_bus_bits << " bits / 8, in 10^9 bytes per second.\nLook at: "
                      << kLookAtFacts);
}

// ---- Part 2: where the threads ran ----

// The number of SM identifiers (%nsmid): every %smid is below it.
static __global__ void nsmid_kernel(int* out) {
  unsigned int count;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(count));
  *out = static_cast<int>(count);
}

inline int sm_id_limit() {
  kit::DeviceBuffer<int> d_count(1);
  nsmid_kernel<<<1, 1>>>(d_count.data());
  CUDA_CHECK_LAUNCH();
  return d_count.download()[0];
}

// The places of a launch of count threads in blocks of threads_per_block, as record_places
// wrote them: block, warp and lane exactly, and an SM that exists, the same for a whole block.
inline void expect_places(const std::vector<ThreadPlace>& got, int threads_per_block, const std::string& input) {
  const std::size_t count = got.size();
  std::vector<int> blocks(count), warps(count), lanes(count), want_blocks(count), want_warps(count),
      want_lanes(count);
  for (std::size_t i = 0; i < count; ++i) {
    blocks[i] = got[i].block;
    warps[i] = got[i].warp;
    lanes[i] = got[i].lane;
    want_blocks[i] = static_cast<int>(i) / threads_per_block;
    want_warps[i] = static_cast<int>(i) % threads_per_block / 32;
    want_lanes[i] = static_cast<int>(i) % threads_per_block % 32;
  }
  kit::expect_equal(blocks, want_blocks, {input + ": the block of each place", kLookAtPlaces});
  kit::expect_equal(warps, want_warps,
                    {input + ": the warp of each place, within its block (threads 0-31 of a block are warp 0)",
                     kLookAtPlaces});
  kit::expect_equal(lanes, want_lanes, {input + ": the lane of each place, within its warp", kLookAtPlaces});

  const int limit = sm_id_limit();
  std::size_t outside = 0, split = 0;
  std::string first;
  for (std::size_t i = 0; i < count; ++i) {
    const bool valid = got[i].sm >= 0 && got[i].sm < limit;
    if (!valid && outside++ == 0) first = "place " + std::to_string(i) + " says SM " + std::to_string(got[i].sm);
    const std::size_t block_start = i / threads_per_block * threads_per_block;
    if (valid && got[i].sm != got[block_start].sm && split++ == 0 && first.empty())
      first = "place " + std::to_string(i) + " says SM " + std::to_string(got[i].sm) + ", place " +
              std::to_string(block_start) + " of the same block SM " + std::to_string(got[block_start].sm);
  }
  CHECK_MESSAGE(outside == 0, input << ": " << outside << " of " << count << " places name an SM that does not "
                                    << "exist (identifiers are below " << limit << "): " << first
                                    << ". Use sm_id() from device_basics.cuh.\nLook at: " << kLookAtPlaces);
  CHECK_MESSAGE(split == 0, input << ": " << split << " places name another SM than the first thread of their "
                                  << "block, but a block runs on one SM from start to end: " << first
                                  << ".\nLook at: " << kLookAtPlaces);
}

// record_places over count threads, with a poisoned guard zone after the places.
inline void check_places(int count, int threads_per_block, const std::string& input) {
  kit::GuardedBuffer<ThreadPlace> d_places(static_cast<std::size_t>(count),
                                           static_cast<std::size_t>(kit::param_int("guard_places")));
  record_places(d_places.data(), count, threads_per_block, -1);
  CUDA_CHECK(cudaDeviceSynchronize());
  expect_places(d_places.download(), threads_per_block, input);
  d_places.expect_guard_untouched({input, kLookAtGuard});
}

// record_places on places of exactly count elements, for compute-sanitizer's memcheck.
inline void check_places_exact(int count, int threads_per_block, const std::string& input) {
  kit::DeviceBuffer<ThreadPlace> d_places(static_cast<std::size_t>(count));
  d_places.poison();
  record_places(d_places.data(), count, threads_per_block, -1);
  CUDA_CHECK(cudaDeviceSynchronize());
  expect_places(d_places.download(), threads_per_block, input);
}

// ---- Part 3: timing ----

// What time_kernel_ms returned, and how often it launched the kernel.
struct TimedCall {
  float ms = 0.0f;
  unsigned long long launches = 0;
};

inline TimedCall call_time_kernel_ms(const KernelLaunch& launch, float* d_data, int warmup, int repeats) {
  kit::DeviceBuffer<unsigned long long> d_launches(1);
  CUDA_CHECK(cudaMemset(d_launches.data(), 0, d_launches.bytes()));
  TimedCall call;
  call.ms = time_kernel_ms(launch, d_data, d_launches.data(), warmup, repeats);
  call.launches = d_launches.download()[0];
  return call;
}

inline std::string describe(const KernelLaunch& launch, int warmup, int repeats) {
  const std::string kernel = kLabKernels.at(static_cast<std::size_t>(launch.kernel)).name;
  return kernel + " in " + std::to_string(launch.blocks) + " blocks of " + std::to_string(launch.threads_per_block) +
         " threads (n = " + std::to_string(launch.n) + ", rounds = " + std::to_string(launch.rounds) + "), " +
         std::to_string(warmup) + " warm-up and " + std::to_string(repeats) + " timed launches";
}

inline bool expect_launch_count(const TimedCall& call, int warmup, int repeats, const std::string& input) {
  const unsigned long long want = static_cast<unsigned long long>(warmup + repeats);
  CHECK_MESSAGE(call.launches == want,
                input << ": the kernel was launched " << call.launches << " times; time_kernel_ms must launch it "
                      << want << " times (" << warmup << " warm-up, then " << repeats
                      << " timed).\nLook at: " << kLookAtTiming);
  return call.launches == want;
}

// The time of one launch within the lab's tolerance of `expected_ms` (lab.toml says why it is enough).
inline bool expect_time(float got_ms, double expected_ms, const std::string& expected_why, const std::string& input) {
  const double allowed = kit::param_double("time_abs_tol_ms") + kit::param_double("time_rel_tol") * expected_ms;
  const bool ok = std::fabs(static_cast<double>(got_ms) - expected_ms) <= allowed;  // NaN fails too
  CHECK_MESSAGE(ok, input << ": time_kernel_ms returned " << got_ms << " ms for one launch; " << expected_why << " "
                          << expected_ms << " ms (within " << allowed << " ms). Is it milliseconds, for one launch, "
                          << "timed after the warm-up, once the kernels have run?\nLook at: " << kLookAtTiming);
  return ok;
}

// kSpin, waiting spin_us per launch: time_kernel_ms must count the launches and come within
// the tolerance of the wait itself, which the kernel's own clock fixes.
inline void check_spin_timing(int spin_us, int blocks, int warmup, int repeats) {
  const KernelLaunch launch{LabKernel::kSpin, blocks, 32, 0, spin_us};
  kit::DeviceBuffer<float> d_data(1);
  const std::string input = describe(launch, warmup, repeats);
  const TimedCall call = call_time_kernel_ms(launch, d_data.data(), warmup, repeats);
  expect_launch_count(call, warmup, repeats, input);
  expect_time(call.ms, spin_us / 1000.0, "each launch waits", input);
}

// ---- Part 4: kernels and occupancy, as the runtime tells the judge of its own copy ----

inline cudaFuncAttributes runtime_attributes(LabKernel kernel) {
  cudaFuncAttributes compiled{};
  CUDA_CHECK(cudaFuncGetAttributes(&compiled, lab_kernel(kernel)));
  return compiled;
}

inline void check_kernel_facts(const NamedKernel& named) {
  const KernelFacts got = kernel_facts(named.kernel);
  const cudaFuncAttributes want = runtime_attributes(named.kernel);
  const std::string input = std::string("kernel ") + named.name;
  expect_field("registers_per_thread", got.registers_per_thread, want.numRegs, input, kLookAtKernelFacts);
  expect_field("local_bytes_per_thread", got.local_bytes_per_thread, static_cast<int>(want.localSizeBytes), input,
               kLookAtKernelFacts);
  expect_field("static_shared_bytes", got.static_shared_bytes, static_cast<int>(want.sharedSizeBytes), input,
               kLookAtKernelFacts);
  expect_field("max_threads_per_block", got.max_threads_per_block, want.maxThreadsPerBlock, input,
               kLookAtKernelFacts);
  expect_field("binary_arch", got.binary_arch, want.binaryVersion, input, kLookAtKernelFacts);
  expect_field("ptx_arch", got.ptx_arch, want.ptxVersion, input, kLookAtKernelFacts);
}

// The block sizes of `sizes` that `kernel` can be launched with.
inline std::vector<int> allowed_block_sizes(LabKernel kernel, const std::vector<std::int64_t>& sizes) {
  const int most = runtime_attributes(kernel).maxThreadsPerBlock;
  std::vector<int> allowed;
  for (const std::int64_t size : sizes)
    if (size >= 1 && size <= most) allowed.push_back(static_cast<int>(size));
  return allowed;
}

// The dynamic shared memory sizes of `sizes` that a block of `kernel` may have beside its own,
// without asking for more (cudaFuncSetAttribute): both what the kernel's attribute allows and
// what is left of the device's default block limit (48 KiB) after the kernel's static arrays.
inline std::vector<std::size_t> allowed_dynamic_shared(LabKernel kernel, const std::vector<std::int64_t>& sizes) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const cudaFuncAttributes attributes = runtime_attributes(kernel);
  const long long left = static_cast<long long>(attribute(cudaDevAttrMaxSharedMemoryPerBlock, device)) -
                         static_cast<long long>(attributes.sharedSizeBytes);
  const long long most = std::min(static_cast<long long>(attributes.maxDynamicSharedSizeBytes), left);
  std::vector<std::size_t> allowed;
  for (const std::int64_t size : sizes)
    if (size >= 0 && size <= most) allowed.push_back(static_cast<std::size_t>(size));
  return allowed;
}

// occupancy_sweep of one kernel at `block_sizes`, against the runtime's answer for each.
inline void check_sweep(const NamedKernel& named, std::size_t dynamic_shared_bytes,
                        const std::vector<int>& block_sizes) {
  const int count = static_cast<int>(block_sizes.size());
  std::vector<Occupancy> rows = kit::poisoned_vector<Occupancy>(block_sizes.size());
  occupancy_sweep(named.kernel, dynamic_shared_bytes, block_sizes.data(), rows.data(), count);

  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const int warp = attribute(cudaDevAttrWarpSize, device);
  const int max_warps = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device) / warp;
  std::vector<int> blocks(count), warps(count), want_blocks(count), want_warps(count);
  std::vector<float> occupancy(count);
  std::vector<double> want_occupancy(count);
  for (int i = 0; i < count; ++i) {
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&want_blocks[i], lab_kernel(named.kernel),
                                                             block_sizes[i], dynamic_shared_bytes));
    want_warps[i] = want_blocks[i] * ((block_sizes[i] + warp - 1) / warp);
    want_occupancy[i] = static_cast<double>(want_warps[i]) / max_warps;
    blocks[i] = rows[i].blocks_per_sm;
    warps[i] = rows[i].warps_per_sm;
    occupancy[i] = rows[i].occupancy;
  }
  std::string sizes;
  for (int i = 0; i < count && i < 12; ++i) sizes += (i ? ", " : "") + std::to_string(block_sizes[i]);
  if (count > 12) sizes += ", ...";
  const std::string input = std::string("kernel ") + named.name + " with " + std::to_string(dynamic_shared_bytes) +
                            " bytes of dynamic shared memory, rows for block sizes " + sizes;
  kit::expect_equal(blocks, want_blocks, {input + ": blocks_per_sm", kLookAtSweep});
  kit::expect_equal(warps, want_warps,
                    {input + ": warps_per_sm (a block of 33 threads takes 2 whole warps)", kLookAtSweep});
  // A float quotient of two small integers, against the double one: within float rounding.
  kit::expect_close(occupancy, want_occupancy, {1e-6, 1e-6},
                    {input + ": occupancy, resident warps over the SM's most warps", kLookAtSweep});
}

inline void check_choice(const NamedKernel& named, std::size_t dynamic_shared_bytes, int block_size_limit) {
  const BlockSizeChoice got = choose_block_size(named.kernel, dynamic_shared_bytes, block_size_limit);
  BlockSizeChoice want{};
  CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&want.min_grid_size, &want.block_size, lab_kernel(named.kernel),
                                                dynamic_shared_bytes, block_size_limit));
  const std::string input = std::string("kernel ") + named.name + " with " + std::to_string(dynamic_shared_bytes) +
                            " bytes of dynamic shared memory and block_size_limit " + std::to_string(block_size_limit);
  expect_field("block_size", got.block_size, want.block_size, input, kLookAtChoice);
  expect_field("min_grid_size", got.min_grid_size, want.min_grid_size, input, kLookAtChoice);
}

}  // namespace device_basics_checks
