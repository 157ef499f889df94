"""fio job rendering and fio output parsing: pure functions."""
