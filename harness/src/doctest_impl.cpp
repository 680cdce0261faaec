// doctest's implementation, compiled once into the harness library. Kept apart
// from main.cpp so that programs with a main of their own (lab demos) can link
// the harness too.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
