"""The job's one kind of failure the user sees."""


class JobError(Exception):
    """One clear line for the user; the job exits 1."""
