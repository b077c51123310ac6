"""Kubernetes Node objects as the API returns them (JSON), to seed a Kubernetes API emulator.

Each function returns a fresh dict, so a test may change it freely. The label sets are what the
discovery daemons write (names checked against their sources; see
adapters/kubernetes/inventory/labels.py):

- a100_gfd_node: AWS p4de.24xlarge, 8 x A100-SXM4-80GB, Intel Xeon (Cascade Lake) host, labelled
  by NFD and NVIDIA GPU Feature Discovery under the GPU operator, tainted nvidia.com/gpu.
- h100_gfd_node: on-prem DGX H100, 8 x H100-80GB-HBM3, Intel Xeon (Sapphire Rapids, AMX) host,
  labelled by an older GFD that writes only the deprecated cuda.driver.* labels.
- mi300x_node: on-prem, 8 x MI300X, AMD EPYC (Genoa) host, AMD node labeller + NFD.
- gaudi_node: on-prem, 8 x Gaudi (habana.ai/gaudi), NFD configured for PCI vendor ids only.
- control_plane_node: kubeadm control plane, CPU only, NFD labels, NoSchedule control-plane taint.
- allocatable_only_node: EKS g5.12xlarge, 4 x A10G with only the device plugin: no NFD or GFD
  labels; nvidia.com/gpu.present was set by hand so the plugin's DaemonSet affinity matches.

cordon() and not_ready() change a node as `kubectl cordon` and a silent kubelet would.
"""

from __future__ import annotations

from typing import Any

Node = dict[str, Any]

CREATED = "2024-06-03T09:12:44Z"
HEARTBEAT = "2024-06-10T14:02:11Z"

_GPU_OPERATOR = {
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.deploy.container-toolkit": "true",
    "nvidia.com/gpu.deploy.dcgm": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.driver": "pre-installed",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.node-status-exporter": "true",
    "nvidia.com/gpu.deploy.operator-validator": "true",
}


def a100_gfd_node() -> Node:
    name = "ip-10-0-12-34.ec2.internal"
    labels = {
        **_standard_labels(name),
        "node.kubernetes.io/instance-type": "p4de.24xlarge",
        "beta.kubernetes.io/instance-type": "p4de.24xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1a",
        "failure-domain.beta.kubernetes.io/region": "us-east-1",
        "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
        "topology.k8s.aws/zone-id": "use1-az4",
        "eks.amazonaws.com/nodegroup": "gpu-a100",
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "eks.amazonaws.com/nodegroup-image": "ami-0c2d3e1f4a5b6c7d8",
        "k8s.io/cloud-provider-aws": "3f9a1c7e2b4d6e8f0a1b2c3d4e5f6a7b",
        **_nfd_cpu(
            vendor="Intel",
            family=6,
            model=85,
            flags=(
                "ADX AESNI AVX AVX2 AVX512BW AVX512CD AVX512DQ AVX512F AVX512VL AVX512VNNI "
                "FMA3 HYPERVISOR MPX"
            ),
        ),
        **_nfd_kernel("5.10.219-208.866.amzn2.x86_64"),
        **_nfd_os("amzn", "2"),
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/pci-1d0f.present": "true",
        "feature.node.kubernetes.io/storage-nonrotationaldisk": "true",
        **_GPU_OPERATOR,
        **_gfd(
            product="NVIDIA-A100-SXM4-80GB",
            count=8,
            memory_mib=81920,
            family="ampere",
            compute=(8, 0),
            machine="p4de.24xlarge",
            driver="535.183.01",
            runtime="12.2",
            mig_capable=True,
        ),
    }
    return _node(
        name=name,
        uid="0d7c4f52-3a9e-4b1f-9c61-2f8e5d3a7b10",
        resource_version="48211903",
        labels=labels,
        addresses=[
            {"type": "InternalIP", "address": "10.0.12.34"},
            {"type": "InternalDNS", "address": name},
            {"type": "Hostname", "address": name},
        ],
        capacity={
            "cpu": "96",
            "ephemeral-storage": "104845292Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "1176469784Ki",
            "nvidia.com/gpu": "8",
            "pods": "250",
            "vpc.amazonaws.com/efa": "4",
        },
        allocatable={
            "cpu": "95690m",
            "ephemeral-storage": "95551679124",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "1165119716Ki",
            "nvidia.com/gpu": "8",
            "pods": "250",
            "vpc.amazonaws.com/efa": "4",
        },
        node_info=_node_info(
            kernel="5.10.219-208.866.amzn2.x86_64",
            os_image="Amazon Linux 2",
            kubelet="v1.29.3-eks-ae9a62a",
            runtime="containerd://1.7.11",
            machine_id="ec2a4c1f0b6d4e8f9a2b3c4d5e6f7a8b",
        ),
        taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        provider_id="aws:///us-east-1a/i-0a1b2c3d4e5f60718",
    )


