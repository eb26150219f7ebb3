"""Prints per-class instance counts of a YOLO-seg label folder (sanity check before training)."""
import collections
import pathlib
import sys

counts = collections.Counter()
for f in pathlib.Path(sys.argv[1]).glob("*.txt"):
    for line in f.read_text().splitlines():
        counts[int(line.split()[0])] += 1
print(dict(sorted(counts.items())))
