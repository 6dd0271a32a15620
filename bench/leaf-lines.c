// What an insert into a large ordered index waits for, modelled without the tree: each of
// N inserts picks a random node of ENTRIES 16-byte entries in a 64 MB array, bisects it
// and (with MEMMOVE=1) shifts the entries after the found place, as a leaf insert does.
// DIST > 0 asks for each node's lines DIST inserts ahead, 0 just before its search.
//
//   gcc -O2 -DENTRIES=64 -o /tmp/leaf-lines bench/leaf-lines.c
//   /tmp/leaf-lines DIST MEMMOVE        (e.g. 0 1, then 8 1, 0 0, 8 0)
//
// On this machine (docs/benchmarks.md, "What a leaf insert waits for"): asking ahead gains
// nothing for nodes of 17 lines, while one line a node gains four times; the time grows
// with the lines a node has (4: 57 ns, 8: 85, 16: 125, 32: 212 ns without the shift), so
// what an insert waits for is the number of lines, not one memory latency.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef ENTRIES
#define ENTRIES 64
#endif
#define NODE_BYTES (ENTRIES * 16 + 64)
#define ARRAY_BYTES (64u << 20)
#define INSERTS 2000000u

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DIST MEMMOVE\n", argv[0]);
    return 2;
  }
  int dist = atoi(argv[1]), shift = atoi(argv[2]);
  int lines = (ENTRIES * 16 + 63) / 64;
  size_t nodes = ARRAY_BYTES / NODE_BYTES;
  char *array = aligned_alloc(64, nodes * NODE_BYTES);
  uint64_t *at = malloc(INSERTS * sizeof *at);
  if (!array || !at) return 1;
  memset(array, 1, nodes * NODE_BYTES);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < INSERTS; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    at[i] = (x % nodes) * NODE_BYTES;
  }
  uint64_t found = 0;
  double started = now();
  for (size_t i = 0; i < INSERTS; i++) {
    // The node DIST inserts ahead (this one when DIST is 0, and near the end).
    char *ahead = array + at[dist > 0 && i + dist < INSERTS ? i + dist : i];
    for (int l = 0; l < lines; l++) __builtin_prefetch(ahead + 64 * l, 1, 3);
    char *node = array + at[i];
    uint64_t key = (x = x * 6364136223846793005ull + 1);
    int low = 0, size = ENTRIES;
    while (size > 1) {
      int half = size / 2;
      uint64_t entry;
      memcpy(&entry, node + 16 * (low + half), 8);
      low = entry <= key ? low + half : low;
      size -= half;
    }
    found += low;
    if (shift) memmove(node + 16 * (low + 1), node + 16 * low, 16 * (ENTRIES - 1 - low));
  }
  double ns = (now() - started) * 1e9 / INSERTS;
  printf("%d entries (%d lines), asked %d ahead, shift %d: %.1f ns an insert (%lu)\n",
         ENTRIES, lines, dist, shift, ns, (unsigned long)(found % 7));
  return 0;
}