def h100_gfd_node() -> Node:
    name = "dgx-h100-07"
    labels = {
        **_standard_labels(name),
        "topology.kubernetes.io/region": "dc1",
        "topology.kubernetes.io/zone": "dc1-row3",
        **_nfd_cpu(
            vendor="Intel",
            family=6,
            model=143,
            flags=(
                "ADX AESNI AMXBF16 AMXINT8 AMXTILE AVX AVX2 AVX512BF16 AVX512BITALG AVX512BW "
                "AVX512CD AVX512DQ AVX512F AVX512FP16 AVX512IFMA AVX512VBMI AVX512VBMI2 "
                "AVX512VL AVX512VNNI AVX512VPOPCNTDQ AVXVNNI FMA3 GFNI VAES VPCLMULQDQ"
            ),
        ),
        **_nfd_kernel("5.15.0-105-generic"),
        **_nfd_os("ubuntu", "22.04"),
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/pci-15b3.present": "true",
        "feature.node.kubernetes.io/pci-15b3.sriov.capable": "true",
        "feature.node.kubernetes.io/memory-numa": "true",
        "feature.node.kubernetes.io/rdma.capable": "true",
        **_GPU_OPERATOR,
        **_gfd(
            product="NVIDIA-H100-80GB-HBM3",
            count=8,
            memory_mib=81559,
            family="hopper",
            compute=(9, 0),
            machine="DGXH100",
            driver="535.104.05",
            runtime="12.2",
            mig_capable=True,
            deprecated_only=True,
        ),
    }
    return _node(
        name=name,
        uid="7f1e9b3c-5d2a-4c8e-b0f4-6a9d2e1c3b57",
        resource_version="48212077",
        labels=labels,
        addresses=[
            {"type": "InternalIP", "address": "172.20.3.17"},
            {"type": "Hostname", "address": name},
        ],
        capacity={
            "cpu": "224",
            "ephemeral-storage": "1844582056Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "2113455236Ki",
            "nvidia.com/gpu": "8",
            "pods": "110",
        },
        allocatable={
            "cpu": "222",
            "ephemeral-storage": "1699940460183",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "2102969476Ki",
            "nvidia.com/gpu": "8",
            "pods": "110",
        },
        node_info=_node_info(
            kernel="5.15.0-105-generic",
            os_image="Ubuntu 22.04.4 LTS",
            kubelet="v1.29.4",
            runtime="containerd://1.7.16",
            machine_id="3c9e4f1a7b2d4e6f8a0b1c2d3e4f5a6b",
        ),
    )


def mi300x_node() -> Node:
    name = "mi300x-node-01"
    labels = {
        **_standard_labels(name),
        "topology.kubernetes.io/region": "dc1",
        "topology.kubernetes.io/zone": "dc1-row5",
        **_nfd_cpu(
            vendor="AMD",
            family=25,
            model=17,
            flags=(
                "ADX AESNI AVX AVX2 AVX512BF16 AVX512BITALG AVX512BW AVX512CD AVX512DQ AVX512F "
                "AVX512IFMA AVX512VBMI AVX512VBMI2 AVX512VL AVX512VNNI AVX512VPOPCNTDQ FMA3 "
                "GFNI SHA VAES VPCLMULQDQ"
            ),
        ),
        **_nfd_kernel("5.15.0-113-generic"),
        **_nfd_os("ubuntu", "22.04"),
        "feature.node.kubernetes.io/pci-1002.present": "true",
        "feature.node.kubernetes.io/pci-1022.present": "true",
        "feature.node.kubernetes.io/amd-gpu": "true",
        "feature.node.kubernetes.io/memory-numa": "true",
        # The AMD node labeller: the plain form when all GPUs agree, and the beta forms with
        # per-value counts (ROCm/k8s-device-plugin cmd/k8s-node-labeller).
        **_amd_labeller(
            {
                "product-name": "AMD_Instinct_MI300X_OAM",
                "device-id": "74a1",
                "family": "AI",
                "vram": "192G",
                "cu-count": "304",
                "simd-count": "1216",
            },
            count=8,
        ),
        "amd.com/gpu.driver-version": "6.8.5",
        "amd.com/compute-memory-partition": "spx_nps1",
        "amd.com/compute-partitioning-supported": "true",
        "amd.com/memory-partitioning-supported": "true",
    }
    return _node(
        name=name,
        uid="a3b6d9e2-1f4c-4a7b-8e0d-3c5f7a9b1d24",
        resource_version="48212310",
        labels=labels,
        addresses=[
            {"type": "InternalIP", "address": "172.20.5.21"},
            {"type": "Hostname", "address": name},
        ],
        capacity={
            "amd.com/gpu": "8",
            "cpu": "384",
            "ephemeral-storage": "3750095856Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "2311330340Ki",
            "pods": "110",
        },
        allocatable={
            "amd.com/gpu": "8",
            "cpu": "382",
            "ephemeral-storage": "3456066526407",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "2300844580Ki",
            "pods": "110",
        },
        node_info=_node_info(
            kernel="5.15.0-113-generic",
            os_image="Ubuntu 22.04.4 LTS",
            kubelet="v1.30.2",
            runtime="containerd://1.7.18",
            machine_id="5d2f8a1c3e7b4f9a0c1d2e3f4a5b6c7d",
        ),
    )


