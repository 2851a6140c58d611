"""Hand-written schedules for library kernels at their benchmark size, measured and verified.

    python bench/hand_schedules.py [--kernels gemm,2mm] [--runs 5]

Each schedule is timed side by side with the unscheduled program (same binary
harness, same inputs, outputs compared); the table gives every schedule's
speedup and marks the best of each kernel.
"""

from __future__ import annotations

import argparse

from loopcost.errors import LoopcostError
from loopcost.kernels import KERNELS
from loopcost.runner import LocalRunner, Timing
from loopcost.transforms.schedule import Schedule

SCHEDULES = {
    "gemm": [
        "P(i)",
        "F(S0,S1,1) I(j_1,k) P(i)",
        "F(S0,S1,1) I(j_1,k) T2(k,j_1,128,256) P(i)",
        "T2(i,j,32,256) F(S0,S1,3) I(j_1,k) P(i_t)",
        "T2(i,j,64,512) F(S0,S1,3) I(j_1,k) P(i_t)",
        "T2(i,j,32,256) F(S0,S1,3) I(j_1,k) P(i_t) U(j_1,4)",
        "F(S0,S1,0) T3(i_1,j_1,k,64,256,256) J(i_1,4) J(j_1,16) P(i_1_t)",
        "F(S0,S1,0) T3(i_1,j_1,k,64,256,256) J(i_1,8) J(j_1,16) P(i_1_t)",
        "F(S0,S1,0) T3(i_1,j_1,k,256,64,512) J(i_1,8) J(j_1,16) P(i_1_t)",
        "F(S0,S1,0) T3(i_1,j_1,k,256,64,512) J(i_1,8) J(j_1,16) P(i_1_t) K(B,i_1_r)",
        # the register-tiled seed of an AVX-512 machine with 48 KiB L1 and 2 MiB L2 (search.microkernels)
        "F(S0,S1,0) T3(i_1,j_1,k,128,160,384) J(i_1,8) J(j_1,16) P(i_1_t) K(A,j_1_r) K(B,i_1_r)",
        "F(S0,S1,0) T3(i_1,j_1,k,128,256,256) J(i_1,8) J(j_1,16) P(i_1_t) K(A,j_1_r) K(B,i_1_r)",
    ],
    "2mm": [
        "P(i) P(i_1)",
        "F(S0,S1,1) I(j_2,k) F(S2,S3,1) I(j_1_1,k_1) P(i) P(i_1)",
        "T2(i,j,32,256) F(S0,S1,3) I(j_2,k) T2(i_1,j_1,32,256) F(S2,S3,3) I(j_1_1,k_1) P(i_t) P(i_1_t)",
        "F(S0,S1,0) F(S2,S3,0) T3(i_2,j_2,k,64,256,256) J(i_2,8) J(j_2,16) T3(i_1_1,j_1_1,k_1,64,256,256) "
        "J(i_1_1,8) J(j_1_1,16) P(i_2_t) P(i_1_1_t)",
        "F(S0,S1,0) F(S2,S3,0) T3(i_2,j_2,k,256,64,512) J(i_2,8) J(j_2,16) T3(i_1_1,j_1_1,k_1,256,64,512) "
        "J(i_1_1,8) J(j_1_1,16) P(i_2_t) P(i_1_1_t) K(B,i_2_r) K(C,i_1_1_r)",
        "F(S0,S1,0) T3(i_2,j_2,k,152,160,384) J(i_2,8) J(j_2,16) P(i_2_t) K(A,j_2_r) K(B,i_2_r) F(S2,S3,0) "
        "T3(i_1_1,j_1_1,k_1,152,160,384) J(i_1_1,8) J(j_1_1,16) P(i_1_1_t) K(tmp,j_1_1_r) K(C,i_1_1_r)",
    ],
    "3mm": [
        "F(S0,S1,0) F(S2,S3,0) F(S4,S5,0) T3(i_3,j_3,k,64,256,256) J(i_3,8) J(j_3,16) "
        "T3(i_1_1,j_1_1,k_1,64,256,256) J(i_1_1,8) J(j_1_1,16) T3(i_2_1,j_2_1,k_2,64,256,256) J(i_2_1,8) "
        "J(j_2_1,16) P(i_3_t) P(i_1_1_t) P(i_2_1_t)",
        "F(S0,S1,0) T3(i_3,j_3,k,104,160,384) J(i_3,8) J(j_3,16) P(i_3_t) K(A,j_3_r) K(B,i_3_r) F(S2,S3,0) "
        "T3(i_1_1,j_1_1,k_1,128,160,384) J(i_1_1,8) J(j_1_1,16) P(i_1_1_t) K(C,j_1_1_r) K(D,i_1_1_r) F(S4,S5,0) "
        "T3(i_2_1,j_2_1,k_2,104,160,384) J(i_2_1,8) J(j_2_1,16) P(i_2_1_t) K(E,j_2_1_r) K(F,i_2_1_r)",
    ],
    "doitgen": [
        "P(r)",
        "J(p,8) P(r)",
        "J(p,16) P(r)",
    ],
    "syrk": [
        "P(i)",
        "I(k,j_1) J(i,4) J(j_1,8) P(i_r)",
        "I(k,j_1) J(i,4) J(j_1,16) P(i_r)",
        "F(S0,S1,0) I(k,j_1) T3(i_1,j_1,k,120,160,384) J(i_1,8) J(j_1,16) P(i_1_t)",
    ],
    "jacobi-2d": [
        "P(i) P(i_1)",
        "T2(i,j,32,256) T2(i_1,j_1,32,256) P(i_t) P(i_1_t)",
    ],
    "heat-3d": [
        "P(i) P(i_1)",
        "T2(i,j,16,16) T2(i_1,j_1,16,16) P(i_t) P(i_1_t)",
    ],
    "seidel-2d": [
        "S(t,i,1) S(t,j,1) S(i,j,1) T3(t,i,j,16,32,32)",
        "S(t,i,1) S(t,j,1) S(i,j,1) T3(t,i,j,8,64,64)",
        "S(t,i,1) S(t,j,1) S(i,j,1) T3(t,i,j,32,32,32)",
    ],
    "conv2d": [
        "P(n)",
        "F(S0,S1,2) I(y_1,c) I(x_1,ky) I(y_1,kx) I(x_1,y_1) P(n)",
        "F(S0,S1,2) I(y_1,c) I(x_1,ky) I(y_1,kx) I(x_1,y_1) P(f)",
        "J(f,4) J(x,8) P(n)",
        "J(f,8) J(x,8) P(n)",
        "F(S0,S1,0) I(f_1,y_1) J(f_1,8) J(x_1,16) P(n_1) K(weight,x_1_r)",
    ],
    "blur": [
        "P(y) P(y_1)",
        "T2(y,x,64,1024) T2(y_1,x_1,64,1024) P(y_t) P(y_1_t)",
    ],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default=",".join(SCHEDULES))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    print("| kernel | schedule | verified | unscheduled (s) | scheduled (s) | speedup |")
    print("|---|---|---|---|---|---|")
    runner = LocalRunner(timeout=600)
    for name in a.kernels.split(","):
        program = KERNELS[name].program("bench")
        best = None
        rows = []
        for text in SCHEDULES[name]:
            try:
                m = runner.measure([Schedule.parse(text).apply(program)], timing=Timing(a.runs, 1))[0]
            except LoopcostError as e:
                rows.append(f"| {name} | `{text}` | refused: {e} | | | |")
                continue
            if not m.verified:
                rows.append(f"| {name} | `{text}` | NO: {m.error} | | | |")
                continue
            rows.append((m.speedup, f"| {name} | `{text}` | yes | {m.reference_median:.4f} | "
                                    f"{m.median:.4f} | {m.speedup:.2f}x"))
            if best is None or m.speedup > best:
                best = m.speedup
        for r in rows:
            if isinstance(r, tuple):
                print(r[1] + (" **best** |" if r[0] == best else " |"), flush=True)
            else:
                print(r, flush=True)


if __name__ == "__main__":
    main()
