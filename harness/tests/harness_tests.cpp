// The harness's own tests that need no GPU, so they run in CI on every commit
// (timing_tests.cu holds those that do).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kit/kit.cuh"
#include "kit/matmul_reference.hpp"
#include "kit/picture.hpp"
#include "kit/remote.hpp"

namespace {

kit::detail::MismatchLog log_of(const std::vector<float>& got, const std::vector<double>& expected, double rel) {
  kit::detail::MismatchLog log(expected.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - expected[i]) <= rel * std::fabs(expected[i])))
      log.add(i, kit::is_poison(got[i]), [&] {
        return std::pair{kit::detail::show(expected[i]), kit::detail::show(got[i])};
      });
  return log;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Element (row, col) of A·B and of |A|·|B| as one thread adds it up in double, in order of the inner index.
std::pair<double, double> plain_dot(const kit::MatmulInputs& in, int row, int col) {
  double value = 0.0, magnitude = 0.0;
  for (int p = 0; p < in.k; ++p) {
    const double term = static_cast<double>(in.a[static_cast<std::size_t>(row) * in.k + p]) *
                        in.b[static_cast<std::size_t>(p) * in.n + col];
    value += term;
    magnitude += std::fabs(term);
  }
  return {value, magnitude};
}

// Sets $KIT_SEED for one scope, as the grader does for a whole run (nullptr: unset), and puts back what was there.
class SeedInEnvironment {
 public:
  explicit SeedInEnvironment(const char* seed) {
    if (const char* before = std::getenv("KIT_SEED")) {
      before_ = before;
      had_ = true;
    }
    set(seed);
  }
  ~SeedInEnvironment() { set(had_ ? before_.c_str() : nullptr); }
  SeedInEnvironment(const SeedInEnvironment&) = delete;
  SeedInEnvironment& operator=(const SeedInEnvironment&) = delete;

 private:
  static void set(const char* seed) {
    if (seed != nullptr)
      setenv("KIT_SEED", seed, 1);
    else
      unsetenv("KIT_SEED");
  }
  std::string before_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("harness: device buffers of 2 MiB or more are allocated in whole 2 MiB pages" * KIT_CPU_ONLY) {
  constexpr std::size_t kPage = std::size_t{2} << 20;
  CHECK(kit::detail::in_whole_large_pages(1) == 1);
  CHECK(kit::detail::in_whole_large_pages(kPage - 1) == kPage - 1);  // small buffers keep their size
  CHECK(kit::detail::in_whole_large_pages(kPage) == kPage);
  CHECK(kit::detail::in_whole_large_pages(kPage + 1) == 2 * kPage);
  // lab 05's timing input: 2^28 floats between guards of 1024
  const std::size_t guarded = (std::size_t{1} << 30) + 8192;
  CHECK(kit::detail::in_whole_large_pages(guarded) == (std::size_t{1} << 30) + kPage);
}

TEST_CASE("harness: poison is NaN for floats and an unlikely pattern for integers" * KIT_CPU_ONLY) {
  CHECK(std::isnan(kit::poison_value<float>()));
  CHECK(std::isnan(kit::poison_value<double>()));
  CHECK(kit::poison_value<int>() == static_cast<int>(0xABABABAB));
  CHECK(kit::is_poison(kit::poison_value<float>()));
  CHECK_FALSE(kit::is_poison(std::numeric_limits<float>::quiet_NaN() * 0.0f + 1.0f));
  CHECK_FALSE(kit::is_poison(0.0f));
}

TEST_CASE("harness: a guarded vector keeps its values and ends in the poison" * KIT_CPU_ONLY) {
  const std::vector<float> guarded = kit::with_guard(std::vector<float>{1.0f, 2.0f}, 3);
  REQUIRE(guarded.size() == 5);
  CHECK(guarded[0] == 1.0f);
  CHECK(guarded[1] == 2.0f);
  for (std::size_t i = 2; i < guarded.size(); ++i) CHECK(kit::is_poison(guarded[i]));
  CHECK(kit::with_guard(std::vector<int>{}, 0).empty());
}

TEST_CASE("harness: histogram inputs of one value, and of a few values" * KIT_CPU_ONLY) {
  const std::vector<std::uint8_t> one = kit::one_value_bytes(1000);
  REQUIRE(one.size() == 1000);
  CHECK(std::set<std::uint8_t>(one.begin(), one.end()).size() == 1);
  CHECK(one[0] >= 1);
  CHECK(one[0] <= 254);
  const std::vector<std::uint8_t> few = kit::few_value_bytes(10000, 4);
  REQUIRE(few.size() == 10000);
  CHECK(std::set<std::uint8_t>(few.begin(), few.end()).size() <= 4);
  CHECK(std::set<std::uint8_t>(few.begin(), few.end()).size() >= 2);  // 10000 draws of 4 values (unless two are equal)
  CHECK(kit::few_value_bytes(10000, 4) == few);                        // the case's stream alone decides
}

TEST_CASE("harness: random inputs depend only on the seed and the index" * KIT_CPU_ONLY) {
  const auto a = kit::Rng(7).uniform_floats(1000, -1.0f, 1.0f);
  const auto b = kit::Rng(7).uniform_floats(1000, -1.0f, 1.0f);
  const auto c = kit::Rng(8).uniform_floats(1000, -1.0f, 1.0f);
  CHECK(a == b);
  CHECK(a != c);
  for (float x : a) CHECK((x >= -1.0f && x < 1.0f));
  const auto prefix = kit::Rng(7).uniform_floats(10, -1.0f, 1.0f);
  CHECK(std::vector<float>(a.begin(), a.begin() + 10) == prefix);
  const auto ints = kit::Rng(3).uniform_ints(10000, -2, 2);
  CHECK(*std::min_element(ints.begin(), ints.end()) == -2);
  CHECK(*std::max_element(ints.begin(), ints.end()) == 2);
}

TEST_CASE("harness: one random element made alone equals the same element of the whole input" * KIT_CPU_ONLY) {
  const kit::Rng rng(11);
  const auto floats = rng.uniform_floats(5000, 0.0f, 1.0f);
  const auto ints = rng.uniform_ints(5000, -7, 1000);
  const auto bytes = rng.uniform_bytes(5000, 3, 250);
  for (const std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{2047}, std::size_t{4999}}) {
    CHECK(rng.uniform_float_at(i, 0.0f, 1.0f) == floats[i]);
    CHECK(rng.uniform_int_at(i, -7, 1000) == ints[i]);
    CHECK(rng.uniform_byte_at(i, 3, 250) == bytes[i]);
  }
}

