"""A timing harness for one program and several schedules of it (variants).

The executable takes ``key=value`` arguments::

    prog seed=S warmup=W min_runs=A max_runs=B min_time_us=T max_time_us=U [timed_check=1]
         [censor_x1000=K] [steady_x1000=F] [abort_x1000=A] [ref_min_ns=N] [dump=PREFIX] variants=0,3,5

It allocates every buffer (64-byte aligned), fills it from the seed, and runs
variant 0 (by convention the unscheduled program) once to get the reference
output. Then, for each listed variant, it:

1. re-initializes and runs the variant once, and compares every output buffer
   with the reference: ``max |x - ref| / (scale + |ref|)``, where ``scale``
   is the largest finite reference magnitude (NaN against NaN counts as equal);
2. runs ``warmup`` untimed runs, then timed runs until at least ``min_runs``
   runs and ``min_time`` seconds, or ``max_runs`` runs, or (if ``max_time`` is
   set) ``max_time`` seconds, whichever comes first after one run. The buffers a program
   writes (outputs and temporaries; inputs are never written) are restored from
   a saved copy before every run, outside the timed region (``CLOCK_MONOTONIC``).
   With ``timed_check=1`` (and no warm-up) the checked run of step 1 is the first timed run;
   with ``steady_x1000=F``, timing stops once two or more runs and ``min_time`` are done and
   the slowest run is within F/1000 of the fastest; with ``censor_x1000=K``, a variant that
   would run again although its two runs so far both took more than K/1000 times the fastest
   run of variant 0 stops there (a *censored* time: it is at least that slow); with ``abort_x1000=A``, a run
   of a variant that takes longer than A/1000 times variant 0's fastest run (and ``ABORT_FLOOR_S``) ends the
   process with SIGALRM: the variant has no result (``ref_min_ns=N`` gives variant 0's fastest run when the
   variants listed do not include it: a process that runs the variants after a stopped one);
3. prints one JSON line: ``{"variant", "errors": {buffer: [rel err, flat index of the worst
   element]}, "checksums", "times_s", "censored"}``
   and flushes it, so a crash in a later variant loses nothing before it.

With ``dump=PREFIX``, variant 0's buffers are written as raw bytes, in program
order, to ``PREFIX.in`` (before its run) and ``PREFIX.out`` (after).
Every name the harness declares starts with ``lc_``, which programs may not use.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.dtypes import DTYPES
from ..ir.program import Buffer, Program
from ..ir.state import ProgramState
from .c_source import MACROS, buffer_params, c_identifier, kernel_c
from .compiler import Toolchain, Unit

#: seconds a run may always take before ``abort_x1000`` stops it (a program of a millisecond is not stopped by a
#: stall of the machine)
ABORT_FLOOR_S = 1.0

PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
""" + MACROS + r"""
/* the report goes to lc_out, the first stdout; what the measured code prints goes to stderr (main) */
static FILE *lc_out __attribute__((unused));
#define printf(...) fprintf(lc_out, __VA_ARGS__)
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

/* SIGALRM (which ends the process) after s seconds (at least a microsecond); 0 disarms */
static void __attribute__((unused)) lc_deadline(double s) {
  struct itimerval t = {{0, 0}, {(time_t)s, (suseconds_t)(1e6 * (s - (double)(time_t)s))}};
  if (s > 0 && !t.it_value.tv_sec && !t.it_value.tv_usec) t.it_value.tv_usec = 1;
  setitimer(ITIMER_REAL, &t, NULL);
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

static void lc_fill_i8(char *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = (char)(lc_hash(seed, buf, (uint32_t)i) % 4u);
}

static void lc_fill_i16(short *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = (short)(lc_hash(seed, buf, (uint32_t)i) % 10u);
}

static void lc_fill_i64(long *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = (long)(lc_hash(seed, buf, (uint32_t)i) % 10u);
}

/* unsigned bytes take every value (pixels), so wrap-around is exercised */
static void lc_fill_u8(unsigned char *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(lc_hash(seed, buf, (uint32_t)i) >> 24);
}

static void lc_fill_u16(unsigned short *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned short)(lc_hash(seed, buf, (uint32_t)i) % 1000u);
}

static void lc_fill_u32(unsigned int *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = lc_hash(seed, buf, (uint32_t)i) % 10u;
}

static void lc_fill_u64(unsigned long *p, size_t n, uint32_t seed, uint32_t buf) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned long)(lc_hash(seed, buf, (uint32_t)i) % 10u);
}

static void *lc_alloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) { fprintf(stderr, "loopcost harness: out of memory (%zu bytes)\n", bytes); exit(3); }
  return p;
}

static void lc_write(FILE *f, const void *p, size_t bytes) {
  if (fwrite(p, 1, bytes, f) != bytes) { fprintf(stderr, "loopcost harness: dump write failed\n"); exit(4); }
}

static double lc_get(const void *p, size_t i, int kind) {
  switch (kind) {
    case 0: return ((const double *)p)[i];
    case 1: return (double)((const float *)p)[i];
    case 3: return (double)((const char *)p)[i];
    case 4: return (double)((const short *)p)[i];
    case 5: return (double)((const long *)p)[i];
    case 6: return (double)((const unsigned char *)p)[i];
    case 7: return (double)((const unsigned short *)p)[i];
    case 8: return (double)((const unsigned int *)p)[i];
    case 9: return (double)((const unsigned long *)p)[i];
    default: return (double)((const int *)p)[i];
  }
}

/* max |x - ref| / (scale + |ref|); NaN against NaN is equal, NaN against a number is infinite.
   Prints [error, flat index of the worst element]. */
static void lc_rel_err(const void *x, const void *ref, size_t n, int kind) {
  double scale = 0.0, err = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < n; i++) { double r = fabs(lc_get(ref, i, kind)); if (isfinite(r) && r > scale) scale = r; }
  for (size_t i = 0; i < n; i++) {
    double a = lc_get(x, i, kind), b = lc_get(ref, i, kind);
    if (isnan(a) && isnan(b)) continue;
    if (a == b) continue;
    double e = fabs(a - b) / (scale + fabs(b));
    if (!(e <= err)) { err = isnan(e) ? INFINITY : e; worst = i; }
  }
  printf("[");
  if (isfinite(err)) printf("%.17g", err); else printf("null");
  printf(", %zu]", worst);
}

/* What the reference run's output is worth as a check: out[0] its elements that are NaN or infinite,
   out[1] those it left as they were before the run. */
static void lc_vacuity(const void *ref, const void *before, size_t n, int kind, size_t out[2]) {
  out[0] = out[1] = 0;
  for (size_t i = 0; i < n; i++) {
    double r = lc_get(ref, i, kind);
    if (!isfinite(r)) out[0]++;
    if (r == lc_get(before, i, kind)) out[1]++;
  }
}

static void lc_checksum(const char *name, const void *p, size_t n, int kind, int first) {
  double s = 0.0, a = 0.0;
  for (size_t i = 0; i < n; i++) { double v = lc_get(p, i, kind); s += v; a += fabs(v); }
  printf("%s\"%s\": ", first ? "" : ", ", name);
  if (isfinite(s) && isfinite(a)) printf("{\"sum\": %.17g, \"abs\": %.17g}", s, a);
  else printf("null");
}

static long lc_arg(int argc, char **argv, const char *key, long dflt) {
  size_t k = strlen(key);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], key, k) && argv[i][k] == '=') return strtol(argv[i] + k + 1, NULL, 10);
  return dflt;
}

static const char *lc_sarg(int argc, char **argv, const char *key) {
  size_t k = strlen(key);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], key, k) && argv[i][k] == '=') return argv[i] + k + 1;
  return NULL;
}
"""

