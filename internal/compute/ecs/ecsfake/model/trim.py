#!/usr/bin/env python3
"""Trim botocore's ECS and CloudWatch Logs service models to the request
shapes of the operations agora calls, for ecsfake's request checks.

Source: Debian's python3-botocore (apt-get install python3-botocore), the
service models AWS ships for its SDKs. Run from this directory:

    python3 trim.py

It writes ecs.json and logs.json: each operation's input shape and every
shape it reaches, with type, members, required, enum, min, max and pattern;
the documentation text is dropped (the fake states the rules it takes from
it in Go, with the sentence they come from).
"""
import glob, gzip, json, os

DATA = "/usr/lib/python3/dist-packages/botocore/data"
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
    import subprocess
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-botocore"],
                          capture_output=True, text=True, check=True).stdout


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
        "source": f"Debian python3-botocore {version()}, data/{service}/{m['metadata']['apiVersion']}/service-2.json, trimmed by trim.py",
        "metadata": {k: m["metadata"].get(k) for k in ("apiVersion", "targetPrefix", "uid")},
        "operations": out_ops,
        "shapes": dict(sorted(shapes.items())),
    }
    with open(f"{service}.json", "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
