"""Testbed parts: the host runner (runner/), the local QEMU guest (vm/), the CloudLab profile (cloudlab/).
The controller's side of a run on a host is orchestrate.remote."""