_FILL = {"float64": "lc_fill_f64", "float32": "lc_fill_f32", "int32": "lc_fill_i32", "int8": "lc_fill_i8",
         "int16": "lc_fill_i16", "int64": "lc_fill_i64", "uint8": "lc_fill_u8", "uint16": "lc_fill_u16",
         "uint32": "lc_fill_u32", "uint64": "lc_fill_u64"}
_KIND = {"float64": 0, "float32": 1, "int32": 2, "int8": 3, "int16": 4, "int64": 5, "uint8": 6, "uint16": 7,
         "uint32": 8, "uint64": 9}


@dataclass(frozen=True)
class UserInit:
    """Inputs made by the user's own C function after the random fill: ``units`` compile it (as
    ``lc_user_init``) and what it calls, ``prototype`` declares it, and ``args`` are the C arguments of its
    call in the harness (buffers ``lc_g_NAME``, sizes, scratch arrays)."""

    units: tuple[Unit, ...]
    prototype: str
    args: tuple[str, ...]
    label: str = ""  #: what to call it in messages: ``init_array()``

    def call(self) -> str:
        return f"  lc_user_init({', '.join(self.args)});"


@dataclass(frozen=True)
class Harness:
    """A timing harness to build and run: C units linked into one program (the first holds ``main``),
    one label per variant (variant 0 is the reference), and the buffers whose outputs are compared.
    ``rtol`` overrides the per-dtype tolerance (``loopcost.runner.verify.RTOL``); ``cache=False`` when a
    unit includes the user's files, which the compile cache cannot see."""

    units: tuple[Unit, ...]
    labels: tuple[str, ...]
    outputs: tuple[Buffer, ...]
    rtol: float | None = None
    cache: bool = True


