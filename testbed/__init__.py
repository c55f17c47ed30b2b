"""Testbed parts: the local QEMU guest (vm/), the in-guest runner (runner/), the controller side (remote.py)."""
