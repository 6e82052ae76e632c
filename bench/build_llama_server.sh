#!/bin/sh
# Build llama.cpp's own OpenAI-compatible server, `llama-server`, from the llama.cpp that the
# installed llama-cpp-python vendors (the same sources as the embedded backend and
# `llama_cpp.server`), for `peers.py --llama-server` and `structured_server.py --llama-server`.
# Prints the binary's path; about 10 minutes on 2 cores, kept in DIR for the next call.
#
#     bench/build_llama_server.sh [DIR]     # default: $TMPDIR/tipbench-llama-server
set -eu
dir="${1:-${TMPDIR:-/tmp}/tipbench-llama-server}"
version=$(python -c "import llama_cpp; print(llama_cpp.__version__)")
src="$dir/llama_cpp_python-$version/vendor/llama.cpp"
binary="$src/build/bin/llama-server"
if [ ! -x "$binary" ]; then
    mkdir -p "$dir"
    pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d "$dir" >&2
    tar xzf "$dir/llama_cpp_python-$version.tar.gz" -C "$dir"
    cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >&2
    cmake --build "$src/build" --target llama-server -j "$(nproc)" >&2
fi
echo "$binary"