def _call_args(p: Program) -> str:
    args = []
    for b in p.buffers:
        if len(b.shape) == 1:
            args.append(f"lc_g_{b.name}")
        else:
            args.append(f"({DTYPES[b.dtype]} (*){''.join(f'[{s}]' for s in b.shape[1:])})lc_g_{b.name}")
    return ", ".join(args)


def _program_of(variants: list[ProgramState]) -> Program:
    p = variants[0].program
    if any(v.program != p for v in variants):
        raise ScheduleError("every variant of a harness must schedule the same program")
    return p


def harness_c(variants: list[ProgramState] | ProgramState, init: UserInit | None = None) -> str:
    """The whole C file: one kernel function per variant, plus ``main`` (inputs made by ``init`` after the
    random fill, when given: the unit of ``init`` is linked beside it).

    All variants must be schedules of the same program; put the unscheduled
    program first, since variant 0 is the reference output.
    """
    if isinstance(variants, ProgramState):
        variants = [variants]
    p = _program_of(variants)
    fname = c_identifier(p.name)
    kernels = "\n".join(kernel_c(v, name=f"{fname}_v{k}", attributes="static LC_NOINLINE")
                        for k, v in enumerate(variants))
    calls = [f"{fname}_v{k}({_call_args(p)});" for k in range(len(variants))]
    return PRELUDE + "\n" + kernels + "\n" + driver_c(p.buffers, p.outputs(), calls, init)


def state_harness(states: list[ProgramState], toolchain: Toolchain, labels: list[str] | None = None,
                  init: UserInit | None = None) -> Harness:
    """A harness of ``states`` (the first is the reference), compiled with ``toolchain``: one file, and the
    user's with ``init``."""
    p = _program_of(states)
    units = (Unit(harness_c(states, init), toolchain),) + (init.units if init else ())
    return Harness(units, tuple(labels or [str(k) for k in range(len(states))]), tuple(p.outputs()),
                   cache=init is None)


def compilers_harness(state: ProgramState, toolchains: dict[str, Toolchain], *, rtol: float) -> Harness:
    """The same kernel compiled by each of ``toolchains`` (the first is the reference and holds ``main``),
    each in a unit of its own, linked into one harness: compilers compared in one process."""
    p = state.program
    fname = c_identifier(p.name)
    protos = "".join(f"void {fname}_v{k}({buffer_params(p)});\n" for k in range(1, len(toolchains)))
    main = (PRELUDE + protos + kernel_c(state, name=f"{fname}_v0", attributes="static LC_NOINLINE") + "\n"
            + driver_c(p.buffers, p.outputs(), [f"{fname}_v{k}({_call_args(p)});" for k in range(len(toolchains))]))
    units = [Unit(main, tc) if k == 0 else Unit(PRELUDE + kernel_c(state, name=f"{fname}_v{k}",
                                                                   attributes="LC_NOINLINE"), tc)
             for k, tc in enumerate(toolchains.values())]
    return Harness(tuple(units), tuple(toolchains), tuple(p.outputs()), rtol=rtol)


