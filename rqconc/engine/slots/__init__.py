"""The idle/busy table the supervisor shares with its children, and `--slots K`.

Two words, two things:
- a *cell* is one entry of the table (`CellTable`, table.py): a child's state, claim, item
  and deadline, which the supervisor reads and the child writes. A child has one cell;
- a *slot* is one of the K threads of a process child started with `--slots K` (host.py):
  each slot runs the ordinary child loop in a cell of its own, so such a child has K cells
  (child * K ... child * K + K - 1) and the supervisor sees each slot as it sees a child.

Modules:
- memory.py: where the cells live (shared memory for process backends), one lock per cell;
- child_side.py: what a child writes into its own cell (under its generation);
- table.py: the supervisor's side, and the races between the two;
- host.py: the main thread of a child with several slots (starts, replaces, recycles them);
- takes.py: the idle slots of one child share one take step;
- combiner.py: calls of several threads sent as one batch (used by takes.py, and by the
  worker's combined completions).
"""
