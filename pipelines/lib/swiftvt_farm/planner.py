"""swiftvt-farm's plan and splice steps, run by the client: the command and the planner's answer
(the contract in docs/farm.md)."""
import subprocess

from .errors import JobError


def run_tool(command, what):
    """swiftvt-farm's stdout; JobError with the line that says what was wrong. That is the line
    beginning "swiftvt-farm: " (docs/farm.md), not the last: a usage error (exit 2) prints the
    usage after it."""
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        lines = [line for line in completed.stderr.splitlines() if line.strip()]
        reason = next((line for line in lines if line.startswith("swiftvt-farm: ")),
                      lines[-1] if lines else "no message")
        raise JobError(f"{what} failed (exit {completed.returncode}): {reason}")
    return completed.stdout


def parse_plan(text):
    """The planner's stdout (contract): chunks to re-encode with their ranges, totals, decision."""
    chunks, totals, decision = {}, {}, None
    current = None
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "chunk":
            # "chunk INDEX FRAMES PATH": the path last, whole (it may hold spaces).
            _, index, frames, plan_file = line.split(" ", 3)
            current = int(index)
            chunks[current] = {"plan_file": plan_file, "frames": int(frames), "ranges": []}
        elif words[0] == "range":
            chunks[int(words[1])]["ranges"].append([int(words[2]), int(words[3])])
        elif words[0] == "totals":
            totals = {k: float(v) for k, v in (item.split("=", 1) for item in words[1:])}
        elif words[0] == "decision":
            decision = (words[1], " ".join(words[2:]))
    if decision is None:
        raise JobError(f"swiftvt-farm plan printed no decision: {text.strip()!r}")
    return chunks, totals, decision