def gaudi_node() -> Node:
    name = "gaudi-node-03"
    labels = {
        **_standard_labels(name),
        "topology.kubernetes.io/region": "dc1",
        "topology.kubernetes.io/zone": "dc1-row7",
        **_nfd_cpu(
            vendor="Intel",
            family=6,
            model=106,
            flags=(
                "ADX AESNI AVX AVX2 AVX512BITALG AVX512BW AVX512CD AVX512DQ AVX512F AVX512IFMA "
                "AVX512VBMI AVX512VBMI2 AVX512VL AVX512VNNI AVX512VPOPCNTDQ FMA3 GFNI SHA VAES "
                "VPCLMULQDQ"
            ),
        ),
        **_nfd_kernel("5.15.0-113-generic"),
        **_nfd_os("ubuntu", "22.04"),
        # NFD as the Gaudi base operator docs configure it: PCI vendor ids only.
        "feature.node.kubernetes.io/pci-1da3.present": "true",
        "feature.node.kubernetes.io/pci-8086.present": "true",
        "feature.node.kubernetes.io/memory-numa": "true",
    }
    return _node(
        name=name,
        uid="c8e1f4a7-2b5d-4e9c-a3f6-9d0b2c4e6f81",
        resource_version="48212544",
        labels=labels,
        addresses=[
            {"type": "InternalIP", "address": "172.20.7.3"},
            {"type": "Hostname", "address": name},
        ],
        capacity={
            "cpu": "160",
            "ephemeral-storage": "1844582056Ki",
            "habana.ai/gaudi": "8",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "60Gi",
            "memory": "1056462832Ki",
            "pods": "110",
        },
        allocatable={
            "cpu": "158",
            "ephemeral-storage": "1699940460183",
            "habana.ai/gaudi": "8",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "60Gi",
            "memory": "983062512Ki",
            "pods": "110",
        },
        node_info=_node_info(
            kernel="5.15.0-113-generic",
            os_image="Ubuntu 22.04.4 LTS",
            kubelet="v1.29.4",
            runtime="containerd://1.7.16",
            machine_id="9a4c1e7f2b5d4a8c0e3f6a9b2c5d8e1f",
        ),
    )


def control_plane_node() -> Node:
    name = "cp-01"
    labels = {
        **_standard_labels(name),
        "node-role.kubernetes.io/control-plane": "",
        "node.kubernetes.io/exclude-from-external-load-balancers": "",
        "topology.kubernetes.io/region": "dc1",
        "topology.kubernetes.io/zone": "dc1-row1",
        **_nfd_cpu(
            vendor="Intel",
            family=6,
            model=106,
            flags="ADX AESNI AVX AVX2 AVX512BW AVX512CD AVX512DQ AVX512F AVX512VL FMA3",
        ),
        **_nfd_kernel("5.15.0-105-generic"),
        **_nfd_os("ubuntu", "22.04"),
        "feature.node.kubernetes.io/pci-8086.present": "true",
    }
    return _node(
        name=name,
        uid="1e4a7c0d-3f6b-4d9e-8a2c-5b8e1d4f7a03",
        resource_version="48210002",
        labels=labels,
        addresses=[
            {"type": "InternalIP", "address": "172.20.1.10"},
            {"type": "Hostname", "address": name},
        ],
        capacity={
            "cpu": "16",
            "ephemeral-storage": "203056560Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "65842812Ki",
            "pods": "110",
        },
        allocatable={
            "cpu": "16",
            "ephemeral-storage": "187136952991",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "65740412Ki",
            "pods": "110",
        },
        node_info=_node_info(
            kernel="5.15.0-105-generic",
            os_image="Ubuntu 22.04.4 LTS",
            kubelet="v1.29.4",
            runtime="containerd://1.7.16",
            machine_id="2b6e9f3a1c4d4e7f8a0b2c4d6e8f0a1b",
        ),
        taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
    )


