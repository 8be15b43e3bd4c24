#!/usr/bin/env python3
"""Regenerate tests/data/waldur/site1 (export + current-state snapshot). Deterministic.

Every export object has the shape of the Waldur API (waldur-api-client 8.1.2 models:
`Resource`, `ProjectUser`, `OfferingUser`): uuids as 32 hex digits, urls, team entries with
`expiration_time` and `email`. tests/interop/check_shapes.py parses them with those models.

The export is "now"; the snapshot is the cluster as the last sync left it ("before"): project
materials still under customer tartu, the paused/downscaled resources still active, the
terminated resource still present."""
import hashlib, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
SITE = os.path.join(HERE, "site1")
CLUSTER = "rocket"

def uid(s):
    return hashlib.md5(s.encode()).hexdigest()

customers = {
    "univ-tartu": "University of Tartu",
    "taltech": "Tallinn University of Technology",
    "kbfi": "National Institute of Chemical Physics",
}
# project slug -> (customer now, customer before, name)
projects = {
    "genomics": ("univ-tartu", "univ-tartu", "Genomics"),
    "physics": ("univ-tartu", "univ-tartu", "Physics"),
    "materials": ("taltech", "univ-tartu", "Materials science"),  # moved
    "robotics": ("taltech", "taltech", "Robotics"),
    "chemistry": ("kbfi", "kbfi", "Computational chemistry"),
    "astro": ("kbfi", "kbfi", "Astrophysics"),
}
USERS = [
    "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
    "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "xena",
    "yara", "zoe", "adam", "bella", "chen", "dora", "emil", "fiona", "gus", "hana",
    "igor", "jana", "karl", "lena", "mart", "nora", "oskar", "piret", "raul", "siim",
]
# slug, project, state, backend_id?, paused, downscaled, restricted, limits, users(indexes), attrs
R = []
def res(slug, project, state="OK", backend_id="default", paused=False, downscaled=False,
        restricted=False, limits=None, users=(), attrs=None, name=None):
    R.append(dict(slug=slug, project=project, state=state, backend_id=backend_id, paused=paused,
                  downscaled=downscaled, restricted=restricted, limits=limits or {}, users=list(users),
                  attrs=attrs or {}, name=name or slug.replace("-", " ").title()))

res("genome-2026", "genomics", limits={"cpu": 100, "mem": 20, "gres/gpu": 20}, users=[0, 1, 2],
    attrs={"qos": "gpu_long", "partition": "gpu"}, name="Genome assembly 2026")
res("assembly", "genomics", paused=True, limits={"cpu": 10}, users=[1, 3])                    # paused
res("rnaseq", "genomics", state="Erred", limits={"cpu": 5}, users=[4, 5])
res("lattice", "physics", limits={"cpu": 50}, users=[6, 7, 8], attrs={"partition": "cpu,gpu"})
res("plasma", "physics", downscaled=True, limits={"cpu": 30}, users=[8, 9])                    # downscaled
res("qcd", "physics", state="Updating", backend_id=None, limits={"cpu": 200}, users=[10, 11])
res("alloys", "materials", limits={"cpu": 40, "storage": 100}, users=[12, 13, 14])             # moved project
res("polymers", "materials", backend_id=None, limits={"cpu": 15}, users=[14, 15])
res("swarm", "robotics", limits={"cpu": 25, "gres/gpu": 4}, users=[16, 17])
res("legacy", "robotics", state="Terminated", limits={"cpu": 5}, users=[18])                  # terminated
res("vision", "robotics", restricted=True, limits={"cpu": 12}, users=[19, 20])                 # restricted
res("dft", "chemistry", limits={"cpu": 80, "mem": 40}, users=[21, 22, 23])
res("md-sim", "chemistry", limits={"cpu": 60}, users=[23, 24, 25])
res("docking", "chemistry", state="Terminating", limits={"cpu": 8}, users=[26])
res("galaxies", "astro", limits={"cpu": 90, "gres/gpu": 10}, users=[27, 28, 29])
res("pulsars", "astro", backend_id=None, limits={"cpu": 35}, users=[30, 31])
res("cosmo", "astro", state="Creating", limits={"cpu": 20}, users=[32])
res("spectra", "astro", limits={"cpu": 10}, users=[33, 34, 35])
res("enzymes", "chemistry", limits={"cpu": 45}, users=[36, 37])
res("sensors", "robotics", limits={"cpu": 22}, users=[38, 39, 0])
# a resource without slug or backend_id (skipped with a warning)
res(None, "astro", backend_id=None, limits={"cpu": 1}, users=[5], name="Unnamed trial")

