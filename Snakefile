# favorlab: the only entry point for experiments.
#   snakemake --configfile config/quick.yaml --cores 2 --resources testbed=1
# (./favorlab quick does exactly this after installing what is needed).
# The matrix scenario x aqm x load x iw x replication comes from the config; each run executes on the
# testbed, comes back as a self-describing run directory (docs/contracts.md), then analysis turns run
# directories into tables, figures, the verdict table and the report.

include: "workflow/rules/common.smk"
# (`./favorlab analyse` runs the analysis alone on an existing results directory: no schedules, no runs)
if not ANALYSE_RESULTS:
    include: "workflow/rules/schedule.smk"
    include: "workflow/rules/testbed.smk"
include: "workflow/rules/analysis.smk"


rule all:
    input:
        REPORT,
    default_target: True
