"""The controller, in one package: everything that runs on the machine that drives the experiments and
nothing that runs on a testbed host (that is testbed/).

    experiment   a config: schema with defaults, validation naming the fix, the run matrix, run specs
    pool         testbed pools: member ids, machine-wide leases, members left out, known_hosts files
    testbeds     bring a testbed up (boot, provision with Ansible) or down; its ssh coordinates
    remote       ssh and rsync to a testbed: copy a run's inputs, start the runner, copy the run back
    run_step     one run of the matrix under a lease, redone while invalid, up to `attempts`
    plan         the projected wall time of a config's runs
    capacity     the capacity benchmark (highest flow arrival rate a testbed carries validly)
    cloudlab, fabric, inventory   real hosts from CloudLab and FABRIC as an Ansible inventory

The Snakemake rules (workflow/rules/) are thin calls into these; each module with a command line runs
as `python -m orchestrate.<module>` from the repository's root."""
