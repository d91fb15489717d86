"""The dev cluster's hosts: a head node and one host per Slurm node, each with its own network, loopback, name and /tmp.

A real site's compute nodes are separate machines: the proxy reaches a session at its node's address, the nodes
reach the hub's API and slurmctld over the cluster network, and nothing on one host can count on another's
loopback, /tmp or /dev/shm.  The dev cluster imitates that on one machine:

- each compute node is a network namespace (`ip netns`, named as the node), with a loopback of its own and one
  address on a bridge inside this machine (BRIDGE, SUBNET);
- the head node (hub, proxy, slurmctld, slurmdbd, slapd, exim, the registry, Prometheus) is this machine's own
  namespace, the bridge's address HEAD_ADDRESS its address on the cluster network;
- each node's daemons (its slurmd, and through it every job step) run in a mount namespace of their own, whose
  /tmp and /dev/shm are the node's own folders bound over the machine's (the `onhost` wrapper below): what a job
  writes there no other node sees, and it survives a restart of the node's slurmd as a disk would;
- /home, the shared storage, /opt/dsportal and /etc stay the machine's, as NFS and a configuration manager share
  them on a real site.

Traffic stays on this machine: the nodes' namespaces have no route beyond the bridge's subnet, and nothing
forwards or translates their packets (the bridge has no uplink; `up` refuses a SUBNET another interface uses), and
the machine's firewall drops whatever comes for SUBNET from anywhere but the machine itself and the bridge.
"""

from __future__ import annotations

import ipaddress
import shutil
from pathlib import Path

from .common import NODES, STATE, ClusterError, run, say, write_if_changed

BRIDGE = "dsportal0"
SUBNET = ipaddress.ip_network("10.77.0.0/24")
HEAD_ADDRESS = "10.77.0.1"
ADDRESSES = {node: f"10.77.0.{11 + i}" for i, node in enumerate(NODES)}  # node001: 10.77.0.11, ...
NETNS = Path("/run/netns")
DISKS = STATE / "hosts"  # NODE/tmp: the node's /tmp (STATE is root's: the head's users cannot walk in)
# NODE: the node's /dev/shm, a tmpfs of its own (half the memory, as a node's), under a folder of root's alone: the
# machine's /dev/shm is everyone's, and a folder made there could be a user's or a link (made before `up`)
SHM = Path("/run/dsportal-dev/shm")
FIREWALL = "DSPORTAL-DEV"  # iptables' chain of the cluster network's rules (ensure_firewall)
ONHOST = STATE / "onhost"


def veth(node: str) -> str:
    """The head's end of `node`'s cable (the node's end is its eth0)."""
    return f"ds-{node}"[:15]  # an interface name has at most 15 characters


def onhost_script() -> str:
    """`onhost NODE COMMAND...`: COMMAND as a process of host NODE (pure).

    nsenter joins the node's network namespace without remounting /sys (`ip netns exec` would, and so hide the
    cgroup controllers mounted under /sys/fs/cgroup that slurmd confines jobs with); unshare makes a mount
    namespace whose mounts the machine's mounts still reach (slave) and whose own binds stay inside, and a
    host name of its own: the node's name, which resolves to its address (a library that binds to the address of
    the host's name, as gloo does, would otherwise get the machine's name and 127.0.0.1).
    """
    return f"""\
#!/bin/sh
# Written by deploy/devcluster (deploy/dev/hosts.py): onhost NODE COMMAND... runs COMMAND on the dev cluster's
# host NODE: in its network namespace, with the node's own /tmp and /dev/shm bound over the machine's.
set -eu
node=$1
shift
exec /usr/bin/nsenter --net={NETNS}/"$node" -- /usr/bin/unshare --mount --propagation slave --uts -- \\
  /bin/sh -euc '/usr/bin/hostname "$1" && /usr/bin/mount --bind "$2" /tmp && /usr/bin/mount --bind "$3" /dev/shm &&
shift 3 && exec "$@"' \\
  onhost "$node" "{DISKS}/$node/tmp" "{SHM}/$node" "$@"
"""


def onhost_argv(node: str, argv: list[str]) -> list[str]:
    return ["/bin/sh", str(ONHOST), node, *argv]


def hosts_lines() -> list[str]:
    """/etc/hosts' lines for the nodes (pure): each name resolves to its node's own address."""
    return [f"{address} {node}" for node, address in ADDRESSES.items()]


def _links() -> set[str]:
    return {line.split(":")[1].strip().split("@")[0] for line in run(["ip", "-o", "link", "show"]).stdout.splitlines()}


def _subnet_taken() -> str:
    """Another interface's address in SUBNET ("" if none): the dev cluster must not shadow a real network."""
    for line in run(["ip", "-o", "-4", "addr", "show"]).stdout.splitlines():
        words = line.split()
        interface, address = words[1], words[3]
        if interface != BRIDGE and ipaddress.ip_interface(address).network.overlaps(SUBNET):
            return f"{interface} ({address})"
    return ""


