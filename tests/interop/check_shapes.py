#!/usr/bin/env python3
"""Check that Waldur export files have the API's own shapes: parse every object with the
waldur-api-client models (`Resource`, `ProjectUser`, `OfferingUser`) and fail on anything they
reject or read back differently. Run with the interop venv's python:

    tests/interop/check_shapes.py DIR [DIR ...]

Must not: write files, use the network."""
import glob
import json
import os
import sys

from waldur_api_client.models.offering_user import OfferingUser
from waldur_api_client.models.project_user import ProjectUser
from waldur_api_client.models.resource import Resource


def check(model, path):
    with open(path) as f:
        items = json.load(f)
    if not isinstance(items, list):
        raise SystemExit(f"{path}: not a list")
    for i, item in enumerate(items):
        try:
            back = model.from_dict(item).to_dict()
        except Exception as e:  # the models raise KeyError/ValueError/TypeError
            raise SystemExit(f"{path}: item {i} does not parse as {model.__name__}: {e!r}")
        for key in ("uuid", "username", "offering_user_username", "state", "backend_id", "limits"):
            if key in item and str(back.get(key)).replace("-", "") != str(item[key]).replace("-", ""):
                raise SystemExit(f"{path}: item {i}: `{key}` reads back as {back.get(key)!r}, not {item[key]!r}")
    return len(items)


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: check_shapes.py DIR [DIR ...]")
    for d in sys.argv[1:]:
        n = 0
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            name = os.path.basename(path)
            if name.startswith("resources"):
                n += check(Resource, path)
            elif name.startswith("team-"):
                n += check(ProjectUser, path)
            elif name.startswith("offering-users"):
                n += check(OfferingUser, path)
        if n == 0:
            raise SystemExit(f"{d}: no export objects")
        print(f"{d}: {n} objects parse with the waldur-api-client models")


main()
