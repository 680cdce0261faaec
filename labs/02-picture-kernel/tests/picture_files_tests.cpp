// The demo's picture files (demo/picture_files.hpp), checked without a GPU.
#include <sstream>
#include <string>
#include <vector>

#include "demo/picture_files.hpp"
#include "kit/kit.cuh"

namespace {

std::uint32_t big_endian(const std::string& bytes, std::size_t at) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < 4; ++i) value = (value << 8) | static_cast<std::uint8_t>(bytes[at + i]);
  return value;
}

}  // namespace

TEST_CASE("picture files: PPM PGM and PNG written and read back" * KIT_CPU_ONLY) {
  using namespace picture_files;

  // The checksums against their published check values.
  const std::string check = "123456789";
  CHECK(detail::crc32(reinterpret_cast<const std::uint8_t*>(check.data()), check.size()) == 0xCBF43926u);
  const std::string wikipedia = "Wikipedia";
  CHECK(detail::adler32(reinterpret_cast<const std::uint8_t*>(wikipedia.data()), wikipedia.size()) == 0x11E60398u);

  for (const int channels : {1, 3}) {
    CAPTURE(channels);
    // Large enough for the PNG data to need several stored deflate blocks of at most 65535 bytes.
    Picture picture{301, 250, channels, {}};
    picture.bytes = kit::Rng::for_case("picture " + std::to_string(channels))
                        .uniform_bytes(static_cast<std::size_t>(picture.width) * picture.height * channels);

    std::stringstream pnm;
    write_pnm(pnm, picture);
    const Picture back = read_pnm(pnm);
    CHECK(back.width == picture.width);
    CHECK(back.height == picture.height);
    CHECK(back.channels == channels);
    CHECK(back.bytes == picture.bytes);

    // PNG: signature, then chunks of length, type, data and CRC; the IDAT data, a zlib stream
    // of stored blocks, must hold each row after a 0 filter byte.
    std::stringstream png_stream;
    write_png(png_stream, picture);
    const std::string png = png_stream.str();
    REQUIRE(png.size() > 8);
    CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
    std::vector<std::string> types;
    std::string idat;
    for (std::size_t at = 8; at + 12 <= png.size();) {
      const std::uint32_t length = big_endian(png, at);
      REQUIRE(at + 12 + length <= png.size());
      const std::string type = png.substr(at + 4, 4);
      const std::uint32_t crc =
          detail::crc32(reinterpret_cast<const std::uint8_t*>(png.data() + at + 4), 4 + std::size_t{length});
      CHECK(crc == big_endian(png, at + 8 + length));
      if (type == "IHDR") {
        CHECK(big_endian(png, at + 8) == static_cast<std::uint32_t>(picture.width));
        CHECK(big_endian(png, at + 12) == static_cast<std::uint32_t>(picture.height));
      }
      if (type == "IDAT") idat = png.substr(at + 8, length);
      types.push_back(type);
      at += 12 + length;
    }
    CHECK(types == std::vector<std::string>{"IHDR", "IDAT", "IEND"});
    CHECK(png.substr(png.size() - 4) == "\xAE\x42\x60\x82");  // the fixed CRC of an empty IEND chunk

    std::string raw;
    std::size_t at = 2;  // after the zlib header
    for (bool last = false; !last;) {
      REQUIRE(at + 5 <= idat.size());
      last = (idat[at] & 1) != 0;
      const std::size_t length = static_cast<std::uint8_t>(idat[at + 1]) | (static_cast<std::uint8_t>(idat[at + 2]) << 8);
      const std::size_t complement = static_cast<std::uint8_t>(idat[at + 3]) | (static_cast<std::uint8_t>(idat[at + 4]) << 8);
      CHECK((length ^ complement) == 0xFFFF);
      raw += idat.substr(at + 5, length);
      at += 5 + length;
    }
    CHECK(at + 4 == idat.size());
    CHECK(big_endian(idat, at) == detail::adler32(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
    const std::size_t row_bytes = static_cast<std::size_t>(picture.width) * channels;
    REQUIRE(raw.size() == (row_bytes + 1) * picture.height);
    for (int y = 0; y < picture.height; ++y) {
      CHECK(raw[y * (row_bytes + 1)] == 0);
      CHECK(raw.compare(y * (row_bytes + 1) + 1, row_bytes,
                        reinterpret_cast<const char*>(picture.bytes.data()) + y * row_bytes, row_bytes) == 0);
    }
  }

  // Headers with comments and odd spacing are read; other formats are refused with a message.
  const char commented_text[] = "P5\n# made by hand\n2  1\n# a comment\n255\n\x07\xF0";
  std::istringstream commented(std::string(commented_text, sizeof(commented_text) - 1));
  const Picture small = read_pnm(commented);
  CHECK(small.width == 2);
  CHECK(small.height == 1);
  CHECK(small.bytes == std::vector<std::uint8_t>{0x07, 0xF0});
  std::istringstream ascii("P3\n1 1\n255\n1 2 3\n");
  CHECK_THROWS_AS(read_pnm(ascii), std::runtime_error);
  std::istringstream sixteen_bit("P5\n1 1\n65535\n\x01\x02");
  CHECK_THROWS_AS(read_pnm(sixteen_bit), std::runtime_error);
  std::istringstream short_file("P6\n4 4\n255\n\x01\x02");
  CHECK_THROWS_AS(read_pnm(short_file), std::runtime_error);
}
