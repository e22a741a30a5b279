#!/bin/sh
# run.sh SOURCE: build check.cpp against the CUDA driver and NVRTC found on this machine and run it on
# SOURCE, the program text of kernels.Source(), written by
#   go test ./internal/gpu/kernels -run TestWriteSource -source-out SOURCE
set -eu
dir=$(dirname "$0")
inc=$(dirname "$(find /usr/local /usr/include /opt -name nvrtc.h 2>/dev/null | head -1)")
nvrtc=$(dirname "$(find /usr/local /usr/lib /opt -name 'libnvrtc.so*' 2>/dev/null | head -1)")
cuda=$(dirname "$(find /usr/lib /usr/lib64 /usr/local /lib -name 'libcuda.so*' 2>/dev/null | head -1)")
echo "headers $inc, nvrtc $nvrtc, driver $cuda"
bin=$(mktemp -d)/check
g++ -std=c++17 -O2 -I"$inc" "$dir/check.cpp" -o "$bin" -L"$nvrtc" -L"$cuda" -Wl,-rpath,"$nvrtc" -lnvrtc -l:libcuda.so.1
"$bin" "$1"
