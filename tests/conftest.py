import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