TEST_CASE("harness: sampled positions cover both ends and every part between, and differ from run to run" *
          KIT_CPU_ONLY) {
  const std::size_t size = 1000003;
  const auto positions = kit::sample_positions(size, 4096);
  REQUIRE(positions.size() == 4098);
  CHECK(std::is_sorted(positions.begin(), positions.end()));
  CHECK(positions.front() == 0);
  CHECK(positions.back() == size - 1);
  CHECK(std::set<std::size_t>(positions.begin(), positions.end()).size() > 4000);  // few repeats
  CHECK(kit::sample_positions(size, 4096) != positions);  // from the OS's entropy: not predictable
  for (std::size_t i = 0; i + 1 < positions.size(); ++i)  // one in each part: no run of wrong elements hides
    CHECK(positions[i + 1] - positions[i] < 2 * (size / 4096 + 1));
  CHECK(kit::sample_positions(1, 10) == std::vector<std::size_t>(12, 0));
  CHECK(kit::sample_positions(0, 10).empty());
}

TEST_CASE("harness: an output checked at sampled positions names a wrong one by its place in the whole" *
          KIT_CPU_ONLY) {
  const std::vector<std::size_t> positions{0, 17, 123456, 999999};
  const std::vector<double> expected{1, 2, 3, 4};
  std::vector<float> got{1, 2, 3, 4};
  CHECK(kit::expect_close_at(got, expected, positions, 1000000, {1e-6, 0.0}, {"n = 1000000", ""}));

  got[2] = kit::poison_value<float>();
  kit::detail::MismatchLog log(positions.size(), 1000000);
  log.add(positions[2], true, [] { return std::pair{std::string("3"), std::string("never written (poison)")}; });
  const std::string text = log.message("result", {"n = 1000000", "vector_add_kernel"});
  CHECK(contains(text, "1 of the 4 elements checked (at positions drawn at random from all 1000000) are wrong"));
  CHECK(contains(text, "[123456]: 3, never written (poison)"));
}

