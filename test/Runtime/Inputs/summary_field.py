#!/usr/bin/env python3
"""summary_field.py SUMMARY.json KEY...: prints "KEY VALUE" for each key of a run's
JSON summary, the value as compact JSON with sorted keys (numbers as the run wrote them)."""
import json
import sys

summary = json.load(open(sys.argv[1]))
for key in sys.argv[2:]:
    print(key, json.dumps(summary[key], sort_keys=key == "config"))
