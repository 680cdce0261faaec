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

// Part 3: the scan of the whole array, 1 <= n <= 2^31 - 1. May allocate
// temporary device memory (and free it again).
void launch_inclusive_scan(const int* d_in, int* d_out, int n);
void launch_inclusive_scan(const float* d_in, float* d_out, int n);
void launch_exclusive_scan(const int* d_in, int* d_out, int n);
void launch_exclusive_scan(const float* d_in, float* d_out, int n);
