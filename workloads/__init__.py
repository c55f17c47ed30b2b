"""favorlab workloads: the paper's web traffic (Poisson arrivals, Pareto sizes, one TCP connection per flow).

Controller side (the venv): `schedule` (generator), `checks`, `bench`, `http`, `persistent`.
Testbed side (Python 3.11 standard library only): `common`, `client`, `server` (the schedule file: contract.schedule).
"""