TEST_CASE("harness: a mismatch report names the input, the seed, the count and the first elements" * KIT_CPU_ONLY) {
  const std::vector<double> expected{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> got{1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(log_of(got, expected, 1e-6).ok());

  got[2] = 3.5f;
  got[7] = kit::poison_value<float>();
  const auto log = log_of(got, expected, 1e-6);
  REQUIRE(log.count() == 2);
  const std::string text = log.message("result", {"a 2x4 matrix", "scale_kernel in picture.cu", 4});
  CHECK(contains(text, "Wrong result for input: a 2x4 matrix (seed "));
  CHECK(contains(text, "2 of 8 elements are wrong; 1 of them were never written"));
  CHECK(contains(text, "(row 0, col 2): 3, 3.5"));
  CHECK(contains(text, "(row 1, col 3): 8, never written (poison)"));
  CHECK(contains(text, "Look at: scale_kernel in picture.cu"));
}

// A student reads every failure message, and with the grader's seed (its $KIT_SEED) and the public generators
// could make every hidden test's inputs; the public seed (params.txt's 11 here) helps them find their bug.
TEST_CASE("harness: a failure message shows the public seed, never the grader's" * KIT_CPU_ONLY) {
  const auto log = log_of({1, 2, 5}, {1, 2, 3}, 1e-6);
  const auto message = [&] { return log.message("result", {"n = 3", ""}); };
  {
    const SeedInEnvironment unset(nullptr);
    CHECK(kit::seed_is_public());
    CHECK(kit::seed_text() == "seed 11");
    CHECK(contains(message(), "Wrong result for input: n = 3 (seed 11)."));
  }
  {
    const SeedInEnvironment same_as_public("11");
    CHECK(kit::seed_is_public());
    CHECK(contains(message(), "(seed 11)"));
  }
  {
    const SeedInEnvironment grading("314159");
    CHECK(kit::run_seed() == 314159);  // the inputs still come from it
    CHECK_FALSE(kit::seed_is_public());
    CHECK(contains(message(), "Wrong result for input: n = 3 (the grading seed, not shown)."));
    CHECK_FALSE(contains(message(), "314159"));
    CHECK_FALSE(contains(kit::seed_text(), "314159"));
  }
}

TEST_CASE("harness: an output never written at all is called out" * KIT_CPU_ONLY) {
  const std::vector<double> expected(100, 1.0);
  const auto log = log_of(kit::poisoned_vector<float>(100), expected, 1e-6);
  const std::string text = log.message("result", {"n = 100", ""});
  CHECK(contains(text, "100 of 100 elements are wrong, and none was written"));
  CHECK_FALSE(contains(text, "Look at:"));
}

TEST_CASE("harness: only the first few mismatches are kept, however many there are" * KIT_CPU_ONLY) {
  const std::size_t n = 1000000;
  const auto log = log_of(kit::poisoned_vector<float>(n), std::vector<double>(n, 2.0), 0.0);
  CHECK(log.count() == n);
  const std::string text = log.message("result", {"n = 1000000", ""});
  CHECK(contains(text, "[4]: 2, never written"));
  CHECK_FALSE(contains(text, "[5]:"));
}

TEST_CASE("harness: a missing parameter names the key and the config file" * KIT_CPU_ONLY) {
  CHECK(kit::param_int("answer") == 42);
  CHECK(kit::param_double("tolerance") == doctest::Approx(1.5e-7));
  CHECK(kit::param_ints("sizes") == std::vector<std::int64_t>{1, 31, 1025});
  CHECK_THROWS_WITH_AS(kit::param_int("no_such_key"),
                       doctest::Contains("no parameter 'no_such_key' (add it under [params] in lab.toml)"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(kit::param_int("name"), doctest::Contains("'name' = 'toy' is not a number"), std::runtime_error);
}

TEST_CASE("harness: picture sizes come as (width, height) pairs" * KIT_CPU_ONLY) {
  CHECK(kit::param_int_list("sizes") == std::vector<int>{1, 31, 1025});
  const std::vector<kit::PictureSize> sizes = kit::picture_sizes("pictures");
  REQUIRE(sizes.size() == 2);
  CHECK(sizes[0].describe("large") == "a large 33x65 picture (width 33, height 65)");
  CHECK(sizes[0].pixels() == 33u * 65u);
  CHECK(kit::picture_size("one_picture").text() == "7x3");
  CHECK_THROWS_WITH_AS(kit::picture_sizes("sizes"), doctest::Contains("'sizes' must hold (width, height) pairs"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(kit::picture_size("pictures"), doctest::Contains("must hold one (width, height) pair"),
                       std::runtime_error);
}

TEST_CASE("harness: a failed CUDA call names the call, the file and the line" * KIT_CPU_ONLY) {
  try {
    CUDA_CHECK(cudaErrorInvalidValue);
    FAIL("CUDA_CHECK did not throw");
  } catch (const kit::CudaError& error) {
    const std::string text = error.what();
    CHECK(contains(text, "cudaErrorInvalidValue failed at "));
    CHECK(contains(text, "harness_tests.cpp:"));
    CHECK(contains(text, "invalid argument"));
  }
}

TEST_CASE("harness: large random inputs made on every core equal the element-by-element definition" * KIT_CPU_ONLY) {
  const std::size_t n = (std::size_t{3} << 20) + 7;  // several threads' shares and a ragged end
  const kit::Rng rng(19);
  const auto floats = rng.uniform_floats(n, -1.0f, 1.0f);
  const auto ints = rng.uniform_ints(n, -100, 100);
  const auto bytes = rng.uniform_bytes(n, 2, 253);
  bool same = true;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t bits = kit::detail::random_bits(19, i);
    same = same && floats[i] == static_cast<float>(-1.0 + 2.0 * static_cast<double>(bits >> 40) * 0x1.0p-24) &&
           ints[i] == static_cast<int>(-100 + static_cast<std::int64_t>(bits % 201)) &&
           bytes[i] == static_cast<std::uint8_t>(2 + bits % 252);
  }
  CHECK(same);
  CHECK(*std::min_element(bytes.begin(), bytes.end()) == 2);
  CHECK(*std::max_element(bytes.begin(), bytes.end()) == 253);
  CHECK_THROWS_AS(rng.uniform_bytes(10, 3, 256), std::invalid_argument);
  CHECK_THROWS_AS(rng.uniform_bytes(10, 5, 4), std::invalid_argument);
}

TEST_CASE("harness: every timing call has inputs of its own and a name for messages" * KIT_CPU_ONLY) {
  const kit::Call first_warmup{0, 3, 15}, first_timed{3, 3, 15}, last{17, 3, 15};
  CHECK(first_warmup.name() == "warm-up call 1 of 3");
  CHECK(first_timed.name() == "timed call 1 of 15");
  CHECK(last.name() == "timed call 15 of 15");
  CHECK_FALSE(first_warmup.timed());
  CHECK(last.sample() == 15);
  CHECK(first_timed.rng("a").seed() != last.rng("a").seed());
  CHECK(first_timed.rng("a").seed() != first_timed.rng("b").seed());
  CHECK(first_timed.rng("a").seed() == kit::Call{3, 3, 15}.rng("a").seed());
}

TEST_CASE("harness: the calls of a batched sample each have a set, inputs and a name of their own" * KIT_CPU_ONLY) {
  // 3 warm-up calls, then 15 samples of 4 calls (3 batched, 1 alone): call 3 + 4 s + j is call j + 1 of sample s + 1.
  const kit::Call first{3, 3, 15, 4}, third_of_second{9, 3, 15, 4}, last{62, 3, 15, 4};
  CHECK(first.name() == "call 1 of 4 in timed sample 1 of 15");
  CHECK(third_of_second.name() == "call 3 of 4 in timed sample 2 of 15");
  CHECK(last.name() == "call 4 of 4 in timed sample 15 of 15");
  CHECK(first.set() == 0);
  CHECK(third_of_second.set() == 2);
  CHECK(third_of_second.sample() == 2);
  CHECK(last.sample() == 15);
  CHECK(kit::Call{2, 3, 15, 4}.set() == 0);  // a warm-up call uses the first set
  CHECK(first.rng("a").seed() != kit::Call{4, 3, 15, 4}.rng("a").seed());
}

TEST_CASE("harness: a batched sample deals its sets at random, so no set is always the call alone" *
          KIT_CPU_ONLY) {
  std::vector<kit::Call> calls;
  for (int j = 0; j < 5; ++j) calls.push_back(kit::Call{3 + j, 3, 15, 5});  // sample 1: 4 batched, 1 alone
  std::vector<int> times_alone(5, 0);
  for (std::uint64_t draw = 0; draw < 400; ++draw) {
    const kit::SampleSplit split = kit::split_sample(calls, draw);
    REQUIRE(split.batch.size() == 4);
    std::set<int> sets{split.alone.set()};
    for (const kit::Call& call : split.batch) sets.insert(call.set());
    CHECK(sets.size() == 5);  // every set once: the batch and the call alone share none
    ++times_alone[static_cast<std::size_t>(split.alone.set())];
    CHECK(kit::split_sample(calls, draw).alone.set() == split.alone.set());  // the draw alone decides
  }
  for (int set = 0; set < 5; ++set) {
    INFO("set " << set);
    CHECK(times_alone[static_cast<std::size_t>(set)] > 40);  // about 80 of 400 each
  }
  CHECK_THROWS_AS(kit::split_sample({calls.front()}, 1), std::invalid_argument);
}

TEST_CASE("harness: the verified timing calls are the last and enough random others" * KIT_CPU_ONLY) {
  for (int repeats = 1; repeats <= 31; ++repeats) {
    INFO("repeats = " << repeats);
    const std::vector<int> chosen = kit::choose_verified_samples(repeats, 12345);
    REQUIRE(!chosen.empty());
    CHECK(chosen.back() == repeats);
    CHECK(std::is_sorted(chosen.begin(), chosen.end()));
    CHECK(std::set<int>(chosen.begin(), chosen.end()).size() == chosen.size());
    CHECK(chosen.front() >= 1);
    // Moving the median takes at least (repeats + 1) / 2 samples; fewer than that go unchecked.
    const int unverified = repeats - static_cast<int>(chosen.size());
    CHECK(unverified < (repeats + 1) / 2);
    CHECK(chosen == kit::choose_verified_samples(repeats, 12345));  // the draw alone decides
  }
  // Over many draws, every call but the last is sometimes checked and sometimes not.
  std::vector<int> times_chosen(16, 0);
  std::set<std::vector<int>> distinct;
  for (std::uint64_t draw = 0; draw < 400; ++draw) {
    const std::vector<int> chosen = kit::choose_verified_samples(15, draw);
    distinct.insert(chosen);
    for (const int call : chosen) ++times_chosen[static_cast<std::size_t>(call)];
  }
  for (int call = 1; call < 15; ++call) {
    INFO("call " << call);
    CHECK(times_chosen[static_cast<std::size_t>(call)] > 100);
    CHECK(times_chosen[static_cast<std::size_t>(call)] < 300);
  }
  CHECK(times_chosen[15] == 400);
  CHECK(distinct.size() > 300);
}

TEST_CASE("harness: unwritten elements of a host output are counted whatever their type" * KIT_CPU_ONLY) {
  std::vector<float> floats(1000);
  const kit::Output float_output = kit::Output::host("c", floats.data(), floats.size());
  kit::poison(float_output);
  CHECK(kit::count_unwritten(float_output) == 1000);
  for (std::size_t i = 0; i < 990; ++i) floats[i] = static_cast<float>(i) - 500.0f;  // zero, negatives
  CHECK(kit::count_unwritten(float_output) == 10);
  floats[995] = std::numeric_limits<float>::quiet_NaN();  // another NaN than the poison's is written
  CHECK(kit::count_unwritten(float_output) == 9);

  // Bytes with a fill of the test's choosing: 0 here, so 171 (the usual poison) counts as written.
  std::vector<std::uint8_t> bytes(777);
  const kit::Output byte_output = kit::Output::host("gray", bytes.data(), bytes.size(), 0);
  kit::poison(byte_output);
  CHECK(kit::count_unwritten(byte_output) == 777);
  std::fill(bytes.begin(), bytes.begin() + 700, std::uint8_t{171});
  CHECK(kit::count_unwritten(byte_output) == 77);

  // An element is unwritten only when all its bytes still hold the fill.
  std::vector<long long> words(5);
  const kit::Output word_output = kit::Output::host("sums", words.data(), words.size());
  kit::poison(word_output);
  reinterpret_cast<unsigned char*>(words.data())[3] = 0;
  CHECK(kit::count_unwritten(word_output) == 4);

  // Large enough for several threads (the host count runs on every core): the parts' counts add up.
  std::vector<float> large((std::size_t{1} << 24) + 3);
  const kit::Output large_output = kit::Output::host("h_out", large.data(), large.size());
  kit::poison(large_output);
  CHECK(kit::count_unwritten(large_output) == large.size());
  for (const std::size_t i : {std::size_t{0}, std::size_t{1} << 22, std::size_t{5000001}, large.size() - 1})
    large[i] = 1.0f;
  CHECK(kit::count_unwritten(large_output) == large.size() - 4);

  struct Triple {
    float x, y, z;
  };
  std::vector<Triple> triples(4);
  CHECK_THROWS_AS(kit::count_unwritten(kit::Output::host("acc", triples.data(), triples.size(), 0xFF)),
                  std::invalid_argument);
}

TEST_CASE("harness: a bound that a run beats is measured again, and the faster of the two kept" * KIT_CPU_ONLY) {
  kit::Measurement m{"pipelined", {{1e-3}, 1e-3}, 50e6, kit::RateUnit::GBps};  // 50 GB/s
  m.ceiling_margin = 1.10;
  std::vector<double> again_rates;
  int measured = 0;
  const auto bound = [&](double rate) {
    kit::Ceiling ceiling{"slowest stage alone (stage_copy_out)", rate, true};
    ceiling.measure_again = [&] {
      const double again = again_rates.at(static_cast<std::size_t>(measured++));
      return kit::Ceiling{"slowest stage alone (stage_copy_in)", again, true};
    };
    return ceiling;
  };

  m.ceilings = {bound(48.0)};  // 1.04 of it: plausible, so never measured again
  kit::confirm_bounds(m);
  CHECK(measured == 0);

  // Measured slowly once (40 GB/s: 1.25 of it), then at its usual 47 GB/s: the run is plausible
  // against the second measurement, which it keeps, name and all.
  m.ceilings = {bound(40.0)};
  again_rates = {47.0};
  kit::confirm_bounds(m);
  CHECK(measured == 1);
  CHECK(kit::implausibility(m) == "");
  CHECK(m.ceilings[0].rate == 47.0);
  CHECK(m.ceilings[0].name == "slowest stage alone (stage_copy_in)");

  // A run that really beats the bound beats every measurement of it: measured twice more, slower
  // the second time (kept at the better), and still implausible.
  measured = 0;
  m.ceilings = {bound(30.0)};
  again_rates = {40.0, 35.0};
  kit::confirm_bounds(m);
  CHECK(measured == 2);
  CHECK(m.ceilings[0].rate == 40.0);
  CHECK(contains(kit::implausibility(m), "faster than the hardware allows in this process"));

  // A bound without measure_again, and a peer that is no bound, are left as they were.
  measured = 0;
  m.ceilings = {{"device-to-device copy", 30.0, true}, {"sequential with pinned memory", 10.0, false}};
  kit::confirm_bounds(m);
  CHECK(m.ceilings[0].rate == 30.0);
  CHECK(m.ceilings[1].rate == 10.0);
}

TEST_CASE("harness: a pipeline's bound is its slowest stage, each stage at its faster timing" * KIT_CPU_ONLY) {
  const auto stage = [](const char* name, double ms) {
    return kit::Measurement{name, {{ms * 1e-3}, ms * 1e-3}, 1e9, kit::RateUnit::GBps};
  };
  // Copy-out came out slow the first time (27 ms against its usual 19.5).
  const std::vector<kit::Measurement> first = {stage("stage_copy_in", 20.0), stage("stage_compute", 2.0),
                                               stage("stage_copy_out", 27.0)};
  CHECK(kit::slowest_stage(first).name == "stage_copy_out");
  int timed = 0;
  kit::Ceiling bound = kit::slowest_stage_bound(first, [&] {
    ++timed;
    return std::vector<kit::Measurement>{stage("stage_copy_in", 21.0), stage("stage_compute", 2.0),
                                         stage("stage_copy_out", 19.5)};
  });
  CHECK(bound.bound);
  CHECK(bound.name == "slowest stage alone (stage_copy_out)");
  CHECK(bound.rate == doctest::Approx(1e9 / 27e-3 / 1e9));
  CHECK(timed == 0);  // timed again only when a pipeline beats it

  // Copy-out keeps its 19.5 ms; copy-in its first 20 ms, faster than the second's 21: it is the slowest now.
  const kit::Ceiling again = bound.measure_again();
  CHECK(timed == 1);
  CHECK(again.name == "slowest stage alone (stage_copy_in)");
  CHECK(again.rate == doctest::Approx(1e9 / 20e-3 / 1e9));

  CHECK_THROWS_AS(kit::slowest_stage({}), std::invalid_argument);
  kit::Ceiling mismatched = kit::slowest_stage_bound(first, [&] { return std::vector<kit::Measurement>{}; });
  CHECK_THROWS_AS(mismatched.measure_again(), std::logic_error);
}

TEST_CASE("harness: a comparison made on the GPU is reported with the CPU's first findings, or as the tests' fault" *
          KIT_CPU_ONLY) {
  const kit::CaseContext context{"n = 100", "the kernel"};
  kit::detail::MismatchLog log(100);
  log.add(7, false, [] { return std::pair{std::string("1"), std::string("2")}; });
  // The GPU found 12 wrong, 3 of them unwritten; the CPU confirmed the first.
  const std::string failure = kit::checked_on_device_failure(log, 12, 7, 3, context);
  CHECK(contains(failure, "12 of 100 elements are wrong; 3 of them were never written"));
  CHECK(contains(failure, "[7]: 1, 2"));
  // The CPU finds nothing where the GPU saw a wrong element: the tests are at fault, and say so.
  const std::string disagree = kit::checked_on_device_failure(kit::detail::MismatchLog(100), 12, 7, 0, context);
  CHECK(contains(disagree, "The test's two references disagree"));
  CHECK(contains(disagree, "the first at [7], and the one on the CPU finds 0 from there"));
  CHECK(contains(disagree, "not in your code: tell your TA"));
}

TEST_CASE("harness: the measurements a grader lists are read from its comma-separated list" * KIT_CPU_ONLY) {
  CHECK_FALSE(kit::detail::measurements_listed(nullptr).has_value());  // no list: every measurement is taken
  CHECK(kit::detail::measurements_listed("") == std::vector<std::string>{});
  CHECK(kit::detail::measurements_listed("pipelined") == std::vector<std::string>{"pipelined"});
  CHECK(kit::detail::measurements_listed("pipelined,stage_copy_in,,stage_copy_out,") ==
        std::vector<std::string>{"pipelined", "stage_copy_in", "stage_copy_out"});
}

TEST_CASE("harness: a rate above the margin times a bound ceiling is implausible" * KIT_CPU_ONLY) {
  kit::Measurement m{"copy_kernel", {{1e-3}, 1e-3}, 2e9, kit::RateUnit::GBps};  // 2000 GB/s
  m.ceiling_margin = 1.15;
  m.ceilings = {{"device-to-device copy", 1800.0, true}, {"a naive kernel", 100.0, false}};
  CHECK(kit::implausibility(m) == "");  // 1.11 of the copy: within the margin; the peer is no bound

  m.ceilings[0].rate = 1700.0;  // 1.18 of it
  const std::string why = kit::implausibility(m);
  CHECK(contains(why, "copy_kernel: 2000.0 GB/s is 1.18 times device-to-device copy (1700.0 GB/s"));
  CHECK(contains(why, "no correct run exceeds 1.15 times it"));
  CHECK(contains(why, "faster than the hardware allows in this process"));
  CHECK(contains(why, "cannot have done the work"));

  m.timing.median_s = 0.0;  // a call that took no measurable time at all
  CHECK(kit::implausibility(m) != "");

  m.ceiling_margin = 0.0;  // a bound needs a margin to judge by
  CHECK_THROWS_AS(kit::implausibility(m), std::logic_error);
  m.ceilings[0].bound = false;
  CHECK(kit::implausibility(m) == "");
}

TEST_CASE("harness: a large product is compared with the CPU in its first, middle, last and random rows, each once" *
          KIT_CPU_ONLY) {
  const std::vector<int> rows = kit::matmul_check_lines(4096, 3, kit::Rng(5));
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(std::set<int>(rows.begin(), rows.end()).size() == rows.size());
  CHECK(rows.size() >= 3);
  CHECK(rows.size() <= 6);
  CHECK(rows.front() == 0);
  CHECK(rows.back() == 4095);
  CHECK(std::count(rows.begin(), rows.end(), 2048) == 1);
  CHECK(rows == kit::matmul_check_lines(4096, 3, kit::Rng(5)));  // the draw alone decides
  CHECK(rows != kit::matmul_check_lines(4096, 3, kit::Rng(6)));
  CHECK(kit::matmul_check_lines(4096, 0, kit::Rng(5)) == std::vector<int>{0, 2048, 4095});
  CHECK(kit::matmul_check_lines(1, 3, kit::Rng(5)) == std::vector<int>{0});
  CHECK(kit::matmul_check_lines(2, 3, kit::Rng(5)) == std::vector<int>{0, 1});
}

// 530 columns: two whole pieces of 256 and a ragged one; 9 rows: a whole group of 8 and one
// more; enough multiply-adds for several threads. The sums must be the plain ones bit for bit
// (each in order of the inner index), whether A and B are in memory or made element by element.
TEST_CASE("harness: rows and columns of a product made on every core equal the plain double sums" * KIT_CPU_ONLY) {
  const int m = 300, k = 700, n = 530;
  const kit::Rng a(41), b(43);
  const kit::MatmulInputs in = kit::make_matmul_inputs(m, k, n, a, b);
  const std::vector<int> rows{0, 1, 7, 8, 150, 298, 299, 17, 64}, cols{0, 255, 256, 511, 529};
  const kit::MatmulLines lines = kit::matmul_lines(in, rows, cols);
  REQUIRE(lines.rows == rows);
  REQUIRE(lines.cols == cols);
  REQUIRE(lines.row_value.size() == rows.size() * n);
  REQUIRE(lines.col_value.size() == cols.size() * m);
  bool rows_equal = true, cols_equal = true;
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int j = 0; j < n; ++j) {
      const auto [value, magnitude] = plain_dot(in, rows[r], j);
      rows_equal = rows_equal && lines.row_value[r * n + j] == value && lines.row_magnitude[r * n + j] == magnitude;
    }
  for (std::size_t c = 0; c < cols.size(); ++c)
    for (int i = 0; i < m; ++i) {
      const auto [value, magnitude] = plain_dot(in, i, cols[c]);
      cols_equal = cols_equal && lines.col_value[c * m + i] == value && lines.col_magnitude[c * m + i] == magnitude;
    }
  CHECK(rows_equal);
  CHECK(cols_equal);

  const kit::MatmulLines made = kit::matmul_lines(m, k, n, a, b, rows, cols);
  CHECK(made.row_value == lines.row_value);
  CHECK(made.row_magnitude == lines.row_magnitude);
  CHECK(made.col_value == lines.col_value);
  CHECK(made.col_magnitude == lines.col_magnitude);

  const kit::MatmulLines none = kit::matmul_lines(in, {}, {});
  CHECK(none.row_value.empty());
  CHECK(none.col_value.empty());
}

TEST_CASE("harness: a small product is expected in full from the CPU, each element with its own error bound" *
          KIT_CPU_ONLY) {
  const int m = 45, k = 67, n = 33;
  const kit::MatmulInputs in = kit::make_matmul_inputs(m, k, n, kit::Rng(47), kit::Rng(53));
  const double units = 2.0;
  const kit::MatmulExpected expected = kit::matmul_expected(in, units);
  REQUIRE(expected.value.size() == static_cast<std::size_t>(m) * n);
  REQUIRE(expected.allowed.size() == expected.value.size());
  CHECK(expected.source == "a double-precision CPU product");
  // units · γ_k(float) · Σ|a||b|, plus γ_k(double) · Σ|a||b| for the double sum's own error.
  const double double_gamma = k * 0x1.0p-53 / (1.0 - k * 0x1.0p-53);
  const double bound = units * kit::float_dot_gamma(k) + double_gamma;
  bool equal = true;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const auto [value, magnitude] = plain_dot(in, i, j);
      const std::size_t at = static_cast<std::size_t>(i) * n + j;
      equal = equal && expected.value[at] == value && expected.allowed[at] == bound * magnitude;
    }
  CHECK(equal);

  // The CPU product in float passes; one element moved by a whole product does not.
  std::vector<float> got(expected.value.begin(), expected.value.end());
  CHECK(kit::detail::matmul_mismatches(got, expected).ok());
  got[2 * n + 5] += 0.25f;
  const kit::detail::MismatchLog log = kit::detail::matmul_mismatches(got, expected);
  REQUIRE(log.count() == 1);
  CHECK(contains(log.message("result", {"45x67 times 67x33", "", static_cast<std::size_t>(n)}), "(row 2, col 5): "));
}

TEST_CASE("harness: parts of a range cover it once, in near-equal contiguous pieces" * KIT_CPU_ONLY) {
  for (const std::size_t count : {std::size_t{0}, std::size_t{5}, std::size_t{1000003}})
    for (const std::size_t parts : {std::size_t{1}, std::size_t{7}, std::size_t{16}}) {
      CHECK(kit::part_begin(count, parts, 0) == 0);
      CHECK(kit::part_begin(count, parts, parts) == count);
      for (std::size_t t = 0; t < parts; ++t) {
        const std::size_t size = kit::part_begin(count, parts, t + 1) - kit::part_begin(count, parts, t);
        CHECK(size >= count / parts);
        CHECK(size <= count / parts + 1);
      }
    }
}

TEST_CASE("harness: work on every core runs each task once and passes a thread's exception on" * KIT_CPU_ONLY) {
  const std::size_t count = 10007;
  std::vector<int> runs(count, 0);
  kit::for_each_index(count, 7, [&](std::size_t i) { ++runs[i]; });
  CHECK(std::count(runs.begin(), runs.end(), 1) == static_cast<std::ptrdiff_t>(count));

  CHECK_THROWS_WITH_AS(kit::on_threads(4,
                                       [](std::size_t t) {
                                         if (t == 3) throw std::runtime_error("part 3 failed");
                                       }),
                       "part 3 failed", std::runtime_error);

  CHECK(kit::threads_for(10.0, 1e6) == 1);
  CHECK(kit::threads_for(1e12, 1.0, 3) <= 3);
  CHECK(kit::threads_for(1e12, 1.0) == std::max(1u, std::thread::hardware_concurrency()));
}

// This program links no judge's proxies, as a lab built with -DKIT_ONE_PROCESS=ON does not: its
// shared host memory is its own (the tests of a split judge's sharing are in remote/).
TEST_CASE("harness: host memory shared in a program without a runner is the program's own" * KIT_CPU_ONLY) {
  kit::remote::SharedHostBuffer<float> shared(1000, false);
  for (std::size_t i = 0; i < shared.size(); ++i) shared[i] = static_cast<float>(i);
  CHECK(shared[999] == 999.0f);
  kit::remote::SharedHostBuffer<int> empty(0, false);
  CHECK(empty.size() == 0);
}
