"""``EventList.table``: torch's text table of profiler events, column for column."""

from __future__ import annotations

import math
from typing import Any

from ._format import DeviceType, _format_memory, _format_time, _format_time_share

_DEFAULT_COLUMN_WIDTH = 12
_SPACING = 2


def _override_time_unit(time_us: float, default_str: str, time_unit: str | None) -> str:
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return default_str


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _scale_flops(flops: int) -> tuple[float, str]:
    names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    log_flops = max(0, min(math.log10(flops) / 3, float(len(names) - 1)))
    return pow(10, (math.floor(log_flops) * -3.0)), names[int(log_flops)]


def _headers(has_overload: bool, has_device_time: bool, has_device_mem: bool,
             profile_memory: bool, use_device: str | None) -> list[str]:
    headers = ["Name"] + (["Overload Name"] if has_overload else [])
    headers += ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    device = use_device.upper() if use_device is not None else "None"
    if has_device_time:
        headers += [f"Self {device}", f"Self {device} %", f"{device} total",
                    f"{device} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{device} Mem", f"Self {device} Mem"]
    headers.append("# of Calls")
    return headers


def build_table(events: Any, sort_by: str | None = None, header: str | None = None,
                row_limit: int = 100, max_src_column_width: int = 75,
                max_name_column_width: int = 55, max_shapes_column_width: int = 80,
                with_flops: bool = False, profile_memory: bool = False,
                top_level_events_only: bool = False, time_unit: str | None = None) -> str:
    """A summary table of ``events`` (FunctionEvent or FunctionEventAvg), as torch prints it."""
    if len(events) == 0:
        return ""
    has_device_time = any(evt.self_device_time_total > 0 for evt in events)
    has_device_mem = any(evt.self_device_memory_usage > 0 for evt in events)
    use_device = events[0].use_device
    has_shapes = any(evt.input_shapes is not None and len(evt.input_shapes) > 0
                     for evt in events)
    has_overload = any(evt.overload_name is not None and len(evt.overload_name) > 0
                       for evt in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        events = sorted(events, key=lambda evt: getattr(evt, attr), reverse=True)
    name_width = max(len(evt.key) for evt in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(evt.input_shapes)) for evt in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [evt.stack for evt in events if evt.stack is not None and len(evt.stack) > 0]
    has_stack = len(stacks) > 0
    src_width = 0
    if has_stack:
        src_width = max(max(len(entry) for entry in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = _headers(has_overload, has_device_time, has_device_mem, profile_memory,
                       use_device)
    widths: list[tuple[int, str]] = [(name_width, ">")]
    if has_overload:
        widths.append((name_width, ">"))
    widths += [(_DEFAULT_COLUMN_WIDTH, ">")] * (len(headers) - 1 - has_overload)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append((shapes_width, ">"))
    flops_scale = 1.0
    if with_flops:
        raw = [evt.flops for evt in events if evt.flops > 0]
        if raw:
            flops_scale, flops_header = _scale_flops(min(raw))
            headers.append(f"Total {flops_header}")
            widths.append((_DEFAULT_COLUMN_WIDTH, ">"))
        else:
            with_flops = False
    if has_stack:
        headers.append("Source Location")
        widths.append((src_width, "<"))
    row_format = "".join("{: " + d + str(w) + "}" + " " * _SPACING for w, d in widths)
    header_sep = "".join("-" * w + " " * _SPACING for w, _ in widths)
    line_length = sum(w + _SPACING for w, _ in widths) - _SPACING

    total_self_cpu = 0.0
    for evt in events:
        total_self_cpu += evt.self_cpu_time_total
    total_self_device = sum(evt.self_device_time_total for evt in events
                            if evt.device_type == DeviceType.CPU and evt.is_legacy)

    lines: list[str] = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [header_sep, row_format.format(*headers), header_sep]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        name = evt.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        evt.self_cpu_percent = _format_time_share(evt.self_cpu_time_total, total_self_cpu)
        evt.total_cpu_percent = _format_time_share(evt.cpu_time_total, total_self_cpu) \
            if not evt.is_async else 0
        row = [name]
        if has_overload:
            overload = evt.overload_name
            if max_name_column_width is not None \
                    and len(overload) >= max_name_column_width - 3:
                overload = overload[:max_name_column_width - 3] + "..."
            row.append(overload)
        row += [evt.self_cpu_percent,
                _override_time_unit(evt.self_cpu_time_total, evt.self_cpu_time_total_str,
                                    time_unit),
                evt.total_cpu_percent,
                _override_time_unit(evt.cpu_time_total, evt.cpu_time_total_str, time_unit),
                _override_time_unit(evt.cpu_time, evt.cpu_time_str, time_unit)]
        if has_device_time:
            evt.total_device_percent = _format_time_share(evt.self_device_time_total,
                                                          total_self_device)
            row += [_override_time_unit(evt.self_device_time_total,
                                        evt.self_device_time_total_str, time_unit),
                    evt.total_device_percent,
                    _override_time_unit(evt.device_time_total, evt.device_time_total_str,
                                        time_unit),
                    _override_time_unit(evt.device_time, evt.device_time_str, time_unit)]
        if profile_memory:
            row += [_format_memory(evt.cpu_memory_usage),
                    _format_memory(evt.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [_format_memory(evt.device_memory_usage),
                        _format_memory(evt.self_device_memory_usage)]
        row.append(evt.count)
        if has_shapes:
            row.append(str(evt.input_shapes)[:shapes_width])
        if with_flops:
            row.append("--" if evt.flops <= 0 else f"{evt.flops * flops_scale:8.3f}")
        if has_stack:
            row.append(_trim_path(evt.stack[0], src_width) if len(evt.stack) > 0 else "")
        lines.append(row_format.format(*row))
        if has_stack:
            empty = [""] * (len(headers) - 1)
            for entry in evt.stack[1:]:
                lines.append(row_format.format(*(empty + [_trim_path(entry, src_width)])))
            lines.append(row_format.format(*(empty + [""])))
    lines.append(header_sep)
    lines.append("Self CPU time total: " + _override_time_unit(
        total_self_cpu, _format_time(total_self_cpu), time_unit))
    if has_device_time:
        device = use_device.upper() if use_device is not None else "None"
        lines.append(f"Self {device} time total: " + _override_time_unit(
            total_self_device, _format_time(total_self_device), time_unit))
    return "".join(line + "\n" for line in lines)
