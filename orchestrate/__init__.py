"""The controller, in one package: everything that runs on the machine that drives the experiments and
nothing that runs on a testbed host (that is testbed/).

    config       a config file read and validated (`extends` merged, every problem with its fix)
    schema       the config schema, its validator and the defaults it holds (filled in by validation)
    sections     a config's sections resolved into the matrix's axes, and the checks of each
    matrix       the run matrix: its points (one run each), run ids, schedule ids
    runspec      a run's run.json, its AQM's tc arguments and its schedule's arguments
    schedule     the schedule generator (numpy): a run's flows, written in contract.schedule's format
    pool         testbed pools: the testbed section's members, leases, members left out, known_hosts files
    testbeds     bring a testbed up (boot, provision with Ansible) or down; its ssh coordinates
    remote       ssh and rsync to a testbed: copy a run's inputs, start the runner, copy the run back
    run_step     one run of the matrix under a lease, redone while invalid, up to `attempts`
    plan         the projected wall time of a config's runs
    capacity     the capacity benchmark (highest flow arrival rate a testbed carries validly)
    bundle       results bundles: pack a config's results, analyse someone else's (bundle_layout: what a
                 bundle may hold; bundle_unpack: unpacking and verifying one)
    cloudlab, fabric, inventory   real hosts from CloudLab and FABRIC as an Ansible inventory

The Snakemake rules (workflow/rules/) are thin calls into these; each module with a command line runs
as `python -m orchestrate.<module>` from the repository's root."""
