#!/bin/bash
. "$(dirname "$0")/../lib.sh"
fail "not written yet: waits for the relay CLI"
