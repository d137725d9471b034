"""Devices: list what this machine can run on (cpu, cuda:N, mps), with names, and move inputs there."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.errors import AttnvizError

DEVICE_CHOICES = ("cpu", "cuda", "mps", "all")


@dataclass(frozen=True)
class DeviceInfo:
    """One device: ``device`` as torch spells it ("cpu", "cuda:0", "mps") and a human name."""

    device: str
    name: str
    kind: str  # "cpu", "cuda" or "mps"
    total_memory: int | None  # bytes, None where unknown


def cpu_name() -> str:
    """The CPU's model name and core count, e.g. ``"AMD EPYC (2 cores)"``."""
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    name = name or platform.processor() or platform.machine() or "CPU"
    return f"{name} ({os.cpu_count()} cores)"


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def list_devices() -> list[DeviceInfo]:
    """Every device torch can use here: cpu first, then cuda:0.., then mps."""
    out = [DeviceInfo("cpu", cpu_name(), "cpu", system_memory_bytes())]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            out.append(DeviceInfo(f"cuda:{i}", p.name, "cuda", p.total_memory))
    if _mps_available():
        out.append(DeviceInfo("mps", "Apple GPU (MPS)", "mps", None))
    return out


def resolve_devices(spec: str) -> list[str]:
    """ "cpu" | "cuda" | "cuda:N" | "mps" | "all" -> device strings that exist here.

    Raises AttnvizError naming the devices that do exist when ``spec`` is not available.
    """
    have = [d.device for d in list_devices()]
    if spec == "all":
        return have
    if spec == "cuda":
        spec = "cuda:0"
    if spec in have:
        return [spec]
    raise AttnvizError(
        f"Device {spec!r} is not available on this machine; choose one of "
        f"{', '.join(repr(d) for d in [*have, 'all'])}."
    )


def device_name(device: str | torch.device) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        return "Apple GPU (MPS)"
    return cpu_name()


def synchronize(device: str | torch.device) -> None:
    """Wait until every queued kernel on ``device`` has finished (no-op on cpu)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def move(
    tensors: tuple[Tensor, ...], device: str | torch.device
) -> tuple[tuple[Tensor, ...], float]:
    """Copy ``tensors`` to ``device``; returns (the copies, host->device seconds, synchronized).

    The same values on every device, so every device runs the same function on the same input.
    """
    device = torch.device(device)
    synchronize(device)
    t0 = time.perf_counter()
    moved = tuple(t.to(device) for t in tensors)
    synchronize(device)
    return moved, time.perf_counter() - t0


def system_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def free_memory_bytes(device: str | torch.device) -> int:
    """Bytes that can be allocated on ``device`` now (CPU: MemAvailable; CUDA: cudaMemGetInfo)."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type == "mps":
        rec = getattr(torch.mps, "recommended_max_memory", None)
        cur = getattr(torch.mps, "driver_allocated_memory", None)
        if rec is not None and cur is not None:
            return max(0, int(rec()) - int(cur()))
        return int((system_memory_bytes() or 0) // 2)
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int((system_memory_bytes() or 0) // 2)


def cache_bytes(device: str | torch.device) -> int:
    """Last-level cache in bytes (CPU L3 or L2; CUDA L2), a guess of 32 MiB where unknown."""
    device = torch.device(device)
    if device.type == "cuda":
        size = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
        return int(size) or 50 * 2**20
    for key in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            size = os.sysconf(key)
        except (ValueError, OSError):
            size = 0
        if size and size > 0:
            return int(size)
    for index in (3, 2):
        try:
            with open(
                f"/sys/devices/system/cpu/cpu0/cache/index{index}/size", encoding="utf-8"
            ) as f:
                text = f.read().strip()
            mult = {"K": 2**10, "M": 2**20}.get(text[-1], 1)
            return int(text.rstrip("KM")) * mult
        except (OSError, ValueError):
            continue
    return 32 * 2**20


def _size_text(text: str) -> int:
    """ "1024K" -> 1048576, "32M" -> 33554432, "512" -> 512."""
    text = text.strip().upper().removesuffix("B")
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * mult


def cache_levels(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[int, int]:
    """The CPU's data caches as {level: bytes one core sees} (1: L1d, 2: L2, 3: L3), read from
    ``root`` (Linux sysfs); {} where it cannot be read. Instruction caches are left out."""
    out: dict[int, int] = {}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return out
    for entry in entries:
        if not entry.startswith("index"):
            continue
        try:
            with open(f"{root}/{entry}/type", encoding="utf-8") as f:
                kind = f.read().strip()
            with open(f"{root}/{entry}/level", encoding="utf-8") as f:
                level = int(f.read().strip())
            with open(f"{root}/{entry}/size", encoding="utf-8") as f:
                size = _size_text(f.read())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified"):
            out[level] = max(out.get(level, 0), size)
    return out