def allocatable_only_node() -> Node:
    name = "ip-10-0-40-7.ec2.internal"
    labels = {
        **_standard_labels(name),
        "node.kubernetes.io/instance-type": "g5.12xlarge",
        "beta.kubernetes.io/instance-type": "g5.12xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1b",
        "eks.amazonaws.com/nodegroup": "gpu-a10g",
        "eks.amazonaws.com/capacityType": "SPOT",
        "nvidia.com/gpu.present": "true",
    }
    return _node(
        name=name,
        uid="e2d5a8b1-4c7f-4a0e-9b3d-6f9c2e5a8d46",
        resource_version="48212901",
        labels=labels,
        addresses=[
            {"type": "InternalIP", "address": "10.0.40.7"},
            {"type": "InternalDNS", "address": name},
            {"type": "Hostname", "address": name},
        ],
        capacity={
            "cpu": "48",
            "ephemeral-storage": "104845292Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "195745304Ki",
            "nvidia.com/gpu": "4",
            "pods": "234",
        },
        allocatable={
            "cpu": "47810m",
            "ephemeral-storage": "95551679124",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "192611864Ki",
            "nvidia.com/gpu": "4",
            "pods": "234",
        },
        node_info=_node_info(
            kernel="5.10.217-205.860.amzn2.x86_64",
            os_image="Amazon Linux 2",
            kubelet="v1.29.3-eks-ae9a62a",
            runtime="containerd://1.7.11",
            machine_id="ec27b3d9a1c54e8f9b0a1c2d3e4f5a6b",
        ),
        provider_id="aws:///us-east-1b/i-0f1e2d3c4b5a69788",
    )


def all_nodes() -> list[Node]:
    return [
        a100_gfd_node(),
        h100_gfd_node(),
        mi300x_node(),
        gaudi_node(),
        control_plane_node(),
        allocatable_only_node(),
    ]


def node_list(nodes: list[Node] | None = None, *, resource_version: str = "48213000") -> Node:
    """A NodeList, as GET /api/v1/nodes returns it."""
    return {
        "apiVersion": "v1",
        "kind": "NodeList",
        "metadata": {"resourceVersion": resource_version},
        "items": all_nodes() if nodes is None else nodes,
    }


def cordon(node: Node) -> Node:
    """What `kubectl cordon` leaves: unschedulable, and the taint the node controller adds."""
    node["spec"]["unschedulable"] = True
    node["spec"].setdefault("taints", []).append(
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": HEARTBEAT}
    )
    return node


def not_ready(node: Node) -> Node:
    """A node whose kubelet stopped posting status: Ready Unknown, unreachable taints."""
    for condition in node["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
            )
    node["spec"].setdefault("taints", []).extend(
        {"key": "node.kubernetes.io/unreachable", "effect": effect, "timeAdded": HEARTBEAT}
        for effect in ("NoSchedule", "NoExecute")
    )
    return node


def _node(
    *,
    name: str,
    uid: str,
    resource_version: str,
    labels: dict[str, str],
    addresses: list[dict[str, str]],
    capacity: dict[str, str],
    allocatable: dict[str, str],
    node_info: dict[str, str],
    taints: list[dict[str, str]] | None = None,
    provider_id: str | None = None,
) -> Node:
    spec: dict[str, Any] = {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]}
    if provider_id:
        spec["providerID"] = provider_id
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid,
            "resourceVersion": resource_version,
            "creationTimestamp": CREATED,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": spec,
        "status": {
            "addresses": addresses,
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": _conditions(),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": node_info,
        },
    }


def _conditions() -> list[dict[str, str]]:
    healthy = [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ]
    conditions = [
        {
            "type": kind,
            "status": "False",
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": HEARTBEAT,
            "lastTransitionTime": CREATED,
        }
        for kind, reason, message in healthy
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": HEARTBEAT,
            "lastTransitionTime": CREATED,
        }
    )
    return conditions


