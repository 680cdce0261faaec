// Lab 06: scan (prefix sum). The functions the tests call; you write them in scan.cu.
//
// Inclusive scan: out[i] = in[0] + in[1] + ... + in[i].
// Exclusive scan: out[i] = in[0] + ... + in[i-1], and out[0] = 0.
// Every function takes device arrays, configures and launches kernels, and
// returns without synchronizing. d_in and d_out must not overlap; d_in is left
// unchanged and nothing at index n or beyond is written.
#pragma once

// Part 1 and part 2 scan sections: runs of consecutive elements that one thread
// block scans on its own. Section s holds elements s*kSection ... s*kSection +
// kSection - 1 (the last section ends at n), and each output adds up only the
// inputs of its own section.
constexpr int kKoggeStoneSection = 1024;     // one thread per element
constexpr int kWorkEfficientSection = 2048;  // two elements per thread

// Part 1: inclusive scan of each section of kKoggeStoneSection floats,
// Kogge-Stone style. n >= 1.
void launch_kogge_stone_scan(const float* d_in, float* d_out, int n);

// Part 2: exclusive scan of each section of kWorkEfficientSection floats,
// work-efficient (up-sweep, then down-sweep). n >= 1.
void launch_work_efficient_scan(const float* d_in, float* d_out, int n);

// Part 3: the scan of the whole array, 1 <= n <= 2^31 - 1, the classic
// multi-block design: scan every tile of kScanTile elements on its own and write
// each tile's sum; scan the tile sums (exclusive); add each tile's offset to all
// of its elements. Each step is tested on its own, then the whole scan.
constexpr int kScanTile = 2048;  // the elements one block scans

// Inclusive scan of every run of 32 elements (elements 32w ... 32w + 31: what one
// warp holds, one per lane), with warp_inclusive_scan. n >= 1. Written for you:
// it runs your warp_inclusive_scan on its own.
void launch_warp_scan(const int* d_in, int* d_out, int n);

// Scan of every tile of kScanTile elements on its own (as parts 1 and 2 scan their
// sections), inclusive or exclusive as asked, and d_tile_sums[b] = the sum of tile
// b, for each of the ceil(n / kScanTile) tiles. n >= 1.
void launch_tile_scan(const int* d_in, int* d_out, int* d_tile_sums, int n, bool inclusive);

// Adds d_tile_offsets[b] to every element of tile b of d_out, in place, for each
// of the ceil(n / kScanTile) tiles. n >= 1.
void launch_add_offsets(int* d_out, const int* d_tile_offsets, int n);

// The whole scan. May allocate temporary device memory (and free it again).
void launch_inclusive_scan(const int* d_in, int* d_out, int n);
void launch_inclusive_scan(const float* d_in, float* d_out, int n);
void launch_exclusive_scan(const int* d_in, int* d_out, int n);
void launch_exclusive_scan(const float* d_in, float* d_out, int n);

// Extra credit: the same scans, 1 <= n <= 2^31 - 1, in 3 memory passes instead of
// 4: sum every tile, scan the tile sums, then scan every tile again from its
// offset, each thread holding its elements in registers. Tile and block sizes
// are yours. May allocate temporary device memory (and free it again).
void launch_register_tiled_inclusive_scan(const int* d_in, int* d_out, int n);
void launch_register_tiled_inclusive_scan(const float* d_in, float* d_out, int n);
void launch_register_tiled_exclusive_scan(const int* d_in, int* d_out, int n);
void launch_register_tiled_exclusive_scan(const float* d_in, float* d_out, int n);
