// CPU work spread over every core, for the tests' references: remaking a
// gigabyte input from the generator, summing, counting or scanning it, or
// computing rows of a product. The timing cases do this while the grader holds
// the GPU that the whole class waits for, so it must use the whole machine.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <limits>
#include <thread>
#include <vector>

namespace kit {

// How many threads `work` units of work are worth, when a thread pays for its start only from
// `min_work_per_thread` units on: at least 1, at most the hardware's threads and `most`.
inline std::size_t threads_for(double work, double min_work_per_thread,
                               std::size_t most = std::numeric_limits<std::size_t>::max()) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const double worth = std::max(1.0, work / min_work_per_thread);
  const std::size_t wanted = worth >= static_cast<double>(cores) ? cores : static_cast<std::size_t>(worth);
  return std::max<std::size_t>(1, std::min({wanted, cores, most}));
}

// [0, count) cut into `parts` contiguous parts whose sizes differ by at most one: part t is
// [part_begin(count, parts, t), part_begin(count, parts, t + 1)).
inline std::size_t part_begin(std::size_t count, std::size_t parts, std::size_t t) {
  return count / parts * t + std::min(t, count % parts);
}

// Runs part(t) for every t in [0, threads), each on a thread of its own (t = 0 on the calling
// one), and returns when all have finished. part runs on several threads at once, so it may
// write only what belongs to its t. An exception thrown by a part is thrown again here, after
// every thread has ended (an exception left on a thread would end the test program).
template <class Part>
void on_threads(std::size_t threads, const Part& part) {
  std::vector<std::exception_ptr> failures(threads);
  const auto run = [&](std::size_t t) {
    try {
      part(t);
    } catch (...) {
      failures[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads > 0 ? threads - 1 : 0);
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(run, t);
  if (threads > 0) run(0);
  for (auto& thread : pool) thread.join();
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

// Runs task(i) for every i in [0, count) on `threads` threads, each taking the next i not yet
// taken, so that tasks of uneven cost still share out evenly. task may write only what
// belongs to its i.
template <class Task>
void for_each_index(std::size_t count, std::size_t threads, const Task& task) {
  std::atomic<std::size_t> next{0};
  on_threads(std::min(threads, std::max<std::size_t>(count, 1)), [&](std::size_t) {
    for (std::size_t i = next++; i < count; i = next++) task(i);
  });
}

// Runs task(i) for every i in [0, count) on as many threads as `work` units of work (about how
// many multiply-adds, or numbers made, all the tasks take) are worth at `min_work_per_thread`
// units a thread (threads_for), and never more threads than tasks.
template <class Task>
void parallel_for(std::size_t count, double work, double min_work_per_thread, const Task& task) {
  for_each_index(count, threads_for(work, min_work_per_thread, count), task);
}

}  // namespace kit
