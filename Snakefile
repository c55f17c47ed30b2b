# favorlab: the only entry point for experiments. ./favorlab quick is the plain call
#   snakemake --profile workflow/profiles/default --configfile config/quick.yaml
# after installing what is needed; the profile holds every flag (cores, the rerun triggers that keep finished
# runs), and the config's pool size is read here, so `--resources testbed=N` is needed only to lower it.
# The matrix scenario x aqm x load x iw x replication comes from the config; each run executes on the
# testbed, comes back as a self-describing run directory (docs/contracts.md), then analysis turns run
# directories into tables, figures, the verdict table and the report.

include: "workflow/rules/common.smk"
# (`./favorlab analyse` runs the analysis alone on an existing results directory: no schedules, no runs)
if not ANALYSE_RESULTS:
    include: "workflow/rules/schedule.smk"
    include: "workflow/rules/testbed.smk"
    # one run per testbed at once: the pool's size is the resource's amount unless the command line set it
    if "testbed" not in workflow.global_resources:
        workflow.register_resource("testbed", POOL["size"])
include: "workflow/rules/analysis.smk"


rule all:
    input:
        REPORT,
    default_target: True