def _node_info(
    *, kernel: str, os_image: str, kubelet: str, runtime: str, machine_id: str
) -> dict[str, str]:
    return {
        "architecture": "amd64",
        "bootID": machine_id[::-1],
        "containerRuntimeVersion": runtime,
        "kernelVersion": kernel,
        "kubeProxyVersion": kubelet,
        "kubeletVersion": kubelet,
        "machineID": machine_id,
        "operatingSystem": "linux",
        "osImage": os_image,
        "systemUUID": f"{machine_id[:8]}-{machine_id[8:12]}-{machine_id[12:16]}-"
        f"{machine_id[16:20]}-{machine_id[20:]}",
    }


def _standard_labels(hostname: str) -> dict[str, str]:
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": hostname,
        "kubernetes.io/os": "linux",
    }


def _nfd_cpu(*, vendor: str, family: int, model: int, flags: str) -> dict[str, str]:
    nfd = "feature.node.kubernetes.io/"
    return {
        **{f"{nfd}cpu-cpuid.{flag}": "true" for flag in flags.split()},
        f"{nfd}cpu-hardware_multithreading": "true",
        f"{nfd}cpu-model.family": str(family),
        f"{nfd}cpu-model.id": str(model),
        f"{nfd}cpu-model.vendor_id": vendor,
        f"{nfd}kernel-config.NO_HZ": "true",
        f"{nfd}kernel-config.NO_HZ_IDLE": "true",
    }


def _nfd_kernel(full: str) -> dict[str, str]:
    major, minor, rest = full.split(".", 2)
    return {
        "feature.node.kubernetes.io/kernel-version.full": full,
        "feature.node.kubernetes.io/kernel-version.major": major,
        "feature.node.kubernetes.io/kernel-version.minor": minor,
        "feature.node.kubernetes.io/kernel-version.revision": rest.split("-")[0],
    }


def _nfd_os(os_id: str, version: str) -> dict[str, str]:
    nfd = "feature.node.kubernetes.io/system-os_release"
    labels = {f"{nfd}.ID": os_id, f"{nfd}.VERSION_ID": version}
    major, _, minor = version.partition(".")
    labels[f"{nfd}.VERSION_ID.major"] = major
    if minor:
        labels[f"{nfd}.VERSION_ID.minor"] = minor
    return labels


def _gfd(
    *,
    product: str,
    count: int,
    memory_mib: int,
    family: str,
    compute: tuple[int, int],
    machine: str,
    driver: str,
    runtime: str,
    mig_capable: bool,
    deprecated_only: bool = False,
) -> dict[str, str]:
    """GPU Feature Discovery's labels (NVIDIA/k8s-device-plugin internal/lm)."""
    d_major, d_minor, d_rev = driver.split(".")
    r_major, r_minor = runtime.split(".")
    labels = {
        "nvidia.com/cuda.driver.major": d_major,
        "nvidia.com/cuda.driver.minor": d_minor,
        "nvidia.com/cuda.driver.rev": d_rev,
        "nvidia.com/cuda.runtime.major": r_major,
        "nvidia.com/cuda.runtime.minor": r_minor,
        "nvidia.com/gfd.timestamp": "1717405964",
        "nvidia.com/gpu.compute.major": str(compute[0]),
        "nvidia.com/gpu.compute.minor": str(compute[1]),
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.family": family,
        "nvidia.com/gpu.machine": machine,
        "nvidia.com/gpu.memory": str(memory_mib),
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/mig.capable": str(mig_capable).lower(),
    }
    if not deprecated_only:
        labels |= {
            "nvidia.com/cuda.driver-version.full": driver,
            "nvidia.com/cuda.driver-version.major": d_major,
            "nvidia.com/cuda.driver-version.minor": d_minor,
            "nvidia.com/cuda.driver-version.revision": d_rev,
            "nvidia.com/cuda.runtime-version.full": runtime,
            "nvidia.com/cuda.runtime-version.major": r_major,
            "nvidia.com/cuda.runtime-version.minor": r_minor,
            "nvidia.com/gpu.mode": "compute",
            "nvidia.com/gpu.sharing-strategy": "none",
            "nvidia.com/mps.capable": "false",
        }
    return labels


def _amd_labeller(properties: dict[str, str], *, count: int) -> dict[str, str]:
    labels: dict[str, str] = {}
    for name, value in properties.items():
        labels[f"amd.com/gpu.{name}"] = value
        labels[f"beta.amd.com/gpu.{name}"] = value
        labels[f"beta.amd.com/gpu.{name}.{value}"] = str(count)
    return labels
