"""Output for the tests: rank 0 prints every rank's line (one writer, no interleaving)."""


def print_from_rank0(comm, line: str) -> None:
    """Gathers ``line`` from every rank; rank 0 prints them in rank order."""
    lines = comm.gather(line, root=0)
    if comm.Get_rank() == 0:
        print("\n".join(lines), flush=True)
