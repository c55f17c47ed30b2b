"""favorlab workloads: the paper's web traffic (Poisson arrivals, Pareto sizes, one TCP connection per flow).

Controller side (the venv): `checks`, `bench`, `http`, `persistent` (the schedule generator: orchestrate.schedule).
Testbed side (Python 3.10+ standard library only): `common`, `client`, `server` (the schedule file: contract.schedule).
"""
