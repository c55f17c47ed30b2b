"""The tables extraction writes for one run (analysis/README.md), one module per table:

    flows.py       flows.csv: one row per flow (a TCP connection or a scheduled flow no capture saw)
    packets.py     packets.csv.gz and the bottleneck columns of flows.csv (bneck-in matched to bneck-out)
    favor.py       the favor trace columns of flows.csv (sch_favor's verdicts per flow)
    run.py         run.csv: one row per run (scenario, validity, counts, steady state, nstat)
    persistent.py  persistent.csv: one row per persistent flow (iperf3's own report)

analysis/extract.py reads a run directory and calls them in order.
"""
import csv


def write_csv(path, rows, cols):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
