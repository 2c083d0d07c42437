"""The energy meter's reports (power.py): one report from every rank's readings, each GPU
and each host's CPU packages counted once (:func:`combine`), and the run summary's
``energy_use`` section and line (:func:`energy_per_step`, :func:`format_energy`).
"""

from __future__ import annotations


# Over ranks -------------------------------------------------------------------------------
def _identity(part: str, record: dict):
    if part == "gpu":
        return tuple((d["host"], d["uuid"]) for d in record["devices"])
    return record["host"]


def combine(records: list[dict]) -> dict:
    """One report from every rank's ``{"gpu": ..., "cpu": ...}`` (rank order): each GPU (host,
    UUID) and each host's packages counted once, by its lowest rank."""
    report = {}
    for part in ("gpu", "cpu"):
        counted, reasons = {}, {}
        for rank, record in enumerate(records):
            entry = record[part]
            if not entry["available"]:
                reasons[rank] = entry["reason"]
                continue
            key = _identity(part, entry)
            if key in counted:
                counted[key]["ranks"].append(rank)
            else:
                counted[key] = {"entry": entry, "ranks": [rank]}
        if not counted:
            distinct = list(dict.fromkeys(reasons.values()))
            reason = distinct[0] if len(distinct) == 1 else "; ".join(f"rank {r}: {t}" for r, t in reasons.items())
            report[part] = {"available": False, "reason": reason}
            continue
        entries = [c["entry"] for c in counted.values()]
        result = {
            "available": True,
            "joules": sum(e["joules"] for e in entries),
            # each meter's own mean power, summed: the windows of the ranks differ by microseconds
            "mean_watts": sum(e["joules"] / e["seconds"] for e in entries if e["seconds"] > 0),
            "seconds": max(e["seconds"] for e in entries),
            "method": ", ".join(dict.fromkeys(e["method"] for e in entries)),
            "samples": sum(e["samples"] for e in entries),
        }
        if part == "gpu":
            result["devices"] = [{**d, "ranks": c["ranks"]} for c in counted.values() for d in c["entry"]["devices"]]
            notes = {e["counter"] for e in entries if "counter" in e}
            if notes:
                result["counter"] = "; ".join(sorted(notes))
                result["sample_seconds"] = entries[0].get("sample_seconds")
        else:
            result["hosts"] = [{"host": c["entry"]["host"], "packages": c["entry"]["packages"], "ranks": c["ranks"]}
                               for c in counted.values()]
        if reasons:  # measured on some ranks only: the total leaves those out
            result["missing"] = {f"rank {r}": t for r, t in reasons.items()}
        report[part] = result
    return report


# In a summary -----------------------------------------------------------------------------
def energy_per_step(report: dict, steps: int, points: int) -> dict:
    """The summary's ``energy_use``: totals per step and per point-step of what was measured."""
    section = {"seconds": max((report[p]["seconds"] for p in ("gpu", "cpu") if report[p]["available"]),
                              default=None), "steps": steps}
    counted = [p for p in ("gpu", "cpu") if report[p]["available"]]
    for part in ("gpu", "cpu"):
        entry = report[part]
        if entry["available"]:
            section[f"{part}_joules"] = entry["joules"]
            section[f"{part}_mean_watts"] = entry["mean_watts"]
            section[f"{part}_method"] = entry["method"]
        else:
            section[f"{part}_reason"] = entry["reason"]
    joules = sum(report[p]["joules"] for p in counted)
    section["counted"] = counted
    section["joules_per_step"] = joules / steps if counted and steps > 0 else None
    section["joules_per_point_step"] = joules / (steps * points) if counted and steps > 0 and points > 0 else None
    section["mean_watts"] = sum(report[p]["mean_watts"] for p in counted) if counted else None
    section["gpu"], section["cpu"] = report["gpu"], report["cpu"]
    return section


def brief_reason(reason: str, width: int = 80) -> str:
    """A reason cut for the summary table: a long closing parenthetical dropped and, if it is
    still long, everything after its first colon (summary.json keeps the whole text)."""
    head, bracket, tail = reason.rpartition(" (")
    if bracket and reason.endswith(")") and len(tail) > 30:
        reason = head
    return reason if len(reason) <= width else reason.split(": ", 1)[0]


def format_energy(section: dict, brief: bool = False) -> str:
    """One line: joules per step and mean watts of what was measured, and why the rest was not
    (with ``brief``, each reason cut by :func:`brief_reason`)."""
    parts = []
    if section.get("joules_per_step") is not None:
        what = " + ".join(p.upper() for p in section["counted"])
        parts.append(f"{section['joules_per_step']:.4g} J/step, {section['mean_watts']:.4g} W ({what})")
    for part in ("gpu", "cpu"):
        if f"{part}_reason" in section:
            reason = section[f"{part}_reason"]
            parts.append(f"{part.upper()} not measured: {brief_reason(reason) if brief else reason}")
    return "; ".join(parts)
