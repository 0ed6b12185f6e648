#!/usr/bin/env bash
# Run on a GPU host from the repository root (the lent GPU machine here): the GPU-side checks of
# issues 2, 4 and 6. Writes its evidence under $OUT. Optional: wheels to try on top of the installed
# stack in .whl/ (e.g. flashinfer-python and its missing dependencies).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
# abiprobe's own dependencies missing on the host travel as wheels in .whl/deps/
if ls .whl/deps/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/abiprobe-deps .whl/deps/*.whl && PYTHONPATH=$PWD:/tmp/abiprobe-deps
fi
SKIP=${SKIP:-}
OUT=${OUT:-/tmp/abiprobe-device}; mkdir -p "$OUT"
PY=$(command -v python3)
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
$PY -c "import torch,sys; print(sys.executable, torch.__version__, torch.version.cuda, torch.cuda.get_device_capability())"
TL=$($PY -c "import torch,os;print(os.path.join(os.path.dirname(torch.__file__),'lib'))")
ls -la "$TL" | awk '{print $5, $9}' | sort -n | tail -6

echo "== 1. abiprobe inspect libtorch_cuda.so --arch sm_90"
$PY - "$TL/libtorch_cuda.so" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run([sys.executable, "-m", "abiprobe", "inspect", sys.argv[1], "--arch", "sm_90"], capture_output=True, text=True)
dt = time.perf_counter() - t
print(p.stdout[-3000:], p.stderr[-2000:])
print(f"inspect: rc={p.returncode} {dt:.2f}s, peak RSS of child {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024:.0f} MB")
PY

echo "== 2. fatbin reader vs cuobjdump"
[[ $SKIP == *2* ]] || for lib in libtorch_cuda.so libc10_cuda.so; do
  [ -f "$TL/$lib" ] && $PY tools/compare_cuobjdump.py "$TL/$lib" --json "$OUT/compare_${lib%.so}.json" | tail -25
done

echo "== 3. dynamic symbols: bench against readelf on libtorch_cpu.so"
[[ $SKIP == *3* ]] || [ -f bench/bench_dynsyms.py ] && $PY bench/bench_dynsyms.py --lib "$TL/libtorch_cpu.so" 2>&1 | tail -15

echo "== 4. check --installed (static verdicts of this environment)"
$PY -m abiprobe check --installed --python "$PY" --cuda 13.0 --arch sm90 --json > "$OUT/check_installed.json"
echo "check rc=$?"
$PY - "$OUT/check_installed.json" <<'PY'
import json, sys, collections
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
fails = [v for v in doc.get("verdicts", []) if v.get("status") == "fail"] if isinstance(doc, dict) else []
print("top-level keys:", list(doc)[:12])
print("fail verdicts:", len(fails))
for v in fails[:15]:
    print("  ", v.get("check"), v.get("subject"), "-", v.get("explanation"))
PY

echo "== 5. probe the installed stack with the GPU smoke test"
$PY -m abiprobe probe --installed --python "$PY" --import-order torch --json > "$OUT/probe_installed.json"
echo "probe rc=$?"; cat "$OUT/probe_installed.json" | head -80

echo "== 6. carried wheels on top of the installed stack"
if ls .whl/*.whl >/dev/null 2>&1; then
  order=${ORDER:-torch,flashinfer}
  $PY -m abiprobe probe --installed --python "$PY" --import-order "$order" .whl/*.whl --json > "$OUT/probe_carried.json"
  echo "probe rc=$?"; head -80 "$OUT/probe_carried.json"
  $PY -m abiprobe check .whl/*.whl --cuda 13.0 --arch sm90 --json > "$OUT/check_carried.json"; echo "check carried rc=$?"
fi
