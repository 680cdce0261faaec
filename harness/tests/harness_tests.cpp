// The harness's own tests: CPU only, so they run in CI on every commit.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kit/kit.cuh"

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

}  // namespace

TEST_CASE("harness: poison is NaN for floats and an unlikely pattern for integers" * KIT_CPU_ONLY) {
  CHECK(std::isnan(kit::poison_value<float>()));
  CHECK(std::isnan(kit::poison_value<double>()));
  CHECK(kit::poison_value<int>() == static_cast<int>(0xABABABAB));
  CHECK(kit::is_poison(kit::poison_value<float>()));
  CHECK_FALSE(kit::is_poison(std::numeric_limits<float>::quiet_NaN() * 0.0f + 1.0f));
  CHECK_FALSE(kit::is_poison(0.0f));
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
