#!/usr/bin/env bash
# The tour, unattended (`attnscope tour --device cuda --auto`): its transcript JSON, HTML page and console log.
# estimate: 165 s
set -u; D=$1
timeout 300 bash benchmarks/gpu/tour.sh "$D"
