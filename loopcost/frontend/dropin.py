"""Which function ``loopcost optimize`` writes for a C file: the search's candidates emitted and timed beside the
original function (gcc -O3), the first of them that computes the same arrays and runs at least as fast; else the
original function, unchanged. A schedule that beats loopcost's own unscheduled C can still lose to the user's
function under gcc (other bounds, other aliasing, another machine's noise): only the side-by-side run says."""

from __future__ import annotations

from collections.abc import Sequence

from ..codegen.harness import UserInit
from ..runner import Measurement, Runner
from ..transforms.schedule import Schedule
from .emit import emit_function, emit_original
from .linkcheck import link_checks
from .translate import CKernel


def choose_drop_in(k: CKernel, measured: Sequence[tuple[str, float]], defines: dict[str, str] | None, *,
                   init: UserInit | None = None, runs: int = 3, limit: int = 4,
                   runner: Runner | None = None) -> tuple[str, dict]:
    """The C file to write for ``k`` and its report (``drop_in_check``).

    ``measured``: the search's candidates as (schedule, measured speedup over the unscheduled program). The
    best is emitted and linked beside the original; when it differs from it or runs slower, the next
    ``limit - 1`` that measured (speedup > 0) are, side by side in one harness, and the fastest verified one
    that is not slower than the original is written. When none is, the original function is written unchanged
    (``schedule`` None in the report). ``tried`` lists every candidate checked."""
    order = list(dict.fromkeys(s for s, v in sorted(measured, key=lambda sv: -sv[1]) if v > 0))
    if not order:
        raise ValueError("no measured candidate to emit")
    codes = {s: emit_function(k, Schedule.parse(s).apply(k.program), schedule=s) for s in order[:limit]}

    def check(texts: list[str]) -> list[tuple[str, Measurement]]:
        ms = link_checks(k, [codes[s] for s in texts], defines=defines, runs=runs, init=init, runner=runner)
        return list(zip(texts, ms, strict=True))

    tried = check(order[:1])
    if not _wins(tried[0][1]) and len(codes) > 1:
        tried += check(order[1:limit])
    wins = [(s, m) for s, m in tried if _wins(m)]
    report = {"inputs": init.label if init else "random",
              "tried": [{"schedule": s, "verified": m.verified, "speedup_over_original": _ratio(m),
                         "error": m.error} for s, m in tried]}
    if wins:
        s, m = max(wins, key=lambda sm: sm[1].speedup)
        return codes[s], {"schedule": s, **_check(m), **report}
    verified = [(s, m) for s, m in tried if m.verified]
    if verified:
        s, m = max(verified, key=lambda sm: sm[1].speedup or 0.0)
        why = f"no candidate ran faster than it (the best, {s or '(none)'}, at {m.speedup or 0:.2f}x)"
        return emit_original(k, why), {"schedule": None, "verified": True, "error": None, "max_rel_error": None,
                                       "speedup_over_original": None, "original_median_s": m.reference_median,
                                       "emitted_median_s": m.reference_median, "why": why, **report}
    s, m = tried[0]
    why = f"no candidate computed what it computes ({m.error or f'max relative error {m.max_rel_error}'})"
    return emit_original(k, why), {"schedule": None, **_check(m), "why": why, **report}


def _ratio(m: Measurement) -> float | None:
    """How many times faster than the original the candidate ran, verified or not (None: it did not run)."""
    return m.reference_median / m.median if m.median and m.reference_median else None


def _wins(m: Measurement) -> bool:
    return (m.speedup or 0.0) >= 1.0  # None unless verified


def _check(m: Measurement) -> dict:
    return {"verified": m.verified, "error": m.error, "max_rel_error": m.max_rel_error,
            **({"vacuous": m.vacuous} if m.vacuous else {}), "speedup_over_original": _ratio(m),
            "original_median_s": m.reference_median, "emitted_median_s": m.median}
