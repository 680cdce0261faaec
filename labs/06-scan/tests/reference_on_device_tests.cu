// The exact scan on the GPU (scan_on_device.cuh), and its sums at chosen positions, checked against
// the CPU reference (scan_reference.hpp): the large checks and every timed call's are only as good as
// they are. Small parts make the carry from part to part run many times.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "kit/kit.cuh"
#include "scan_on_device.cuh"
#include "scan_reference.hpp"

using namespace scan_reference;

namespace {

// The CPU's float scan rounded to float is within u = 2^-24 of each exact sum, so inside an
// allowance of 2u times the magnitudes; one element moved by 1000 is far outside it (the
// magnitudes here stay below 2^22, so the allowance below 1).
constexpr double kGamma = 0x1.0p-23;
std::vector<float> rounded(const FloatReference& ref) { return std::vector<float>(ref.sum.begin(), ref.sum.end()); }

template <class T, class Term, class TermAt, class Wrong>
kit::Found compare(const std::vector<T>& out, TermAt term_at, Wrong wrong, std::size_t part) {
  const kit::DeviceBuffer<T> d_out(out);
  return scan_on_device::compare_scan<T, Term>(d_out.data(), out.size(), term_at, wrong, part);
}

// compare_scan_at, as a timed call's check uses it, at positions that hold the moved element twice
// (kit::sample_positions may repeat one), and the first and last.
template <class T, class Term, class TermAt, class Wrong>
kit::Found compare_at(const std::vector<T>& out, TermAt term_at, Wrong wrong, std::size_t moved) {
  const kit::DeviceBuffer<T> d_out(out);
  const std::vector<std::size_t> positions{0, moved / 2, moved, moved, out.size() - 1};
  return scan_on_device::compare_scan_at<T, Term>(d_out.data(), positions, term_at, wrong);
}

// How often compare_at's positions hold `moved`: the wrong elements it must find.
std::size_t times_compared(std::size_t count, std::size_t moved) {
  const std::size_t positions[] = {0, moved / 2, moved, moved, count - 1};
  return static_cast<std::size_t>(std::count(std::begin(positions), std::end(positions), moved));
}

}  // namespace

TEST_CASE("scan reference: the exact scan made on the GPU finds the CPU's scan right and one wrong element wrong") {
  const kit::Rng rng(62);
  // 1, a prime, and a length not a multiple of any part size below; parts of 1000 and 2^16 elements
  // carry sums across many parts, parts of 2^24 across none.
  for (const std::size_t count : {std::size_t{1}, std::size_t{1000003}, (std::size_t{3} << 20) + 7})
    for (const std::size_t part : {std::size_t{1000}, std::size_t{1} << 16, scan_on_device::kPartElements})
      for (const Kind kind : {Kind::Inclusive, Kind::Exclusive}) {
        CAPTURE(count);
        CAPTURE(part);
        CAPTURE(kind == Kind::Inclusive);
        const std::size_t moved = count / 2;  // the element made wrong

        const scan_on_device::IntTerms int_terms{rng.seed(), -100, kit::detail::int_span(-100, 100)};
        const scan_on_device::IntWrong int_wrong{kind};
        std::vector<int> ints = int_reference(rng.uniform_ints(count, -100, 100), kind);
        const auto int_right = compare<int, long long>(ints, int_terms, int_wrong, part);
        CHECK(int_right.count == 0);
        CHECK(compare_at<int, long long>(ints, int_terms, int_wrong, moved).count == 0);
        ints[moved] += 1;
        const auto int_off = compare<int, long long>(ints, int_terms, int_wrong, part);
        CHECK(int_off.count == 1);
        CHECK(int_off.first == moved);
        const auto int_off_at = compare_at<int, long long>(ints, int_terms, int_wrong, moved);
        CHECK(int_off_at.count == times_compared(count, moved));
        CHECK(int_off_at.first == moved);

        const scan_on_device::FloatTerms float_terms{kit::UniformFloatAt(rng, -1.0f, 1.0f)};
        const scan_on_device::FloatWrong float_wrong{kind, kGamma};
        std::vector<float> floats = rounded(float_reference(rng.uniform_floats(count, -1.0f, 1.0f), kind));
        const auto float_right = compare<float, double2>(floats, float_terms, float_wrong, part);
        CHECK(float_right.count == 0);
        CHECK(compare_at<float, double2>(floats, float_terms, float_wrong, moved).count == 0);
        floats[moved] += 1000.0f;
        const auto float_off = compare<float, double2>(floats, float_terms, float_wrong, part);
        CHECK(float_off.count == 1);
        CHECK(float_off.first == moved);
        const auto float_off_at = compare_at<float, double2>(floats, float_terms, float_wrong, moved);
        CHECK(float_off_at.count == times_compared(count, moved));
        CHECK(float_off_at.first == moved);
      }
}

TEST_CASE("scan reference: the exact scan made on the GPU finds every element of an unwritten output wrong") {
  const kit::Rng rng(63);
  const std::size_t count = 100003;
  const auto found = compare<float, double2>(kit::poisoned_vector<float>(count),
                                             scan_on_device::FloatTerms{kit::UniformFloatAt(rng, -1.0f, 1.0f)},
                                             scan_on_device::FloatWrong{Kind::Inclusive, kGamma}, 4096);
  CHECK(found.count == count);
  CHECK(found.first == 0);
}
