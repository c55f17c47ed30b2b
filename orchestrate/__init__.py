"""Controller-side orchestration: getting testbed hosts from CloudLab and FABRIC and turning them into
the Ansible inventory that provisioning (ansible/site.yml) and the pipeline (testbed: {kind: ssh})
read. Nothing here runs on a testbed host."""
