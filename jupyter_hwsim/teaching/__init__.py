"""The workshop's exercise checkers: they check a student's answer by simulating it, and give hints."""
