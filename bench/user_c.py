"""C written as users write it, not as PolyBench does: pointers indexed ``A[i * m + j]``, ``size_t`` and
``unsigned`` loops, ``if``s on data, ``static inline`` helpers, ``malloc``'d scratch, manually tiled loops with
``MIN``, OpenMP pragmas, the file's own variables (TSVC's style), returned values, loop counters as values,
unsigned pixels, casts and shifts, row pointers, ``while`` loops, running indices (``k++``), iterators divided by
constants (``in[y / 2]``). Each file of
``bench/user_c`` is optimized with ``loopcost optimize FILE --emit-c OUT --json`` (the default adaptive search,
the model shipped for this CPU) and the function it writes is timed beside the original under gcc -O3, as the
command itself reports it (``drop_in_check``: one harness, the same inputs, outputs compared first).

    python bench/user_c.py [--files matvec tiled] [--out bench/USER-C.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import head_commit, write_rows

from loopcost.codegen.compiler import Toolchain
from loopcost.database.fingerprint import fingerprint, machine_info

ROOT = Path(__file__).resolve().parent.parent
FILES = ROOT / "bench" / "user_c"
#: row -> (file, what it exercises, the command's arguments after the file)
CASES = {
    "matvec": ("matvec.c", "const pointers, A[i * m + j], a scalar accumulator", ["--param", "n=2000", "--param",
                                                                                 "m=2000"]),
    "saxpy2d": ("saxpy2d.c", "size_t sizes and loops, fmaf, static inline", ["--param", "n=2048", "--param",
                                                                             "m=2048"]),
    "relu_bias": ("relu_bias.c", "a scalar temporary, ?:", ["--param", "n=1024", "--param", "m=1024"]),
    "stencil": ("stencil.c", "unsigned size and loops, restrict pointers", ["--param", "n=2048"]),
    "softmax": ("softmax.c", "rows of a pointer, fmax, exp, /=", ["--param", "n=1024", "--param", "m=1024"]),
    "transpose": ("transpose.c", "flattened transpose", ["--param", "n=2048", "--param", "m=2048"]),
    "clamp": ("clamp.c", "if / else if on data", ["--param", "n=4000000"]),
    "act": ("act.c", "helper functions inlined", ["--param", "n=4000000"]),
    "mm_omp": ("mm_omp.c", "OpenMP pragmas (the original compiled with -fopenmp)", ["--param", "n=1024"]),
    "dot": ("dot.c", "*out", ["--param", "n=4000000"]),
    "tiled": ("tiled.c", "ii += B, i < MIN(ii + B, n), strided loops", ["--param", "n=2048"]),
    "norm2": ("norm2.c", "return sqrt(s)", ["--param", "n=4000000"]),
    "two_pass": ("two_pass.c", "malloc'd scratch, free", ["--param", "n=4000000"]),
    "s000": ("tsvc.c", "the file's variables, an int size from its initializer", ["--function", "s000"]),
    "s1115": ("tsvc.c", "the file's 2-D variables", ["--function", "s1115"]),
    "dft": ("dft.c", "loop counters as values, M_PI", ["--param", "n=2048"]),
    "blur_u8": ("blur_u8.c", "uint8_t pixels, an int accumulator, int at = y * w + x, abs", ["--param", "h=2048",
                                                                                             "--param", "w=2048"]),
    "gray": ("gray.c", "unsigned bytes, >> on integers", ["--param", "npix=4000000"]),
    "conv2d": ("conv2d.c", "#define sizes and an index macro, a float accumulator", []),
    "layernorm": ("layernorm.c", "row pointers x + r * d, 1.0f / sqrtf", ["--param", "rows=2048", "--param",
                                                                          "d=1024"]),
    "mm_int": ("mm_int.c", "(long) casts, a 64-bit accumulator", ["--param", "n=512"]),
    "quantize": ("quantize.c", "saturation, lrintf, (int8_t)", ["--param", "n=4000000"]),
    "axpy_while": ("axpy_while.c", "a counting while, two counters in one for", ["--param", "n=4000000"]),
    "im2col": ("im2col.c", "running indices: int idx = row * ...; col[idx++]; row++", ["--param", "c=16", "--param",
                                                                                      "h=130", "--param", "w=130"]),
    "pack_cols": ("pack_cols.c", "packed[k++], a transpose", ["--param", "n=2048", "--param", "m=2048"]),
    "upsample": ("upsample.c", "in[(y / 2) * w + x / 2]", ["--param", "h=1024", "--param", "w=1024"]),
    "haar": ("haar.c", "if (i % 2 == 0) ... else, lo[i / 2]", ["--param", "h=2048", "--param", "w=2048"]),
}


def bench_case(name: str, out_dir: Path) -> dict:
    """One row: the command run, its report's search and drop-in figures."""
    file, what, args = CASES[name]
    cmd = ["loopcost", "optimize", str(FILES / file), *args, "--emit-c", str(out_dir / f"{name}.c"), "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    row = {"case": name, "file": file, "exercises": what, "args": args, "rc": proc.returncode,
           "wall_s": time.perf_counter() - t0}
    if proc.returncode not in (0, 1):
        return {**row, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output"}
    report = json.loads(proc.stdout)
    check = report.get("drop_in_check") or {}
    return {**row, "schedule": report["schedule"], "measured_speedup": report["measured_speedup"],
            "search_time_s": report["search_time_s"], "measurements": report["measurements"],
            "reused": report.get("reused", 0),
            "written": check.get("schedule"), "verified": check.get("verified"),
            "speedup_over_original": check.get("speedup_over_original"),
            "original_median_s": check.get("original_median_s"), "emitted_median_s": check.get("emitted_median_s"),
            "tried": check.get("tried", [])}


def table(rows: list[dict], header: str) -> str:
    lines = [header, "", "| case | exercises | written schedule | over the original | original ms | search s | "
             "measured (from the store) | linked |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['exercises']} | error: {r['error']} | | | | | |")
            continue
        written = "the original (no candidate beat it)" if r["written"] is None else f"`{r['written'] or '(none)'}`"
        ratio = f"{r['speedup_over_original']:.2f}x" if r["verified"] and r["speedup_over_original"] else \
            "not verified"
        lines.append(f"| {r['case']} | {r['exercises']} | {written} | {ratio} | {_ms(r['original_median_s'])} | "
                     f"{r['search_time_s']:.0f} | {r['measurements']} ({r['reused']}) | {len(r['tried'])} |")
    ok = [r["speedup_over_original"] for r in rows if r.get("verified") and r.get("speedup_over_original")]
    if ok:
        lines.append(f"\ngeometric mean over the original: **{statistics.geometric_mean(ok):.2f}x** ({len(ok)} of "
                     f"{len(rows)} verified)")
    return "\n".join(lines) + "\n"


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{1e3 * seconds:.3g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", nargs="*", default=None, help="cases to run (default: all)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "USER-C.md"))
    args = ap.parse_args()
    unknown = set(args.files or ()) - set(CASES)
    if unknown:
        sys.exit(f"unknown cases {sorted(unknown)}; choose among {', '.join(CASES)}")
    info = machine_info(Toolchain().describe())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.files or CASES:
            row = {**bench_case(name, Path(tmp)), "machine": fingerprint(info), "cpu": info.get("cpu"),
                   "commit": head_commit()}
            rows.append(row)
            print(name, row.get("speedup_over_original") or row.get("error"), flush=True)
    jsonl = Path(args.out).with_suffix(".jsonl")
    write_rows(jsonl, rows)
    header = (f"# C as users write it: what `loopcost optimize FILE --emit-c` writes, over the original\n\n"
              f"`python bench/user_c.py` ({time.strftime('%Y-%m-%d')}, commit {head_commit()}, {info.get('cpu')}, "
              f"fingerprint {fingerprint(info)}). The files are in `bench/user_c`; each row is the command's own "
              f"drop-in check: the written function and the original (gcc -O3 -march=native; with -fopenmp when "
              f"it has OpenMP pragmas) linked into one harness, outputs compared, then timed side by side (median "
              f"of 3). \"linked\": candidates linked beside the original before one beat it; \"from the store\": the "
              f"search's measurements this machine had taken before (seconds then, not minutes). Raw rows: "
              f"`{jsonl.name}`.\n")
    Path(args.out).write_text(table(rows, header))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