def driver_c(buffers: list[Buffer], outputs: list[Buffer], calls: list[str], init: UserInit | None = None,
             storage: dict[str, str] | None = None) -> str:
    """The harness's buffers and ``main`` (see the module docstring): ``calls[k]`` is the C statement that
    runs variant k on the global buffers ``lc_g_NAME``, whose inputs ``init`` makes after the random fill
    when given. Buffers that are not inputs are restored before every run; ``outputs`` are compared with
    variant 0's. ``storage``: buffers that are the variables of a user's file (name -> C address), not
    allocated."""
    ctype = {b.name: DTYPES[b.dtype] for b in buffers}
    storage = storage or {}
    globals_ = "\n".join(f"static {ctype[b.name]} *lc_g_{b.name};" for b in buffers)
    refs = "\n".join(f"static {ctype[b.name]} *lc_ref_{b.name};" for b in outputs)
    alloc = "\n".join(f"  lc_g_{b.name} = ({ctype[b.name]} *) (void *) {storage[b.name]};" if b.name in storage
                      else f"  lc_g_{b.name} = lc_alloc({b.size}u * sizeof({ctype[b.name]}));" for b in buffers)
    keep = "\n".join(f"  lc_ref_{b.name} = lc_alloc({b.size}u * sizeof({ctype[b.name]}));\n"
                     f"  memcpy(lc_ref_{b.name}, lc_g_{b.name}, {b.size}u * sizeof({ctype[b.name]}));" for b in outputs)
    fill = "\n".join(f"  {_FILL[b.dtype]}(lc_g_{b.name}, {b.size}u, lc_seed, {k}u);" for k, b in enumerate(buffers))
    fill += "" if init is None else "\n" + init.call()
    written = [b for b in buffers if b.role != "input"]
    saved = "\n".join(f"static {ctype[b.name]} *lc_s_{b.name};" for b in written)
    save = "\n".join(f"  lc_s_{b.name} = lc_alloc({b.size}u * sizeof({ctype[b.name]}));\n"
                     f"  memcpy(lc_s_{b.name}, lc_g_{b.name}, {b.size}u * sizeof({ctype[b.name]}));" for b in written)
    reset = "\n".join(f"  memcpy(lc_g_{b.name}, lc_s_{b.name}, {b.size}u * sizeof({ctype[b.name]}));"
                      for b in written)
    dump = "\n".join(f"  lc_write(lc_f, lc_g_{b.name}, {b.size}u * sizeof({ctype[b.name]}));" for b in buffers)
    errors = "\n".join(
        f'  printf("{", " if k else ""}\\"{b.name}\\": "); '
        f"lc_rel_err(lc_g_{b.name}, lc_ref_{b.name}, {b.size}u, {_KIND[b.dtype]});"
        for k, b in enumerate(outputs))
    checks = "\n".join(f'  lc_checksum("{b.name}", lc_g_{b.name}, {b.size}u, {_KIND[b.dtype]}, {int(k == 0)});'
                       for k, b in enumerate(outputs))
    vacuity = "\n".join(f"  static size_t lc_vac_{b.name}[2];\n"
                        f"  lc_vacuity(lc_ref_{b.name}, lc_s_{b.name}, {b.size}u, {_KIND[b.dtype]}, lc_vac_{b.name});"
                        for b in outputs)
    vacuity_json = ", ".join(f'\\"{b.name}\\": [%zu, %zu, {b.size}]' for b in outputs)
    vacuity_args = "".join(f", lc_vac_{b.name}[0], lc_vac_{b.name}[1]" for b in outputs)
    cases = "\n".join(f"    case {k}: {call} break;" for k, call in enumerate(calls))
    return f"""static uint32_t lc_seed;
{init.prototype if init else ""}
{globals_}
{refs}
{saved}

static void lc_init(void) {{
{fill}
}}

static void lc_save(void) {{
{save}
}}

static void lc_reset(void) {{
{reset}
}}

static void lc_dump(const char *lc_prefix, const char *lc_ext) {{
  char lc_path[4096];
  snprintf(lc_path, sizeof lc_path, "%s.%s", lc_prefix, lc_ext);
  FILE *lc_f = fopen(lc_path, "wb");
  if (!lc_f) {{ fprintf(stderr, "loopcost harness: cannot write %s\\n", lc_path); exit(4); }}
{dump}
  fclose(lc_f);
}}

static void lc_run(int lc_v) {{
  switch (lc_v) {{
{cases}
    default: fprintf(stderr, "loopcost harness: no variant %d\\n", lc_v); exit(2);
  }}
}}

/* variant lc_v run once, the process ended by SIGALRM if it takes more than lc_limit seconds (0: no limit) */
static void lc_run_within(int lc_v, double lc_limit) {{
  lc_deadline(lc_limit);
  lc_run(lc_v);
  lc_deadline(0);
}}

int main(int lc_argc, char **lc_argv) {{
  lc_out = fdopen(dup(1), "w");
  if (lc_out) dup2(2, 1); else lc_out = stdout;
  lc_seed = (uint32_t)lc_arg(lc_argc, lc_argv, "seed", 0);
  long lc_warmup = lc_arg(lc_argc, lc_argv, "warmup", 1);
  long lc_min_runs = lc_arg(lc_argc, lc_argv, "min_runs", 5);
  long lc_max_runs = lc_arg(lc_argc, lc_argv, "max_runs", lc_min_runs);
  double lc_min_time = 1e-6 * (double)lc_arg(lc_argc, lc_argv, "min_time_us", 0);
  double lc_max_time = 1e-6 * (double)lc_arg(lc_argc, lc_argv, "max_time_us", 0);
  int lc_timed_check = (int)lc_arg(lc_argc, lc_argv, "timed_check", 0);
  double lc_censor = 1e-3 * (double)lc_arg(lc_argc, lc_argv, "censor_x1000", 0);
  double lc_steady = 1e-3 * (double)lc_arg(lc_argc, lc_argv, "steady_x1000", 0);
  double lc_abort = 1e-3 * (double)lc_arg(lc_argc, lc_argv, "abort_x1000", 0);
  double lc_ref_min = 1e-9 * (double)lc_arg(lc_argc, lc_argv, "ref_min_ns", 0);
  const char *lc_dump_to = lc_sarg(lc_argc, lc_argv, "dump");
  const char *lc_list = lc_sarg(lc_argc, lc_argv, "variants");
  if (!lc_list) lc_list = "0";
{alloc}
  lc_init();
  lc_save();
  if (lc_dump_to) lc_dump(lc_dump_to, "in");
  lc_run(0);
  if (lc_dump_to) lc_dump(lc_dump_to, "out");
{keep}
{vacuity}
  for (const char *lc_c = lc_list; *lc_c; ) {{
    int lc_v = (int)strtol(lc_c, (char **)&lc_c, 10);
    if (*lc_c == ',') lc_c++;
    lc_reset();
    double lc_limit = lc_v != 0 && lc_abort > 0 && lc_ref_min > 0
                      ? fmax(lc_abort * lc_ref_min, {ABORT_FLOOR_S!r}) : 0;
    double lc_first = lc_now();
    lc_run_within(lc_v, lc_limit);
    lc_first = lc_now() - lc_first;
    printf("{{\\"variant\\": %d, \\"errors\\": {{", lc_v);
{errors}
    printf("}}, \\"vacuity\\": {{{vacuity_json}}}"{vacuity_args});
    printf(", \\"checksums\\": {{");
{checks}
    printf("}}, \\"times_s\\": [");
    long lc_n = 0;
    double lc_total = 0.0, lc_lo = 0.0, lc_hi = 0.0;
    int lc_censored = 0;
    if (lc_timed_check) {{
      lc_n = 1; lc_total = lc_lo = lc_hi = lc_first;
      printf("%.9g", lc_first);
    }} else {{
      for (long lc_w = 0; lc_w < lc_warmup; lc_w++) {{ lc_reset(); lc_run_within(lc_v, lc_limit); }}
    }}
    while (lc_n < lc_max_runs && (lc_n < lc_min_runs || lc_total < lc_min_time)
           && !(lc_n > 0 && lc_max_time > 0 && lc_total >= lc_max_time)
           && !(lc_steady > 0 && lc_n >= 2 && lc_total >= lc_min_time && lc_hi - lc_lo <= lc_steady * lc_lo)) {{
      if (lc_v != 0 && lc_censor > 0 && lc_ref_min > 0 && lc_n >= 2 && lc_lo > lc_censor * lc_ref_min) {{
        lc_censored = 1;
        break;
      }}
      lc_reset();
      double lc_t0 = lc_now();
      lc_run_within(lc_v, lc_limit);
      double lc_t = lc_now() - lc_t0;
      lc_total += lc_t;
      if (lc_n == 0 || lc_t < lc_lo) lc_lo = lc_t;
      if (lc_n == 0 || lc_t > lc_hi) lc_hi = lc_t;
      printf("%s%.9g", lc_n ? ", " : "", lc_t);
      lc_n++;
    }}
    if (lc_v == 0) lc_ref_min = lc_lo;
    printf("], \\"censored\\": %d}}\\n", lc_censored);
    fflush(lc_out);
  }}
  return 0;
}}
"""
