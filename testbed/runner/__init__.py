"""The in-guest experiment runner: `python3 -m testbed.runner --run-dir DIR` executes one run."""
