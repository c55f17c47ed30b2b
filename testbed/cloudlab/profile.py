"""favorlab testbed hosts: N independent bare-metal nodes, each of which runs the whole FavorQueue
dumbbell (senders, bottleneck, receivers) in Linux network namespaces. One node is a complete
testbed; more nodes are more testbeds for parallel runs.

Instructions:
Wait until every node is ready (green), open the Manifest tab (or List View, Download Manifest) and
save the XML as manifest.xml on your controller machine. Then, in your clone of favorlab, with a
config whose testbed is {kind: ssh, inventory: ansible/inventories/cloudlab/hosts.yml, hosts: [node0]}
(docs/testbeds.md, "On CloudLab"):

    ./favorlab testbed inventory CONFIG.yaml --manifest manifest.xml --user YOUR_CLOUDLAB_USER --key ~/.ssh/id_ed25519
    ./favorlab run CONFIG.yaml

./favorlab testbed create does all of this through the portal's API. Terminate the experiment when done.
"""
# The portal runs this file as it is (geni-lib, Python 3). It has to be uploaded or pasted as a
# profile: a repository-based CloudLab profile reads only a profile.py at the top of a repository.

import re

import geni.portal as portal
import geni.rspec.pg as pg

pc = portal.Context()

pc.defineParameter("node_count", "Number of nodes (each one is a whole testbed)",
                   portal.ParameterType.INTEGER, 1,
                   longDescription="1 to 16. The experiments need one node; more nodes only add "
                                   "testbeds for running several configs at once.")
pc.defineParameter("hardware_type", "Hardware type (empty: any available)",
                   portal.ParameterType.NODETYPE, "",
                   longDescription="A CloudLab hardware type such as d430, m510 or c220g2. All nodes "
                                   "get the same type, so that parallel runs are comparable.")
# The default is orchestrate/images.py's CLOUDLAB_DEFAULT (the portal cannot import it; a test checks they
# agree): Ubuntu 22.04's kernel 5.15 is older than the series sch_favor is built for
pc.defineParameter("disk_image", "Disk image",
                   portal.ParameterType.IMAGE,
                   "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU24-64-STD",
                   longDescription="Ubuntu 24.04 (the default) or another image with Python 3.10+, sudo "
                                   "and a kernel of 6.1 or newer whose headers its archive has: the "
                                   "Ansible roles install the rest (sch_favor is built with DKMS). "
                                   "docs/testbed-images.md lists the supported images.")

params = pc.bindParameters()

if not 1 <= params.node_count <= 16:
    pc.reportError(portal.ParameterError(
        "node_count must be 1 to 16 (got %d): one node is a whole testbed" % params.node_count,
        ["node_count"]))
if params.hardware_type and not re.match(r"^[A-Za-z0-9_.-]+$", params.hardware_type):
    pc.reportError(portal.ParameterError(
        "hardware_type %r is not a CloudLab type name (like d430, m510, c220g2); leave it empty "
        "for any" % params.hardware_type, ["hardware_type"]))
if not params.disk_image.startswith("urn:publicid:IDN+"):
    pc.reportError(portal.ParameterError(
        "disk_image must be an image URN such as "
        "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU24-64-STD (got %r)" % params.disk_image,
        ["disk_image"]))
pc.verifyParameters()

request = pc.makeRequestRSpec()
# No LAN between the nodes: each one emulates the whole topology inside itself, so the nodes never
# talk to each other, and an experiment LAN would only add interfaces the runs must not use.
for i in range(params.node_count):
    node = request.RawPC("node%d" % i)
    node.disk_image = params.disk_image
    if params.hardware_type:
        node.hardware_type = params.hardware_type

pc.printRequestRSpec(request)