EXTRA_USERS = {"ghost": "Deleted", "leaver": "Deleting", "newbie": "Requested", "linking": "Pending account linking",
               "broken": "Error creating"}
API = "https://waldur.example.org/api"

def backend_id(r):
    if r["backend_id"] == "default":
        return "hpc_a_" + r["slug"]
    return r["backend_id"]

def resource_json(i, r, now=True):
    p = r["project"]
    cust = projects[p][0 if now else 1]
    key = r["slug"] or f"unnamed-{i}"
    u = uid("res-" + key)
    return {
        "url": f"{API}/marketplace-provider-resources/{u}/",
        "uuid": u, "name": r["name"], "slug": r["slug"] or "", "backend_id": backend_id(r) or "",
        "state": r["state"], "resource_type": "SLURM.Allocation",
        "project": f"{API}/projects/{uid('proj-' + p)}/", "project_uuid": uid("proj-" + p), "project_slug": p,
        "project_name": projects[p][2], "project_description": "",
        "customer_uuid": uid("cust-" + cust), "customer_slug": cust, "customer_name": customers[cust],
        "restrict_member_access": r["restricted"],
        "paused": r["paused"], "downscaled": r["downscaled"], "limits": r["limits"],
        "attributes": r["attrs"], "offering_backend_id": CLUSTER, "end_date": "2026-12-31",
        "offering": f"{API}/marketplace-provider-offerings/{uid('offering')}/",
        "offering_uuid": uid("offering"), "offering_name": "Rocket HPC", "offering_type": "Marketplace.Slurm",
        "created": "2025-01-01T00:00:00Z", "modified": "2026-12-01T00:00:00Z", "some_future_field": {"x": 1},
    }

