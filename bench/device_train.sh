#!/bin/bash
# Train the AMD EPYC model's recipe on a lent GPU machine (the device tool's `run`), where the working tree
# travels with at most 64 MiB: the repository holds 50, so the training export travels xz-compressed.
#
# Here, once (CPU, ~5 min):  bash bench/device_train.sh prepare
#   exports the builds of seeds 2,3,5 (build 4's labels are the noisy ones) to .gpu/data.npz.xz, the held-out
#   set to .gpu/heldout.npz and islpy's wheel for the device's Python 3.12 to .gpu/ (ignored by git).
# There (carry [".gpu"], timeout_s 570):  bash bench/device_train.sh run 400 500
#   trains the transformer pairs of seeds 0,1,2 (6 networks at once) and an lstm pair beside them on the GPU,
#   stops training 400 s in (DEADLINE) and everything at 500 s (TIMEOUT), and leaves the whole pairs and a
#   tarball of cards, results.jsonl, TRAIN.md and the logs in $OUT (pairs are 15 MB each: 4 fit its 64 MiB).
set -e
cd "$(dirname "$0")/.."
G=.gpu
if [ "$1" = prepare ]; then
  grep -qx '/.gpu/' .git/info/exclude || echo /.gpu/ >> .git/info/exclude
  mkdir -p $G
  python - <<'PY'
from pathlib import Path
import numpy as np
from loopcost.costmodel.data import export
from loopcost.dataset.shipped import shipped_db
m = Path("loopcost/data/machines/amd-epyc")
export(str(shipped_db(m / "dataset.sqlite.xz")), ".gpu/full.npz", seeds=[2, 3, 5])
export(str(shipped_db(m / "heldout" / "dataset.sqlite.xz")), ".gpu/heldout.npz")
z = np.load(".gpu/full.npz")
np.savez(".gpu/data.npz", **{k: z[k] for k in z.files})  # uncompressed: xz packs it 2x tighter than zip
PY
  rm $G/full.npz && xz -T2 -6 -f $G/data.npz
  python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    -d $G "islpy==$(python -c 'import islpy; print(islpy.__version__)')"
  du -sh $G
  exit 0
fi
[ "$1" = run ] || { echo "usage: $0 prepare | run DEADLINE TIMEOUT" >&2; exit 2; }
DEADLINE=${2:-400}; TMO=${3:-500}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $G/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
W=/tmp/w; L=/tmp/wl; mkdir -p $W $L
python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('$G/data.npz.xz'), open('$W/data.npz', 'wb'))"
ln -sf $W/data.npz $L/data.npz; cp $G/heldout.npz $W/; cp $G/heldout.npz $L/
nvidia-smi -L || true
train() { timeout "$TMO" python3 bench/train_machine.py --dataset loopcost/data/machines/amd-epyc --export-seeds 2,3,5 \
  --device cuda --threads 1 --deadline "$DEADLINE" "$@"; }
train --work $W --seeds 0,1,2 --archs transformer --jobs 6 --out $W/TRAIN.md > $W/log 2>&1 &
train --work $L --seeds 0 --archs lstm --jobs 2 --out $L/TRAIN.md > $L/log 2>&1 &
wait || true
cp $W/transformer-s?.pt $L/lstm-s0.pt "$OUT"/ 2>/dev/null || true
for d in $W $L; do (cd $d && tar czf "$OUT/$(basename $d).tgz" ./*.card.json results.jsonl TRAIN.md log 2>/dev/null || true); done
for d in $W $L; do grep -E "epoch (1|10|20|30)/" $d/log | head -8; tail -12 $d/log; done
