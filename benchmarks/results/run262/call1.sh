#!/bin/bash
# Run 262 call 1 (one GPU, ~4 minutes; carry .mid and .peer): run 261's call 4 as it stands, its outputs named
# run262_*: the stack's tests on CUDA, whole calls with it, without it and at 5 stages, the inference GPU tests.
TAG=run262 exec bash benchmarks/results/run261/call4.sh