def write(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")

def main():
    exp = os.path.join(SITE, "export")
    res_json = [resource_json(i, r) for i, r in enumerate(R)]
    write(os.path.join(exp, "resources-1.json"), res_json[:12])
    write(os.path.join(exp, "resources-2.json"), res_json[12:])
    for i, r in enumerate(R):
        members = []
        def member(name, full, ou_name, state):
            m = uid("user-" + name)
            return {"url": f"{API}/users/{m}/", "uuid": m, "username": name + "@example.org", "full_name": full,
                    "role": "PROJECT.MEMBER", "expiration_time": None, "email": name + "@example.org",
                    "offering_user_username": ou_name, "offering_user_state": state}
        for j in r["users"]:
            u = USERS[j]
            members.append(member(u, u.title(), u, "OK"))
        if r["slug"] == "genome-2026":
            for u, st in EXTRA_USERS.items():
                members.append(member(u, u, u, st))
            members.append(member("nobody", "No Body", None, None))
        write(os.path.join(exp, f"team-{res_json[i]['uuid']}.json"), members)
    def ou_json(u, st):
        o = uid("ou-" + (u or "nobody"))
        return {"url": f"{API}/marketplace-offering-users/{o}/", "uuid": o, "user_uuid": uid("user-" + (u or "nobody")),
                "user_username": (u or "nobody") + "@example.org", "username": u, "state": st,
                "offering_uuid": uid("offering"), "offering_name": "Rocket HPC", "created": "2025-01-01T00:00:00Z",
                "is_restricted": False}
    ou = [ou_json(u, "OK") for u in USERS]
    ou += [ou_json(u, st) for u, st in EXTRA_USERS.items()]
    ou.append(ou_json(None, "Requested"))
    write(os.path.join(exp, "offering-users-1.json"), ou[:25])
    write(os.path.join(exp, "offering-users-2.json"), ou[25:])

    # The snapshot: the tree as the last sync (nested, policy common, QoS swap) left it.
    factors = {"cpu": 60000, "mem": 61440, "gres/gpu": 60}
    assocs = [f"{CLUSTER}|root||||1|||||||||||normal|", f"{CLUSTER}|root|root|||1||||||||||||"]
    descr = {"root": "default root account", "hpc_customers": "waldur customers", "hpc_default": "waldur default",
             "local_lab": "local lab"}
    org = {"root": "root", "hpc_customers": "hpc", "hpc_default": "hpc", "local_lab": "lab"}
    assocs.append(f"{CLUSTER}|hpc_customers|||root|1||||||||||||")
    assocs.append(f"{CLUSTER}|hpc_default|||root|1||||||||||||")
    assocs.append(f"{CLUSTER}|local_lab|||root|1||||||||||||")
    assocs.append(f"{CLUSTER}|local_lab|walter|||1||||||||||||")
    defaults = {"root": "root"}
    members = set()
    for c, cname in customers.items():
        a = "hpc_c_" + c
        assocs.append(f"{CLUSTER}|{a}|||hpc_customers|1||||||||||||")
        descr[a], org[a] = cname.lower(), a
    for p, (_, before, pname) in projects.items():
        a = "hpc_p_" + p
        assocs.append(f"{CLUSTER}|{a}|||hpc_c_{before}|1||||||||||||")
        descr[a], org[a] = pname.lower(), a
    for r in R:
        if r["slug"] is None or r["state"] in ("Creating",):
            continue
        a = (backend_id(r) or "hpc_a_" + r["slug"]).lower()
        tm = ",".join(f"{k}={int(v * factors[k])}" for k, v in sorted(r["limits"].items()) if k in factors)
        # As the agent leaves it: no DefaultQOS; QoS inherited (`normal` from root), or explicit
        # `normal` after a restore; genome-2026 was given gpu_long by hand.
        qos = {"genome-2026": "gpu_long,normal", "lattice": "normal", "swarm": "normal"}.get(r["slug"], "")
        assocs.append(f"{CLUSTER}|{a}|||hpc_p_{r['project']}|1||||{tm}|||||||{qos}|")
        descr[a], org[a] = r["name"].lower(), "hpc_p_" + r["project"]
        if r["restricted"]:
            continue
        parts = [None]
        for j in r["users"]:
            u = USERS[j]
            assocs.append(f"{CLUSTER}|{a}|{u}|||parent||||||||||||")
            members.add(u)
    for u in sorted(members):
        assocs.append(f"{CLUSTER}|hpc_default|{u}|||parent||||||||||||")
        defaults[u] = "hpc_default"
    defaults["walter"] = "local_lab"
    st = os.path.join(SITE, "state")
    os.makedirs(st, exist_ok=True)
    def lines(path, rows):
        with open(os.path.join(st, path), "w") as f:
            f.write("".join(r + "\n" for r in rows))
    lines("assocs.txt", assocs)
    lines("accounts-descr.txt", [f"{k}|{v}" for k, v in sorted(descr.items())])
    lines("accounts-org.txt", [f"{k}|{v}" for k, v in sorted(org.items())])
    lines("clusters.txt", [CLUSTER])
    lines("defaults.txt", [f"{CLUSTER}|{u}|{a}" for u, a in sorted(defaults.items())])
    lines("qos.txt", ["normal||||||Normal QOS default", "paused||||||paused", "downscaled||||||downscaled",
                      "gpu_long||||||gpu_long"])
    src = os.path.join(HERE, "..", "..", "..", "examples", "site-a", "state", "manifest.json")
    with open(src) as f:
        m = json.load(f)
    m["created"] = "2026-12-01T00:00:00Z"
    # the size and SHA-256 of each file, as `slurmplan dump` records them
    for name in m.get("files", {}):
        with open(os.path.join(st, name), "rb") as f:
            data = f.read()
        m["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    with open(os.path.join(st, "manifest.json"), "w") as f:
        json.dump(m, f, indent=2)
        f.write("\n")

main()
