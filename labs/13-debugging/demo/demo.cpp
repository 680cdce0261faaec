// Lab 13 demo: your five functions of debugging.cu in one program of its own, on inputs you choose
// and can check by eye. The tests run your code in a second process; this program runs it in its
// own, so the tools start on it directly:
//
//   build/13-debugging/13-debugging-demo sum 5                         one function, one size
//   compute-sanitizer --tool memcheck build/13-debugging/13-debugging-demo add 33
//   cuda-gdb --args build/13-debugging/13-debugging-demo matmul 2 3 2
//
// and printf in a kernel prints here. It is built with -G (device code unoptimised, with the
// debug information cuda-gdb needs to stop on a line and print a variable), so it runs slower
// than the tests. `make 13-debugging-demo` runs every function on a few small sizes. Not graded:
// change it as you like to try things.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "debugging.cuh"
#include "kit/cuda_check.cuh"

namespace {

// Outputs start as this byte pattern (NaN as a float, 4294967295 as an unsigned), which no right
// result holds: an element still holding it was never written.
constexpr unsigned char kPoisonByte = 0xFF;

// Device memory for exactly `count` elements, freed when it goes out of scope. Exactly: memcheck
// reports an access past the end of an allocation, and sees none that lands inside a larger one.
// So this program cannot see a write past the end by itself (the tests' guard zones do); run it
// under compute-sanitizer for that.
template <class T>
class Buffer {
 public:
  explicit Buffer(std::size_t count) : count_(count) {
    CUDA_CHECK(cudaMalloc(&data_, count * sizeof(T)));
    CUDA_CHECK(cudaMemset(data_, kPoisonByte, count * sizeof(T)));
  }
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size()) {
    CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~Buffer() { cudaFree(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* data() { return data_; }
  void poison() { CUDA_CHECK(cudaMemset(data_, kPoisonByte, count_ * sizeof(T))); }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    CUDA_CHECK(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_;
};

// Waits for the GPU, so that a kernel's fault and its printf output show up here.
void finish() {
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

// One line per wrong element, the first few; then a summary. Returns whether all were right.
template <class T, class U>
bool compare(const std::vector<T>& got, const std::vector<U>& expected, const char* what) {
  int wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (static_cast<double>(got[i]) == static_cast<double>(expected[i])) continue;
    if (++wrong <= 8) {
      unsigned char bytes[sizeof(T)];
      std::memcpy(bytes, &got[i], sizeof(T));
      bool unwritten = true;
      for (const unsigned char b : bytes) unwritten = unwritten && b == kPoisonByte;
      if (unwritten)
        std::printf("    %s[%zu]: expected %.9g, never written\n", what, i, static_cast<double>(expected[i]));
      else
        std::printf("    %s[%zu]: expected %.9g, got %.9g\n", what, i, static_cast<double>(expected[i]),
                    static_cast<double>(got[i]));
    }
  }
  if (wrong > 8) std::printf("    ... %d wrong in all\n", wrong);
  const bool right = wrong == 0;
  std::printf("    %s: %s (%zu elements)\n", what, right ? "right" : "WRONG", got.size());
  return right;
}

template <class T>
void print_row(const char* label, const std::vector<T>& values, std::size_t first, std::size_t count) {
  std::printf("    %s", label);
  for (std::size_t i = first; i < first + count; ++i) std::printf(" %g", static_cast<double>(values[i]));
  std::printf("\n");
}

bool run_add(int n) {
  std::printf("launch_vector_add, n = %d: a[i] = i, b[i] = 1000, so c[i] = 1000 + i (a read or write past an end\n"
              "  shows only under compute-sanitizer --tool memcheck here, and in the tests' guard zones)\n", n);
  std::vector<float> a(n), b(n, 1000.0f), expected(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    expected[i] = 1000.0f + static_cast<float>(i);
  }
  Buffer<float> d_a(a), d_b(b), d_c(n);
  launch_vector_add(d_a.data(), d_b.data(), d_c.data(), n);
  finish();
  const std::vector<float> c = d_c.download();
  if (n <= 16) print_row("c =", c, 0, n);
  return compare(c, expected, "c");
}

bool run_sum(int n) {
  // 1, 2, ..., n while the sum stays exact in float; beyond, 1 2 3 4 1 2 3 4 ...
  const bool counting = n <= 4096;
  std::printf("launch_reduce_sum, n = %d: the numbers %s\n", n, counting ? "1, 2, ..., n" : "1 2 3 4 1 2 3 4 ...");
  std::vector<float> x(n);
  double expected = 0.0;
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(counting ? i + 1 : 1 + i % 4);
    expected += x[i];
  }
  Buffer<float> d_x(x), d_sum(1);
  launch_reduce_sum(d_x.data(), n, d_sum.data());
  finish();
  const std::vector<float> sum = d_sum.download();
  std::printf("    sum = %.9g (expected %.9g)\n", static_cast<double>(sum[0]), expected);
  return compare(sum, std::vector<double>{expected}, "sum");
}

bool run_histogram(int n, int values) {
  std::printf("launch_histogram, n = %d: byte i is i %% %d, so %d value(s), each about %d times\n", n, values, values,
              n / values);
  std::vector<std::uint8_t> data(n);
  std::vector<unsigned> expected(kHistogramBins, 0u);
  for (int i = 0; i < n; ++i) {
    data[i] = static_cast<std::uint8_t>(i % values);
    ++expected[data[i]];
  }
  Buffer<std::uint8_t> d_data(data);
  Buffer<unsigned> d_bins(kHistogramBins);
  launch_histogram(d_data.data(), n, d_bins.data());
  finish();
  const std::vector<unsigned> bins = d_bins.download();
  for (int v = 0; v < values && v < 8; ++v) std::printf("    bins[%d] = %u (expected %u)\n", v, bins[v], expected[v]);
  return compare(bins, expected, "bins");
}

bool run_matmul(int m, int k, int n) {
  std::printf("launch_tiled_matmul, %dx%d times %dx%d: small whole numbers, so every element is exact\n", m, k, k, n);
  std::vector<float> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(k) * n);
  for (int r = 0; r < m; ++r)
    for (int j = 0; j < k; ++j) a[r * k + j] = static_cast<float>((3 * r + j) % 7 - 3);
  for (int j = 0; j < k; ++j)
    for (int c = 0; c < n; ++c) b[j * n + c] = static_cast<float>((j + 5 * c) % 7 - 3);
  std::vector<double> expected(static_cast<std::size_t>(m) * n, 0.0);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c)
      for (int j = 0; j < k; ++j) expected[r * n + c] += static_cast<double>(a[r * k + j]) * b[j * n + c];
  Buffer<float> d_a(a), d_b(b), d_c(static_cast<std::size_t>(m) * n);
  launch_tiled_matmul(d_a.data(), d_b.data(), d_c.data(), m, k, n);
  finish();
  const std::vector<float> c = d_c.download();
  if (m <= 8 && k <= 8 && n <= 8) {
    for (int r = 0; r < m; ++r) print_row(r == 0 ? "A =" : "   ", a, static_cast<std::size_t>(r) * k, k);
    for (int j = 0; j < k; ++j) print_row(j == 0 ? "B =" : "   ", b, static_cast<std::size_t>(j) * n, n);
    for (int r = 0; r < m; ++r) print_row(r == 0 ? "C =" : "   ", c, static_cast<std::size_t>(r) * n, n);
  }
  return compare(c, expected, "C");
}

bool run_transpose(int rows, int cols, int launches) {
  std::printf("launch_transpose_tiled, %dx%d, %d launch(es): in(r, c) = 1000 r + c, so out(c, r) = 1000 r + c\n",
              rows, cols, launches);
  std::vector<float> in(static_cast<std::size_t>(rows) * cols), expected(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      in[static_cast<std::size_t>(r) * cols + c] = 1000.0f * static_cast<float>(r) + static_cast<float>(c);
      expected[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
    }
  Buffer<float> d_in(in), d_out(in.size());
  bool right = true;
  for (int launch = 1; launch <= launches; ++launch) {
    d_out.poison();
    launch_transpose_tiled(d_in.data(), d_out.data(), rows, cols);
    finish();
    const std::vector<float> out = d_out.download();
    if (rows <= 8 && cols <= 8)
      for (int c = 0; c < cols; ++c) print_row(c == 0 ? "out =" : "     ", out, static_cast<std::size_t>(c) * rows, rows);
    std::printf("  launch %d:\n", launch);
    right = compare(out, expected, "out") && right;
  }
  return right;
}

int usage() {
  std::fprintf(stderr,
               "usage: 13-debugging-demo [function sizes...]\n"
               "  add N                   bug 1: vector add of N elements\n"
               "  sum N                   bug 2: the sum of N numbers\n"
               "  histogram N [V]         bug 3: N bytes of V values (default 1)\n"
               "  matmul M K N            bug 4: an MxK matrix times a KxN one\n"
               "  transpose R C [L]       bug 5: an RxC matrix, launched L times (default 1)\n"
               "With no function: each of them on a few small sizes.\n");
  return 2;
}

int number(const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1 || value > (1L << 30)) {
    std::fprintf(stderr, "'%s' is not a size from 1 to 2^30\n", text);
    std::exit(2);
  }
  return static_cast<int>(value);
}

// Every function on a few small sizes; a summary at the end. Wrong results are what this lab
// starts from, so they are reported, not an error.
void run_all() {
  std::vector<bool> runs;
  for (int n : {1, 5, 33}) runs.push_back(run_add(n));
  for (int n : {1, 4, 5, 6, 7, 8}) runs.push_back(run_sum(n));
  runs.push_back(run_histogram(1, 1));
  runs.push_back(run_histogram(32, 1));
  runs.push_back(run_histogram(1000, 3));
  runs.push_back(run_matmul(1, 1, 1));
  runs.push_back(run_matmul(2, 2, 2));
  runs.push_back(run_matmul(2, 3, 2));
  runs.push_back(run_transpose(3, 5, 1));
  runs.push_back(run_transpose(1000, 1000, 3));
  int right = 0;
  for (const bool run : runs) right += run ? 1 : 0;
  std::printf("\n%d of %zu runs right. One function and size at a time: 13-debugging-demo <function> <sizes>\n", right,
              runs.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // `make 13-debugging-demo` passes the lab's demo folder, as for every lab's demo: nothing is written there.
  struct stat info{};
  if (!args.empty() && stat(args[0].c_str(), &info) == 0 && S_ISDIR(info.st_mode)) args.erase(args.begin());
  try {
    bool right = true;
    if (args.empty()) {
      run_all();
    } else if (args[0] == "add" && args.size() == 2) {
      right = run_add(number(args[1].c_str()));
    } else if (args[0] == "sum" && args.size() == 2) {
      right = run_sum(number(args[1].c_str()));
    } else if (args[0] == "histogram" && (args.size() == 2 || args.size() == 3)) {
      const int values = args.size() == 3 ? number(args[2].c_str()) : 1;
      if (values > kHistogramBins) return usage();
      right = run_histogram(number(args[1].c_str()), values);
    } else if (args[0] == "matmul" && args.size() == 4) {
      right = run_matmul(number(args[1].c_str()), number(args[2].c_str()), number(args[3].c_str()));
    } else if (args[0] == "transpose" && (args.size() == 3 || args.size() == 4)) {
      right = run_transpose(number(args[1].c_str()), number(args[2].c_str()),
                            args.size() == 4 ? number(args[3].c_str()) : 1);
    } else {
      return usage();
    }
    return right ? 0 : 1;
  } catch (const std::exception& error) {
    std::printf("error: %s\n", error.what());
    return 1;
  }
}