def ensure_network() -> bool:
    """The bridge with the head's address, and each node's namespace with its cable, address and loopback; True if
    a node's namespace is new (its slurmd must start anew: one left running would be in a namespace now gone)."""
    taken = _subnet_taken()
    if taken:
        raise ClusterError(
            f"{SUBNET}, the dev cluster's network, is in use on {taken}; "
            "free it or change SUBNET in deploy/dev/hosts.py"
        )
    links = _links()
    if BRIDGE not in links:
        say(f"making the cluster network {SUBNET} (bridge {BRIDGE}, the head node at {HEAD_ADDRESS})")
        run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    if HEAD_ADDRESS not in run(["ip", "-o", "-4", "addr", "show", "dev", BRIDGE]).stdout:
        run(["ip", "addr", "add", f"{HEAD_ADDRESS}/{SUBNET.prefixlen}", "dev", BRIDGE])
    run(["ip", "link", "set", BRIDGE, "up"])
    made = False
    for node, address in ADDRESSES.items():
        if not (NETNS / node).exists():
            say(f"making the host {node} ({address})")
            run(["ip", "netns", "add", node])
            made = True
            if veth(node) in links:  # the cable of a namespace that went: its other end went with it
                run(["ip", "link", "del", veth(node)])
                links.discard(veth(node))
        inside = ["ip", "-n", node]
        if veth(node) not in links:
            run(["ip", "link", "add", veth(node), "type", "veth", "peer", "name", "eth0", "netns", node])
        run(["ip", "link", "set", veth(node), "master", BRIDGE, "up"])
        if address not in run([*inside, "-o", "-4", "addr", "show", "dev", "eth0"]).stdout:
            run([*inside, "addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", "eth0"])
        run([*inside, "link", "set", "lo", "up"])
        run([*inside, "link", "set", "eth0", "up"])
    ensure_firewall()
    return made


def firewall_rules() -> list[list[str]]:
    """The chain's rules (pure): the cluster network is reached from the machine itself and its hosts only, never
    from the machine's other networks (Linux answers for a local address on any interface: a neighbour with a
    route to SUBNET would reach the hub's plain-HTTP API); and the hosts reach each other across the bridge even
    where the machine's FORWARD policy drops (a bridge's frames pass iptables with br_netfilter)."""
    subnet = str(SUBNET)
    return [
        ["-d", subnet, "-i", "lo", "-j", "RETURN"],
        ["-d", subnet, "-i", BRIDGE, "-j", "ACCEPT"],
        ["-d", subnet, "-j", "DROP"],
    ]


def ensure_firewall() -> None:
    """FIREWALL holds exactly firewall_rules(), and INPUT and FORWARD jump to it first.  Rewritten only when it
    differs: a flush leaves the network open until the rules are back."""
    listed = run(["iptables", "-S", FIREWALL], check=False)
    if listed.returncode != 0:
        run(["iptables", "-N", FIREWALL])
    wanted = [f"-A {FIREWALL} {' '.join(rule)}" for rule in firewall_rules()]
    if [line for line in listed.stdout.splitlines() if line.startswith("-A ")] != wanted:
        run(["iptables", "-F", FIREWALL])
        for rule in firewall_rules():
            run(["iptables", "-A", FIREWALL, *rule])
    for chain in ("INPUT", "FORWARD"):
        if run(["iptables", "-C", chain, "-j", FIREWALL], check=False).returncode != 0:
            run(["iptables", "-I", chain, "1", "-j", FIREWALL])


def remove_firewall() -> None:
    for chain in ("INPUT", "FORWARD"):
        while run(["iptables", "-D", chain, "-j", FIREWALL], check=False).returncode == 0:
            pass
    run(["iptables", "-F", FIREWALL], check=False)
    run(["iptables", "-X", FIREWALL], check=False)


def _mounted(path: Path) -> bool:
    return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())


def ensure_disks() -> bool:
    """Each node's /tmp and /dev/shm (sticky, everyone's, as on a node) and the wrapper that binds them; True if
    the wrapper changed (the nodes' daemons must start anew).  Every folder on the way is root's (STATE, /run)."""
    SHM.parent.mkdir(mode=0o700, exist_ok=True)
    SHM.parent.chmod(0o700)
    SHM.mkdir(mode=0o700, exist_ok=True)
    for node in NODES:
        tmp, shm = DISKS / node / "tmp", SHM / node
        tmp.mkdir(parents=True, exist_ok=True)
        tmp.chmod(0o1777)
        shm.mkdir(exist_ok=True)
        if not _mounted(shm):
            run(["mount", "-t", "tmpfs", "-o", "mode=1777,size=50%,nosuid,nodev", f"dsportal-{node}-shm", str(shm)])
    return write_if_changed(ONHOST, onhost_script(), mode=0o700)


def cut(node: str) -> None:
    """`node`'s cable unplugged: the head and the other nodes no longer reach it, nor it them."""
    run(["ip", "link", "set", veth(node), "down"])


def mend(node: str) -> None:
    run(["ip", "link", "set", veth(node), "up"])


def remove() -> None:
    """The namespaces, the cables, the bridge and the nodes' disks (reset)."""
    for node in NODES:
        run(["ip", "link", "del", veth(node)], check=False)  # its peer in the namespace goes with it
        run(["ip", "netns", "del", node], check=False)
    run(["ip", "link", "del", BRIDGE], check=False)
    remove_firewall()
    for node in NODES:
        run(["umount", str(SHM / node)], check=False)
    if SHM.parent.exists():
        shutil.rmtree(SHM.parent)
