import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Markers by where a test lives (see pyproject.toml); the README's test command runs them all.
_BY_PATH = {"browser": ("browser",), "test_example_notebooks.py": ("slow",), "test_labextension.py": ("slow",)}


def pytest_collection_modifyitems(items):
    import pytest

    for item in items:
        parts = item.path.relative_to(ROOT / "tests").parts
        for key, marks in _BY_PATH.items():
            if key in parts:
                for mark in marks:
                    item.add_marker(getattr(pytest.mark, mark))
