// Reading and writing pictures, for the demo (and its test): binary PPM / PGM (read and write)
// and PNG (write only). Small on purpose, and without any library.
//
//  - PPM (P6) and PGM (P5), the Netpbm formats: a text header "P6 <width> <height> 255" and then
//    the bytes, row by row, exactly as the kernels store them. Any image tool converts to and
//    from them, e.g. ImageMagick: `convert photo.jpg photo.ppm`.
//  - PNG, for viewing: what every viewer, browser and editor opens. Written uncompressed
//    ("stored" deflate blocks), so the files are about as large as the raw bytes.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace picture_files {

struct Picture {
  int width = 0;
  int height = 0;
  int channels = 0;  // 1: gray, one byte per pixel; 3: colour, red, green, blue bytes per pixel
  std::vector<std::uint8_t> bytes;  // row by row, width * height * channels
};

namespace detail {

inline void check_shape(const Picture& picture) {
  if (picture.width < 1 || picture.height < 1 || (picture.channels != 1 && picture.channels != 3) ||
      picture.bytes.size() != static_cast<std::size_t>(picture.width) * picture.height * picture.channels)
    throw std::invalid_argument("picture_files: a picture needs width, height >= 1, 1 or 3 channels and "
                                "width * height * channels bytes");
}

// The next number of a Netpbm header, skipping white space and # comments.
inline long read_header_number(std::istream& in) {
  int c = in.get();
  while (c != EOF && (std::isspace(c) || c == '#')) {
    if (c == '#')
      while (c != EOF && c != '\n') c = in.get();
    c = in.get();
  }
  if (c == EOF || !std::isdigit(c)) throw std::runtime_error("not a binary PPM or PGM file: bad header");
  long value = 0;
  while (c != EOF && std::isdigit(c)) {
    value = value * 10 + (c - '0');
    if (value > 1000000) throw std::runtime_error("PPM or PGM header: a number too large for a picture");
    c = in.get();
  }
  if (c == EOF || !std::isspace(c)) throw std::runtime_error("not a binary PPM or PGM file: bad header");
  return value;  // the single white-space character after the number is consumed
}

inline std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t crc = 0) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

inline std::uint32_t adler32(const std::uint8_t* data, std::size_t size) {
  std::uint32_t a = 1, b = 0;
  for (std::size_t i = 0; i < size; ++i) {
    a = (a + data[i]) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

inline void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {  // big-endian, as PNG wants
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}

inline void write_chunk(std::ostream& out, const char* type, const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> typed(4 + data.size());  // the CRC covers the type and the data
  std::copy(type, type + 4, typed.begin());
  std::copy(data.begin(), data.end(), typed.begin() + 4);
  std::vector<std::uint8_t> length, crc;
  put_u32(length, static_cast<std::uint32_t>(data.size()));
  put_u32(crc, crc32(typed.data(), typed.size()));
  for (const auto* part : {&length, &typed, &crc})
    out.write(reinterpret_cast<const char*>(part->data()), static_cast<std::streamsize>(part->size()));
}

}  // namespace detail

// Binary PGM (1 channel) or PPM (3 channels).
inline void write_pnm(std::ostream& out, const Picture& picture) {
  detail::check_shape(picture);
  out << (picture.channels == 1 ? "P5" : "P6") << "\n" << picture.width << " " << picture.height << "\n255\n";
  out.write(reinterpret_cast<const char*>(picture.bytes.data()), static_cast<std::streamsize>(picture.bytes.size()));
  if (!out) throw std::runtime_error("could not write the PPM or PGM picture");
}

inline Picture read_pnm(std::istream& in) {
  char magic[2] = {0, 0};
  in.read(magic, 2);
  if (!in || magic[0] != 'P' || (magic[1] != '5' && magic[1] != '6'))
    throw std::runtime_error("not a binary PPM (P6) or PGM (P5) file");
  Picture picture;
  picture.channels = magic[1] == '6' ? 3 : 1;
  picture.width = static_cast<int>(detail::read_header_number(in));
  picture.height = static_cast<int>(detail::read_header_number(in));
  if (detail::read_header_number(in) != 255) throw std::runtime_error("only PPM and PGM files with 8-bit values (maximum 255) are read");
  picture.bytes.resize(static_cast<std::size_t>(picture.width) * picture.height * picture.channels);
  in.read(reinterpret_cast<char*>(picture.bytes.data()), static_cast<std::streamsize>(picture.bytes.size()));
  if (!in) throw std::runtime_error("the PPM or PGM file ends before its last pixel");
  detail::check_shape(picture);
  return picture;
}

// PNG, 8 bits per channel, gray or RGB, with uncompressed deflate blocks.
inline void write_png(std::ostream& out, const Picture& picture) {
  detail::check_shape(picture);
  static const std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  out.write(reinterpret_cast<const char*>(signature), 8);

  std::vector<std::uint8_t> header;
  detail::put_u32(header, static_cast<std::uint32_t>(picture.width));
  detail::put_u32(header, static_cast<std::uint32_t>(picture.height));
  header.insert(header.end(), {8, static_cast<std::uint8_t>(picture.channels == 1 ? 0 : 2), 0, 0, 0});
  detail::write_chunk(out, "IHDR", header);

  // The image data: each row preceded by its filter type, 0 (none).
  const std::size_t row_bytes = static_cast<std::size_t>(picture.width) * picture.channels;
  std::vector<std::uint8_t> raw;
  raw.reserve((row_bytes + 1) * picture.height);
  for (int y = 0; y < picture.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), picture.bytes.begin() + static_cast<std::ptrdiff_t>(y * row_bytes),
               picture.bytes.begin() + static_cast<std::ptrdiff_t>((y + 1) * row_bytes));
  }
  // A zlib stream of stored deflate blocks (at most 65535 bytes each), then the Adler-32 checksum.
  std::vector<std::uint8_t> zlib = {0x78, 0x01};  // deflate, 32 KiB window; 0x7801 is a multiple of 31
  for (std::size_t start = 0;; start += 65535) {  // raw is never empty: each row has its filter byte
    const std::size_t length = std::min<std::size_t>(65535, raw.size() - start);
    const bool last = start + length >= raw.size();
    zlib.push_back(last ? 1 : 0);
    zlib.insert(zlib.end(), {static_cast<std::uint8_t>(length & 0xFF), static_cast<std::uint8_t>(length >> 8),
                             static_cast<std::uint8_t>(~length & 0xFF), static_cast<std::uint8_t>((~length >> 8) & 0xFF)});
    zlib.insert(zlib.end(), raw.begin() + static_cast<std::ptrdiff_t>(start),
                raw.begin() + static_cast<std::ptrdiff_t>(start + length));
    if (last) break;
  }
  detail::put_u32(zlib, detail::adler32(raw.data(), raw.size()));
  detail::write_chunk(out, "IDAT", zlib);
  detail::write_chunk(out, "IEND", {});
  if (!out) throw std::runtime_error("could not write the PNG picture");
}

// Files: .png, .ppm or .pgm by the name's ending.
inline void save(const std::string& path, const Picture& picture) {
  std::ofstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot write " + path);
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".png") == 0)
    write_png(file, picture);
  else
    write_pnm(file, picture);
}

inline Picture load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot read " + path);
  try {
    return read_pnm(file);
  } catch (const std::exception& error) {
    throw std::runtime_error(path + ": " + error.what());
  }
}

}  // namespace picture_files
