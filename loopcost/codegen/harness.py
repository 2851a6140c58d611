"""A timing harness around a kernel: allocate, initialize from a seed, verify, time.

The program it makes is called as ``prog WARMUP RUNS SEED [DUMP_PREFIX]``:

1. allocates every buffer (64-byte aligned) and fills it from ``SEED``;
2. runs the kernel once: that run's output is the one verified. With
   ``DUMP_PREFIX`` it writes every buffer, in program order, as raw bytes to
   ``PREFIX.in`` before the run and ``PREFIX.out`` after it;
3. runs WARMUP more times, then RUNS timed runs. Buffers are re-initialized
   before every run, outside the timed region, so that every run computes the
   same thing;
4. prints one JSON object: ``{"times_s": [...], "checksums": {...}}``, with the
   sum and absolute sum of every output buffer (null if not finite).
"""

from __future__ import annotations

from ..ir.program import DTYPES, Program
from ..ir.state import ProgramState
from .c_source import MACROS, c_identifier, kernel_c

_PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
""" + MACROS + r"""
#if defined(__clang__)
#define LC_NOINLINE __attribute__((noinline))
#else
#define LC_NOINLINE __attribute__((noipa))
#endif

static double lc_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint32_t lc_hash(uint32_t seed, uint32_t buf, uint32_t i) {
  uint32_t h = i * 2654435761u ^ (seed * 2246822519u + (buf + 1u) * 3266489917u);
  h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
  return h;
}

static void lc_fill_f64(double *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = 0.5 + (double)(lc_hash(seed, buf, (uint32_t)i) >> 8) / 16777216.0;
}

static void lc_fill_f32(float *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = 0.5f + (float)(lc_hash(seed, buf, (uint32_t)i) >> 8) / 16777216.0f;
}

static void lc_fill_i32(int *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = (int)(lc_hash(seed, buf, (uint32_t)i) % 10u);
}

static void *lc_alloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) { fprintf(stderr, "loopcost harness: out of memory (%zu bytes)\n", bytes); exit(3); }
  return p;
}

static void lc_write(FILE *f, const void *p, size_t bytes) {
  if (fwrite(p, 1, bytes, f) != bytes) { fprintf(stderr, "loopcost harness: dump write failed\n"); exit(4); }
}

static void lc_checksum(const char *name, const void *p, size_t n, int kind, int first) {
  double s = 0.0, a = 0.0;
  for (size_t i = 0; i < n; i++) {
    double v = kind == 0 ? ((const double *)p)[i] : kind == 1 ? (double)((const float *)p)[i]
                                                             : (double)((const int *)p)[i];
    s += v; a += fabs(v);
  }
  printf("%s\"%s\": ", first ? "" : ", ", name);
  if (isfinite(s) && isfinite(a)) printf("{\"sum\": %.17g, \"abs\": %.17g}", s, a);
  else printf("null");
}
"""

_FILL = {"float64": "lc_fill_f64", "float32": "lc_fill_f32", "int32": "lc_fill_i32"}
_KIND = {"float64": 0, "float32": 1, "int32": 2}


def _call_args(p: Program) -> str:
    args = []
    for b in p.buffers:
        if len(b.shape) == 1:
            args.append(f"lc_g_{b.name}")
        else:
            args.append(f"({DTYPES[b.dtype]} (*){''.join(f'[{s}]' for s in b.shape[1:])})lc_g_{b.name}")
    return ", ".join(args)


def harness_c(state: ProgramState) -> str:
    """The whole C file: kernel plus ``main``. Every harness name starts with ``lc_``,
    which buffer names may not (see ``loopcost.ir.program.validate``)."""
    p = state.program
    fname = c_identifier(p.name)
    ctype = {b.name: DTYPES[b.dtype] for b in p.buffers}
    globals_ = "\n".join(f"static {ctype[b.name]} *lc_g_{b.name};" for b in p.buffers)
    alloc = "\n".join(f"  lc_g_{b.name} = lc_alloc({b.size}u * sizeof({ctype[b.name]}));" for b in p.buffers)
    fill = "\n".join(f"  {_FILL[b.dtype]}(lc_g_{b.name}, {b.size}u, lc_seed, {k}u);"
                      for k, b in enumerate(p.buffers))
    dump = "\n".join(f"  lc_write(lc_f, lc_g_{b.name}, {b.size}u * sizeof({ctype[b.name]}));" for b in p.buffers)
    checks = "\n".join(f'  lc_checksum("{b.name}", lc_g_{b.name}, {b.size}u, {_KIND[b.dtype]}, {int(k == 0)});'
                       for k, b in enumerate(p.outputs()))
    call = f"{fname}({_call_args(p)});"
    return f"""{_PRELUDE}
{kernel_c(state, name=fname, attributes="LC_NOINLINE")}
static uint32_t lc_seed;
{globals_}

static void lc_init(void) {{
{fill}
}}

static void lc_dump(const char *lc_prefix, const char *lc_ext) {{
  char lc_path[4096];
  snprintf(lc_path, sizeof lc_path, "%s.%s", lc_prefix, lc_ext);
  FILE *lc_f = fopen(lc_path, "wb");
  if (!lc_f) {{ fprintf(stderr, "loopcost harness: cannot write %s\\n", lc_path); exit(4); }}
{dump}
  fclose(lc_f);
}}

int main(int lc_argc, char **lc_argv) {{
  if (lc_argc < 4) {{ fprintf(stderr, "usage: %s WARMUP RUNS SEED [DUMP_PREFIX]\\n", lc_argv[0]); return 2; }}
  int lc_warmup = atoi(lc_argv[1]), lc_runs = atoi(lc_argv[2]);
  lc_seed = (uint32_t)strtoul(lc_argv[3], NULL, 10);
  const char *lc_dump_to = lc_argc > 4 ? lc_argv[4] : NULL;
{alloc}
  lc_init();
  if (lc_dump_to) lc_dump(lc_dump_to, "in");
  {call}
  if (lc_dump_to) lc_dump(lc_dump_to, "out");
  printf("{{\\"checksums\\": {{");
{checks}
  printf("}}, \\"times_s\\": [");
  for (int lc_w = 0; lc_w < lc_warmup; lc_w++) {{ lc_init(); {call} }}
  for (int lc_r = 0; lc_r < lc_runs; lc_r++) {{
    lc_init();
    double lc_t0 = lc_now();
    {call}
    double lc_t1 = lc_now();
    printf("%s%.9g", lc_r ? ", " : "", lc_t1 - lc_t0);
  }}
  printf("]}}\\n");
  return 0;
}}
"""
