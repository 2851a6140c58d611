"""``loopcost store stats``: what a machine's store of measurements holds, as text."""

from __future__ import annotations


def format_run_stats(s: dict, path: str, top: int = 20) -> str:
    """The lines of ``Store.run_stats`` for a person: totals, machines, sources, and the programs measured
    most recently (``top`` of them) with their best verified speedup."""
    lines = [f"store       {path}",
             f"runs        {s['runs']} measurements ({s['verified']} verified) of {s['programs']} programs"]
    for m in s["by_machine"]:
        lines.append(f"machine     {m['fingerprint']}: {m.get('cpu')}, {m.get('cores')} cores, {m.get('compiler')}, "
                     f"flags {' '.join(m.get('flags') or [])}, {m.get('omp_threads')} OpenMP threads: {m['runs']} runs")
    if s["by_source"]:
        lines.append("sources     " + ", ".join(f"{k} {v}" for k, v in s["by_source"].items()))
    if s["by_codegen"]:
        lines.append("codegen     " + ", ".join(f"version {k}: {v}" for k, v in s["by_codegen"].items()))
    recent = s["by_program"][-top:]
    if recent:
        lines += ["", "| program | hash | measurements | schedules | best verified speedup |",
                  "|---|---|---:|---:|---:|"]
        for p in reversed(recent):
            best = "—" if p["best_speedup"] is None else f"{p['best_speedup']:.2f}x"
            lines.append(f"| {p['program']} | {p['hash']} | {p['runs']} | {p['schedules']} | {best} |")
    return "\n".join(lines)
