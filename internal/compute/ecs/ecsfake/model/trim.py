#!/usr/bin/env python3
"""Trim botocore's ECS and CloudWatch Logs service models to the request
shapes of the operations agora calls, for ecsfake's request checks.

Source: botocore's data (the service models AWS ships for its SDKs), from
the botocore Python imports: PyPI's (pip install botocore) or Debian's
python3-botocore. Debian bookworm's 1.29.27 (2022) predates RunTask's
clientToken, which agora sends, so the committed files come from PyPI's
botocore 1.43.11. Run from this directory:

    python3 trim.py

It writes ecs.json and logs.json: each operation's input shape and every
shape it reaches, with type, members, required, enum, min, max and pattern;
the documentation text is dropped (the fake states the rules it takes from
it in Go, with the sentence they come from).
"""
import glob, gzip, json, os

import botocore

DATA = os.path.join(os.path.dirname(botocore.__file__), "data")
OPS = {
    "ecs": ["RegisterTaskDefinition", "DescribeTaskDefinition", "DeregisterTaskDefinition",
            "RunTask", "DescribeTasks", "ListTasks", "StopTask", "TagResource", "UntagResource"],
    "logs": ["GetLogEvents"],
}
KEEP = ("type", "members", "required", "enum", "min", "max", "pattern", "member", "key", "value")


def load(service):
    (path,) = glob.glob(f"{DATA}/{service}/*/service-2.json*")
    with (gzip.open(path) if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def version():
    return botocore.__version__


for service, ops in OPS.items():
    m = load(service)
    shapes, todo = {}, []
    out_ops = {}
    for op in ops:
        inp = m["operations"][op]["input"]["shape"]
        out_ops[op] = inp
        todo.append(inp)
    while todo:
        name = todo.pop()
        if name in shapes:
            continue
        src = m["shapes"][name]
        sh = {k: v for k, v in src.items() if k in KEEP}
        if "members" in sh:
            sh["members"] = {k: v["shape"] for k, v in sh["members"].items()}
            todo.extend(sh["members"].values())
        for k in ("member", "key", "value"):
            if k in sh:
                sh[k] = sh[k]["shape"]
                todo.append(sh[k])
        shapes[name] = sh
    doc = {
        "source": f"botocore {version()}, data/{service}/{m['metadata']['apiVersion']}/service-2.json, trimmed by trim.py",
        "metadata": {k: m["metadata"].get(k) for k in ("apiVersion", "targetPrefix", "uid")},
        "operations": out_ops,
        "shapes": dict(sorted(shapes.items())),
    }
    with open(f"{service}.json", "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
