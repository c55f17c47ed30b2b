module favorlab/workloads/favorflow

go 1.19
